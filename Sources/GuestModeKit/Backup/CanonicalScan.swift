/// Recognises, in one pass and without allocating, record data that is
/// already in the canonical text `record put` stores (`JSONValue.canonicalText`),
/// as nearly every record guestmode exported is: an object, compact, member
/// names of lowercase letters a-z in strictly increasing order (so none twice;
/// archives written before the canonical text sorted names as Foundation does,
/// case-insensitively and numerically, which agrees with byte order only on
/// such names), printable ASCII only (so no character can be spelled two
/// ways), strings escaping only `"` and `\`, numbers plain integers of at most
/// 15 digits (which Foundation, too, printed as written), at most 64 levels
/// deep. Anything else is not rejected here, only left to the full strict
/// parse and re-encoding.
enum CanonicalScan {
    static func isCanonicalObject(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var scanner = Scanner(bytes: bytes)
            guard bytes.first == UInt8(ascii: "{"), scanner.value(depth: 0) else { return false }
            return scanner.index == bytes.count
        }
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func value(depth: Int) -> Bool {
            guard depth < 64, let byte = current else { return false }
            switch byte {
            case UInt8(ascii: "{"): return object(depth: depth + 1)
            case UInt8(ascii: "["): return array(depth: depth + 1)
            case UInt8(ascii: "\""): return string(isKey: false) != nil
            case UInt8(ascii: "t"): return word("true")
            case UInt8(ascii: "f"): return word("false")
            case UInt8(ascii: "n"): return word("null")
            default: return integer()
            }
        }

        mutating func word(_ word: StaticString) -> Bool {
            let count = word.utf8CodeUnitCount
            guard bytes.count - index >= count else { return false }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] { return false }
            index += count
            return true
        }

        mutating func integer() -> Bool {
            let start = index
            if current == UInt8(ascii: "-") { index += 1 }
            let digits = index
            while let byte = current, (48...57).contains(byte) { index += 1 }
            let count = index - digits
            guard count >= 1, count <= 15 else { return false }
            // No leading zero, and no "-0" (Foundation prints it as 0).
            return bytes[digits] != UInt8(ascii: "0") || (count == 1 && digits == start)
        }

        /// The string's raw bytes (between the quotes) when it is canonical;
        /// a key holds only the letters a-z.
        mutating func string(isKey: Bool) -> UnsafeBufferPointer<UInt8>? {
            guard current == UInt8(ascii: "\"") else { return nil }
            index += 1
            let start = index
            while let byte = current {
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    return UnsafeBufferPointer(rebasing: bytes[start..<index - 1])
                case UInt8(ascii: "\\"):
                    guard !isKey, index + 1 < bytes.count,
                        bytes[index + 1] == UInt8(ascii: "\"") || bytes[index + 1] == UInt8(ascii: "\\")
                    else { return nil }
                    index += 2
                case UInt8(ascii: "a")...UInt8(ascii: "z"): index += 1
                case 0x20...0x7E where !isKey: index += 1
                default: return nil
                }
            }
            return nil
        }

        mutating func object(depth: Int) -> Bool {
            index += 1
            if current == UInt8(ascii: "}") {
                index += 1
                return true
            }
            var previous: UnsafeBufferPointer<UInt8>?
            while true {
                guard let key = string(isKey: true) else { return false }
                if let previous, !previous.lexicographicallyPrecedes(key) { return false }
                previous = key
                guard current == UInt8(ascii: ":") else { return false }
                index += 1
                guard value(depth: depth) else { return false }
                switch current {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "}"):
                    index += 1
                    return true
                default: return false
                }
            }
        }

        mutating func array(depth: Int) -> Bool {
            index += 1
            if current == UInt8(ascii: "]") {
                index += 1
                return true
            }
            while true {
                guard value(depth: depth) else { return false }
                switch current {
                case UInt8(ascii: ","): index += 1
                case UInt8(ascii: "]"):
                    index += 1
                    return true
                default: return false
                }
            }
        }
    }
}
