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
    static func decode(_ line: UnsafeBufferPointer<UInt8>) -> [String: CellValue]? {
        var parser = Parser(bytes: line)
        return parser.object()
    }

    static func decode(_ line: [UInt8]) -> [String: CellValue]? {
        line.withUnsafeBufferPointer { decode($0) }
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

        mutating func object() -> [String: CellValue]? {
            skipSpace()
            guard take(UInt8(ascii: "{")) else { return nil }
            var row: [String: CellValue] = [:]
            row.reserveCapacity(12)
            skipSpace()
            if take(UInt8(ascii: "}")) { return end(row) }
            while true {
                skipSpace()
                guard let key = string() else { return nil }
                skipSpace()
                guard take(UInt8(ascii: ":")) else { return nil }
                skipSpace()
                guard let value = value() else { return nil }
                guard row.updateValue(value, forKey: key) == nil else { return nil }
                skipSpace()
                if take(UInt8(ascii: ",")) { continue }
                guard take(UInt8(ascii: "}")) else { return nil }
                return end(row)
            }
        }

        mutating func end(_ row: [String: CellValue]) -> [String: CellValue]? {
            skipSpace()
            return index == bytes.count ? row : nil
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
            let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
            if integral, let value = Int64(text) { return .integer(value) }
            guard let value = Double(text), value.isFinite else { return nil }
            if !integral, value.rounded(.towardZero) == value, value >= -0x1p63, value < 0x1p63 {
                return .integer(Int64(value))
            }
            return .real(value)
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
            // Fast path: no escapes.
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") {
                    let run = UnsafeBufferPointer(rebasing: bytes[start..<index])
                    index += 1
                    return TextRule.validatedUTF8(run)
                }
                if byte == UInt8(ascii: "\\") || byte < 0x20 { break }
                index += 1
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
