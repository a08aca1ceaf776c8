import Foundation
import GuestModeKit

/// Parses one archive row: the flat JSON object `RowEncoder` writes, whose
/// values are only null, numbers and strings. Hand-written to match the
/// encoder: it runs once per row of `backup verify --full` and import, where a
/// `JSONDecoder` per row (and a thrown error per text cell while trying a
/// number first) cost most of the time.
///
/// Strict: anything but one object of unique keys with null, number or
/// string values (nested values, booleans, bad escapes, lone surrogates,
/// control characters or invalid UTF-8 in strings, trailing bytes) is
/// refused with nil. A number without fraction or exponent that fits in 64
/// bits is an integer; any other number is a real, as the generic decoder
/// read them (an integral real such as `2.0` is an integer, as before).
enum RowDecoder {
    /// The row on `line`. `template` is the columns of the row before it in
    /// the same table: when the line lists the same names in the same order,
    /// as every exported row does, the row shares that array instead of
    /// making its own.
    static func decode(_ line: UnsafeBufferPointer<UInt8>, like template: [String] = []) -> BackupRow? {
        var parser = Parser(bytes: line)
        return parser.object(like: template)
    }

    static func decode(_ line: [UInt8], like template: [String] = []) -> BackupRow? {
        line.withUnsafeBufferPointer { decode($0, like: template) }
    }

    private struct Parser {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0
        var scratch: [UInt8] = []

        init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        mutating func skipSpace() {
            while index < bytes.count {
                switch bytes[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        mutating func object(like template: [String]) -> BackupRow? {
            skipSpace()
            guard take(UInt8(ascii: "{")) else { return nil }
            // The template is passed to the keys, not kept in them: a copy was a retain and a release a row.
            var keys = Keys()
            var values: [CellValue] = []
            values.reserveCapacity(max(template.count, 8))
            skipSpace()
            if take(UInt8(ascii: "}")) { return end(keys, values, template) }
            while true {
                skipSpace()
                if keys.expectsTemplate(template), takeKey(spelled: template[keys.matched]) {
                    keys.matched += 1
                } else {
                    guard let key = string(), keys.add(key, template: template) else { return nil }
                }
                skipSpace()
                guard take(UInt8(ascii: ":")) else { return nil }
                skipSpace()
                guard let value = value() else { return nil }
                values.append(value)
                skipSpace()
                if take(UInt8(ascii: ",")) { continue }
                guard take(UInt8(ascii: "}")) else { return nil }
                return end(keys, values, template)
            }
        }

        mutating func end(_ keys: Keys, _ values: [CellValue], _ template: [String]) -> BackupRow? {
            skipSpace()
            return index == bytes.count ? BackupRow(columns: keys.columns(template: template), values: values) : nil
        }

        /// A row's keys: the template's for as long as they match it, then a
        /// list of the row's own, which refuses a name it already holds.
        struct Keys {
            var matched = 0
            var diverged = false
            var own: [String] = []
            /// Past a few dozen keys (a hostile row), the names are also kept hashed, so each is not compared with all.
            var hashed: Set<String> = []

            /// Whether the row's keys still match `template` and it has a next name, `template[matched]`.
            func expectsTemplate(_ template: [String]) -> Bool { !diverged && matched < template.count }

            /// Adds `key`; false when the row has it already.
            mutating func add(_ key: String, template: [String]) -> Bool {
                if !diverged {
                    // The template's names are unique, so a name at its own place is not a repeat.
                    if matched < template.count, template[matched] == key {
                        matched += 1
                        return true
                    }
                    diverged = true
                    own = Array(template[..<matched])
                }
                if own.count >= 32 {
                    if hashed.isEmpty { hashed = Set(own) }
                    guard hashed.insert(key).inserted else { return false }
                } else if own.contains(key) {
                    return false
                }
                own.append(key)
                return true
            }

            func columns(template: [String]) -> [String] {
                diverged ? own : matched == template.count ? template : Array(template[..<matched])
            }
        }

        /// Takes the key `"name"` when the line spells it with exactly
        /// `name`'s bytes, without making a string; otherwise takes nothing.
        /// A name holding a quote, a backslash or a control character is
        /// spelled with escapes, so it is never matched this way.
        mutating func takeKey(spelled name: String) -> Bool {
            name.withUTF8Bytes { expected in
                let end = index + expected.count + 2
                guard end <= bytes.count, bytes[index] == UInt8(ascii: "\""), bytes[end - 1] == UInt8(ascii: "\""),
                    expected.isEmpty
                        || memcmp(bytes.baseAddress! + index + 1, expected.baseAddress!, expected.count) == 0
                else { return false }
                // Compared as a run first: nearly every key matches, and this is checked only then.
                guard
                    !expected.contains(where: {
                        $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20
                    })
                else { return false }
                index = end
                return true
            }
        }

        mutating func value() -> CellValue? {
            guard index < bytes.count else { return nil }
            switch bytes[index] {
            case UInt8(ascii: "\""):
                return string().map(CellValue.text)
            case UInt8(ascii: "n"):
                guard bytes.count - index >= 4, bytes[index + 1] == UInt8(ascii: "u"),
                    bytes[index + 2] == UInt8(ascii: "l"), bytes[index + 3] == UInt8(ascii: "l")
                else { return nil }
                index += 4
                return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                return number()
            default:
                return nil
            }
        }

        /// The JSON number grammar, exactly.
        mutating func number() -> CellValue? {
            let start = index
            var integral = true
            _ = take(UInt8(ascii: "-"))
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                guard digits() > 0 else { return nil }
            }
            if take(UInt8(ascii: ".")) {
                integral = false
                guard digits() > 0 else { return nil }
            }
            if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
                integral = false
                index += 1
                if !take(UInt8(ascii: "+")) { _ = take(UInt8(ascii: "-")) }
                guard digits() > 0 else { return nil }
            }
            if integral, let value = integer(start..<index) { return .integer(value) }
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            guard let value = Double(text), value.isFinite else { return nil }
            if !integral, value.rounded(.towardZero) == value, value >= -0x1p63, value < 0x1p63 {
                return .integer(Int64(value))
            }
            return .real(value)
        }

        /// The integer the JSON number `range` spells (digits, after an optional minus), read in place; nil when
        /// it does not fit in 64 bits. Summed as a negative number, so `Int64.min` fits too.
        func integer(_ range: Range<Int>) -> Int64? {
            let negative = bytes[range.lowerBound] == UInt8(ascii: "-")
            var value: Int64 = 0
            for index in (negative ? range.lowerBound + 1 : range.lowerBound)..<range.upperBound {
                let (times10, overflowed) = value.multipliedReportingOverflow(by: 10)
                let (next, overflowedAgain) = times10.subtractingReportingOverflow(Int64(bytes[index] &- 48))
                guard !overflowed, !overflowedAgain else { return nil }
                value = next
            }
            if negative { return value }
            return value == .min ? nil : -value
        }

        mutating func digits() -> Int {
            let start = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                index += 1
            }
            return index - start
        }

        /// A JSON string; runs without escapes are copied in one go.
        mutating func string() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = index
            // Fast path: no escapes, found eight bytes at a time.
            index = ByteWord.firstControl(orEither: UInt8(ascii: "\""), UInt8(ascii: "\\"), in: bytes, from: start)
            if index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
                let run = UnsafeBufferPointer(rebasing: bytes[start..<index])
                index += 1
                return TextRule.validatedUTF8(run)
            }
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\\") else { return nil }
            scratch.removeAll(keepingCapacity: true)
            // The decoded text is never longer than the rest of the line: one
            // allocation a row, not one for each doubling.
            scratch.reserveCapacity(bytes.count - start)
            scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start..<index]))
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    index += 1
                    return scratch.withUnsafeBufferPointer { TextRule.validatedUTF8($0) }
                }
                if byte < 0x20 { return nil }
                guard byte == UInt8(ascii: "\\") else {
                    // A run up to the next quote, backslash or control character, copied in one go.
                    let run = index
                    index += 1
                    while index < bytes.count, bytes[index] >= 0x20, bytes[index] != UInt8(ascii: "\""),
                        bytes[index] != UInt8(ascii: "\\")
                    {
                        index += 1
                    }
                    scratch.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<index]))
                    continue
                }
                index += 1
                guard index < bytes.count else { return nil }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scratch.append(escape)
                case UInt8(ascii: "b"): scratch.append(0x08)
                case UInt8(ascii: "f"): scratch.append(0x0C)
                case UInt8(ascii: "n"): scratch.append(0x0A)
                case UInt8(ascii: "r"): scratch.append(0x0D)
                case UInt8(ascii: "t"): scratch.append(0x09)
                case UInt8(ascii: "u"):
                    guard var scalar = hex4() else { return nil }
                    if (0xD800...0xDBFF).contains(scalar) {
                        guard take(UInt8(ascii: "\\")), take(UInt8(ascii: "u")), let low = hex4(),
                            (0xDC00...0xDFFF).contains(low)
                        else { return nil }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        return nil
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { return nil }
                    scratch.append(contentsOf: String(Character(unicode)).utf8)
                default:
                    return nil
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard bytes.count - index >= 4 else { return nil }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt32(digit)
                index += 1
            }
            return value
        }
    }
}
