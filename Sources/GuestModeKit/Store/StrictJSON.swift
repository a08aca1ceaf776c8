import Foundation

/// A JSON value read by `StrictJSON`: numbers keep the text they were
/// written with, so nothing is rounded or reinterpreted on the way through.
package enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// The number as written; always a valid RFC 8259 number with a finite value.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// What the value is, for messages: "a string", "an array".
    package var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// A strict RFC 8259 JSON parser: no trailing commas, comments, single
/// quotes, bare words, leading zeros, NaN or infinities, no duplicate keys,
/// no invalid UTF-8 and no unpaired surrogate escapes. Foundation's
/// `JSONSerialization` accepts some of these (`[1,2,]`), so anything a user
/// hands guestmode as JSON passes through here first. It reads in one linear
/// pass and refuses nesting deeper than `maximumDepth`, so no input can
/// exhaust the stack.
package enum StrictJSON {
    package static let maximumDepth = 256

    package struct Failure: Error, CustomStringConvertible, Sendable, Equatable {
        /// 1-based byte offset into the text where the problem is.
        package var offset: Int
        package var reason: String
        package var description: String { "\(reason) at byte \(offset)" }
    }

    /// Parses UTF-8 bytes; invalid UTF-8 anywhere is refused.
    package static func parse(_ data: Data) throws(Failure) -> JSONValue {
        let bytes = [UInt8](data)
        var parser = Parser(bytes: bytes)
        return try parser.document()
    }

    package static func parse(_ text: some StringProtocol) throws(Failure) -> JSONValue {
        var parser = Parser(bytes: Array(text.utf8))
        return try parser.document()
    }

    private struct Parser {
        let bytes: [UInt8]
        var index = 0
        var depth = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        func fail(_ reason: String, at position: Int? = nil) -> Failure {
            Failure(offset: (position ?? index) + 1, reason: reason)
        }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        func describe(_ byte: UInt8?) -> String {
            guard let byte else { return "end of input" }
            if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
            return String(format: "byte 0x%02X", byte)
        }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 { index += 1 }
        }

        mutating func document() throws(Failure) -> JSONValue {
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { throw fail("a byte order mark is not JSON") }
            skipWhitespace()
            let value = try self.value()
            skipWhitespace()
            if index < bytes.count { throw fail("unexpected \(describe(current)) after the JSON value") }
            return value
        }

        mutating func value() throws(Failure) -> JSONValue {
            guard let byte = current else { throw fail("expected a JSON value, found end of input") }
            switch byte {
            case UInt8(ascii: "{"): return try object()
            case UInt8(ascii: "["): return try array()
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try number())
            default: throw fail("expected a JSON value, found \(describe(current))")
            }
        }

        mutating func literal(_ word: String) throws(Failure) {
            let start = index
            for expected in word.utf8 {
                guard current == expected else { throw fail("expected '\(word)'", at: start) }
                index += 1
            }
        }

        mutating func enter() throws(Failure) {
            depth += 1
            if depth > StrictJSON.maximumDepth { throw fail("nesting deeper than \(StrictJSON.maximumDepth) levels") }
        }

        mutating func object() throws(Failure) -> JSONValue {
            try enter()
            index += 1
            var members: [String: JSONValue] = [:]
            skipWhitespace()
            if current == UInt8(ascii: "}") {
                index += 1
                depth -= 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard current == UInt8(ascii: "\"") else {
                    throw fail("expected a quoted member name, found \(describe(current))")
                }
                let keyStart = index
                let key = try string()
                if members[key] != nil { throw fail("duplicate member name '\(key)'", at: keyStart) }
                skipWhitespace()
                guard current == UInt8(ascii: ":") else {
                    throw fail("expected ':' after '\(key)', found \(describe(current))")
                }
                index += 1
                skipWhitespace()
                members[key] = try value()
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","):
                    index += 1
                    skipWhitespace()
                    if current == UInt8(ascii: "}") { throw fail("trailing comma before '}'") }
                case UInt8(ascii: "}"):
                    index += 1
                    depth -= 1
                    return .object(members)
                default:
                    throw fail("expected ',' or '}', found \(describe(current))")
                }
            }
        }

        mutating func array() throws(Failure) -> JSONValue {
            try enter()
            index += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if current == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                elements.append(try value())
                skipWhitespace()
                switch current {
                case UInt8(ascii: ","):
                    index += 1
                    skipWhitespace()
                    if current == UInt8(ascii: "]") { throw fail("trailing comma before ']'") }
                case UInt8(ascii: "]"):
                    index += 1
                    depth -= 1
                    return .array(elements)
                default:
                    throw fail("expected ',' or ']', found \(describe(current))")
                }
            }
        }

        mutating func number() throws(Failure) -> String {
            let start = index
            if current == UInt8(ascii: "-") { index += 1 }
            guard let first = current, first >= UInt8(ascii: "0") && first <= UInt8(ascii: "9") else {
                throw fail("expected a digit, found \(describe(current))")
            }
            index += 1
            if first == UInt8(ascii: "0"), let next = current, next >= UInt8(ascii: "0") && next <= UInt8(ascii: "9") {
                throw fail("a number must not have a leading zero", at: start)
            }
            skipDigits()
            if current == UInt8(ascii: ".") {
                index += 1
                guard try requireDigit() else { throw fail("expected a digit after '.'") }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard try requireDigit() else { throw fail("expected a digit in the exponent") }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            guard let value = Double(text), value.isFinite else {
                throw fail("the number \(text.prefix(40)) is out of range", at: start)
            }
            return text
        }

        mutating func skipDigits() {
            while let byte = current, byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") { index += 1 }
        }

        mutating func requireDigit() throws(Failure) -> Bool {
            guard let byte = current, byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") else { return false }
            skipDigits()
            return true
        }

        mutating func string() throws(Failure) -> String {
            let start = index
            // The common case, plain ASCII without escapes, is copied in one
            // go; anything else is read scalar by scalar below, from the start.
            var end = start + 1
            while end < bytes.count {
                let byte = bytes[end]
                if byte == UInt8(ascii: "\"") {
                    index = end + 1
                    return String(decoding: bytes[(start + 1)..<end], as: UTF8.self)
                }
                if byte < 0x20 || byte >= 0x80 || byte == UInt8(ascii: "\\") { break }
                end += 1
            }
            index += 1
            var scalars = String.UnicodeScalarView()
            var pendingHigh: UInt32?
            while true {
                guard let byte = current else { throw fail("unterminated string", at: start) }
                if pendingHigh != nil && byte != UInt8(ascii: "\\") { throw fail("unpaired surrogate escape") }
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return String(scalars)
                case UInt8(ascii: "\\"):
                    index += 1
                    guard let escape = current else { throw fail("unterminated string", at: start) }
                    index += 1
                    if pendingHigh != nil && escape != UInt8(ascii: "u") { throw fail("unpaired surrogate escape") }
                    switch escape {
                    case UInt8(ascii: "\""): scalars.append("\"")
                    case UInt8(ascii: "\\"): scalars.append("\\")
                    case UInt8(ascii: "/"): scalars.append("/")
                    case UInt8(ascii: "b"): scalars.append("\u{08}")
                    case UInt8(ascii: "f"): scalars.append("\u{0C}")
                    case UInt8(ascii: "n"): scalars.append("\n")
                    case UInt8(ascii: "r"): scalars.append("\r")
                    case UInt8(ascii: "t"): scalars.append("\t")
                    case UInt8(ascii: "u"):
                        let code = try hex4()
                        if let high = pendingHigh {
                            guard (0xDC00...0xDFFF).contains(code) else { throw fail("unpaired surrogate escape") }
                            pendingHigh = nil
                            let combined = 0x10000 + ((high - 0xD800) << 10) + (code - 0xDC00)
                            guard let scalar = Unicode.Scalar(combined) else { throw fail("invalid escape") }
                            scalars.append(scalar)
                        } else if (0xD800...0xDBFF).contains(code) {
                            pendingHigh = code
                        } else if let scalar = Unicode.Scalar(code) {
                            scalars.append(scalar)
                        } else {
                            throw fail("unpaired surrogate escape")
                        }
                    default:
                        throw fail("invalid escape '\\\(describe(escape))'", at: index - 2)
                    }
                case 0x00..<0x20:
                    throw fail("a control character must be escaped in a string")
                case 0x00..<0x80:
                    scalars.append(Unicode.Scalar(byte))
                    index += 1
                default:
                    scalars.append(try multiByteScalar())
                }
            }
        }

        mutating func hex4() throws(Failure) -> UInt32 {
            var code: UInt32 = 0
            for _ in 0..<4 {
                guard let byte = current else { throw fail("expected four hex digits after \\u") }
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw fail("expected four hex digits after \\u")
                }
                code = code << 4 | digit
                index += 1
            }
            return code
        }

        /// One UTF-8 encoded scalar of two to four bytes, validated
        /// (no overlong forms, surrogates or values past U+10FFFF).
        mutating func multiByteScalar() throws(Failure) -> Unicode.Scalar {
            let start = index
            let lead = bytes[index]
            let length: Int
            var value: UInt32
            switch lead {
            case 0xC2...0xDF: (length, value) = (2, UInt32(lead & 0x1F))
            case 0xE0...0xEF: (length, value) = (3, UInt32(lead & 0x0F))
            case 0xF0...0xF4: (length, value) = (4, UInt32(lead & 0x07))
            default: throw fail("invalid UTF-8", at: start)
            }
            guard start + length <= bytes.count else { throw fail("invalid UTF-8", at: start) }
            for offset in 1..<length {
                let byte = bytes[start + offset]
                guard byte & 0xC0 == 0x80 else { throw fail("invalid UTF-8", at: start) }
                value = value << 6 | UInt32(byte & 0x3F)
            }
            let minimum: UInt32 = length == 2 ? 0x80 : length == 3 ? 0x800 : 0x10000
            guard value >= minimum, let scalar = Unicode.Scalar(value) else { throw fail("invalid UTF-8", at: start) }
            index += length
            return scalar
        }
    }
}

extension JSONValue {
    /// The value as compact JSON with members sorted by name and numbers as
    /// they were written: the one form stored JSON (records, event
    /// properties) takes, so equal documents compare equal.
    package var canonicalText: String { text(pretty: false) }

    /// The value as JSON, members sorted by name, numbers as written; `pretty`
    /// puts each member and element on a line of its own, indented two spaces
    /// a level, with `"name" : value` (the layout of the documents the
    /// command line prints).
    package func text(pretty: Bool) -> String {
        // Built as UTF-8 bytes and made a String once: appending to a String piece by piece (a
        // uniqueness check, a capacity check and a UTF-8 scan each time) was most of encoding a
        // served answer (bench/results.md, "Serving, round 5").
        var output: [UInt8] = []
        output.reserveCapacity(256)
        write(to: &output, pretty: pretty, indent: 0)
        return String(decoding: output, as: UTF8.self)
    }

    package func write(to output: inout [UInt8], pretty: Bool, indent: Int) {
        switch self {
        case .null: JSONValue.append("null", to: &output)
        case .bool(let value): JSONValue.append(value ? "true" : "false", to: &output)
        case .number(let text): output.append(contentsOf: text.utf8)
        case .string(let text): JSONValue.writeString(text, to: &output)
        case .array(let elements):
            JSONValue.writeArray(elements, to: &output, pretty: pretty, indent: indent) { element, output in
                element.write(to: &output, pretty: pretty, indent: indent + 1)
            }
        case .object(let members):
            guard !members.isEmpty else { return JSONValue.append("{}", to: &output) }
            output.append(UInt8(ascii: "{"))
            // The members sorted as pairs: sorting the names and looking each up again hashed every name twice.
            for (index, member) in members.sorted(by: { $0.key < $1.key }).enumerated() {
                JSONValue.open(index, name: member.key, in: &output, pretty: pretty, indent: indent + 1)
                member.value.write(to: &output, pretty: pretty, indent: indent + 1)
            }
            JSONValue.close(UInt8(ascii: "}"), in: &output, pretty: pretty, indent: indent)
        }
    }

    /// Starts element or member `index` of an array or object (after its `[` or `{`), at `indent` in the
    /// layout `text(pretty:)` documents: a comma before all but the first, `pretty`'s line break and
    /// indentation, and a member's `name` with its colon. Writers of other trees (a document's nodes, a log
    /// line's members) lay out their containers with it and `close`.
    package static func open(_ index: Int, name: String?, in output: inout [UInt8], pretty: Bool, indent: Int) {
        if index > 0 { output.append(UInt8(ascii: ",")) }
        newline(indent, in: &output, pretty: pretty)
        guard let name else { return }
        writeString(name, to: &output)
        if pretty {
            append(" : ", to: &output)
        } else {
            output.append(UInt8(ascii: ":"))
        }
    }

    /// `elements` as an array at `indent`, each written by `writeElement` at the level below. Generic within
    /// this module only, where it is specialised: a generic writer called from another module ran
    /// unspecialised (bench/results.md, "Serving, round 7").
    static func writeArray<Element>(
        _ elements: [Element], to output: inout [UInt8], pretty: Bool, indent: Int,
        element writeElement: (Element, inout [UInt8]) -> Void
    ) {
        guard !elements.isEmpty else { return append("[]", to: &output) }
        output.append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            open(index, name: nil, in: &output, pretty: pretty, indent: indent + 1)
            writeElement(element, &output)
        }
        close(UInt8(ascii: "]"), in: &output, pretty: pretty, indent: indent)
    }

    /// Ends a container of at least one element or member, whose own level is `indent`, with `bracket`.
    package static func close(_ bracket: UInt8, in output: inout [UInt8], pretty: Bool, indent: Int) {
        newline(indent, in: &output, pretty: pretty)
        output.append(bracket)
    }

    private static func newline(_ level: Int, in output: inout [UInt8], pretty: Bool) {
        guard pretty else { return }
        // From one buffer of a line break and spaces: appending a repeated space was a loop a byte.
        let width = 1 + 2 * level
        guard width <= lineBreaks.count else {
            output.append(UInt8(ascii: "\n"))
            return output.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * level))
        }
        lineBreaks.withUnsafeBufferPointer { output.append(contentsOf: UnsafeBufferPointer(rebasing: $0[..<width])) }
    }

    /// A line break and the indentation of the first 32 levels.
    private static let lineBreaks: [UInt8] = [UInt8(ascii: "\n")] + Array(repeating: UInt8(ascii: " "), count: 64)

    /// Appends the few bytes of a literal (`null`, `true`, ` : `) one at a time: appending a string's `utf8`
    /// was about 200 instructions however short it was, for every member name and null of a served answer
    /// (bench/results.md, "Serving, round 19").
    package static func append(_ literal: StaticString, to output: inout [UInt8]) {
        let bytes = UnsafeBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount)
        for byte in bytes { output.append(byte) }
    }

    /// Runs between the bytes that need an escape are appended whole. The bytes are looked at eight at a time:
    /// one at a time was 22 k of the 210 k instructions of a served `prompt next`'s answer (bench/results.md,
    /// "Serving, round 14"). The scan for the next such byte is `ByteWord`'s, which finds it within its word:
    /// a word that only might hold one was looked at again a byte at a time, and so was every text's last
    /// word, nearly all of a short name ("Serving, round 17").
    static func writeString(_ text: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { bytes in
            escape(bytes) { run in
                output.append(contentsOf: run)
            } escaped: { byte in
                output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    /// A text's UTF-8 as JSON writes it between its quotes, given to `run` as the runs that need no escape and to
    /// `escaped` a byte at a time for the escapes between them (`\"`, `\\`, `\n`, `\u00XX` with lowercase hex
    /// digits): the one place the escapes are decided, for `JSONValue` and `JSONWriter` alike.
    @inline(__always)
    package static func escape(
        _ bytes: UnsafeBufferPointer<UInt8>, run: (UnsafeBufferPointer<UInt8>) -> Void, escaped: (UInt8) -> Void
    ) {
        var runStart = 0
        while true {
            let index = ByteWord.firstControl(
                orEither: UInt8(ascii: "\""), UInt8(ascii: "\\"), in: bytes, from: runStart)
            if index > runStart { run(UnsafeBufferPointer(rebasing: bytes[runStart..<index])) }
            guard index < bytes.count else { return }
            let byte = bytes[index]
            escaped(UInt8(ascii: "\\"))
            switch byte {
            case UInt8(ascii: "\""): escaped(UInt8(ascii: "\""))
            case UInt8(ascii: "\\"): escaped(UInt8(ascii: "\\"))
            case UInt8(ascii: "\n"): escaped(UInt8(ascii: "n"))
            case UInt8(ascii: "\r"): escaped(UInt8(ascii: "r"))
            case UInt8(ascii: "\t"): escaped(UInt8(ascii: "t"))
            case 0x08: escaped(UInt8(ascii: "b"))
            case 0x0C: escaped(UInt8(ascii: "f"))
            default:
                func hexDigit(_ value: UInt8) -> UInt8 {
                    value < 10 ? UInt8(ascii: "0") + value : UInt8(ascii: "a") + value - 10
                }
                escaped(UInt8(ascii: "u"))
                escaped(UInt8(ascii: "0"))
                escaped(UInt8(ascii: "0"))
                escaped(hexDigit(byte >> 4))
                escaped(hexDigit(byte & 0xF))
            }
            runStart = index + 1
        }
    }
}

extension StrictJSON {
    /// The offset of the first byte that is not part of valid UTF-8, if any.
    package static func firstInvalidUTF8(in data: Data) -> Int? {
        var iterator = data.makeIterator()
        var decoder = UTF8()
        var offset = 0
        // Decode scalar by scalar; on an error report where that scalar began.
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                offset += UTF8.width(scalar)
            case .emptyInput:
                return nil
            case .error:
                return offset
            }
        }
    }
}
