import Foundation

/// A small JSON decoder for the profile cache (`ProfileCache`). Foundation's
/// `JSONDecoder` asks the runtime, for every type it decodes, whether the type
/// conforms to a few marker protocols; each first answer scans every protocol
/// conformance of the process, which cost more than the YAML parse it was
/// meant to spare. This one decodes straight through the `Decodable`
/// initialisers and never casts. It reads what `JSONEncoder` writes (objects,
/// arrays, strings, numbers, booleans, null); anything else throws.
struct CacheJSONDecoder {
    func decode<T: Decodable>(_ type: T.Type, from text: String) throws -> T {
        var parser = CacheJSONParser(bytes: Array(text.utf8))
        let value = try parser.parseDocument()
        return try T(from: CacheJSONValueDecoder(value: value, codingPath: []))
    }
}

indirect enum CacheJSONValue {
    case null
    case bool(Bool)
    case number(String)
    case string(String)
    case array([CacheJSONValue])
    case object([String: CacheJSONValue])
}

struct CacheJSONError: Error {
    var message: String
}

struct CacheJSONParser {
    let bytes: [UInt8]
    var index = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func parseDocument() throws -> CacheJSONValue {
        let value = try parseValue(depth: 0)
        skipSpace()
        guard index == bytes.count else { throw CacheJSONError(message: "trailing bytes") }
        return value
    }

    mutating func skipSpace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
            index += 1
        }
    }

    mutating func expect(_ literal: String) throws {
        for byte in literal.utf8 {
            guard index < bytes.count, bytes[index] == byte else { throw CacheJSONError(message: "bad literal") }
            index += 1
        }
    }

    mutating func parseValue(depth: Int) throws -> CacheJSONValue {
        guard depth < 64 else { throw CacheJSONError(message: "too deep") }
        skipSpace()
        guard index < bytes.count else { throw CacheJSONError(message: "unexpected end") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            var object: [String: CacheJSONValue] = [:]
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(object)
            }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw CacheJSONError(message: "expected a key")
                }
                let key = try parseString()
                skipSpace()
                try expect(":")
                object[key] = try parseValue(depth: depth + 1)
                skipSpace()
                guard index < bytes.count else { throw CacheJSONError(message: "unexpected end") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return .object(object)
                } else {
                    throw CacheJSONError(message: "expected , or }")
                }
            }
        case UInt8(ascii: "["):
            index += 1
            var array: [CacheJSONValue] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(array)
            }
            while true {
                array.append(try parseValue(depth: depth + 1))
                skipSpace()
                guard index < bytes.count else { throw CacheJSONError(message: "unexpected end") }
                if bytes[index] == UInt8(ascii: ",") {
                    index += 1
                } else if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return .array(array)
                } else {
                    throw CacheJSONError(message: "expected , or ]")
                }
            }
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "t"):
            try expect("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expect("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expect("null")
            return .null
        default:
            let start = index
            while index < bytes.count {
                let byte = bytes[index]
                let isNumberByte =
                    (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: "+") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e")
                    || byte == UInt8(ascii: "E")
                guard isNumberByte else { break }
                index += 1
            }
            guard index > start else { throw CacheJSONError(message: "unexpected byte") }
            return .number(String(decoding: bytes[start..<index], as: UTF8.self))
        }
    }

    /// At the opening quote.
    mutating func parseString() throws -> String {
        index += 1
        var output: [UInt8] = []
        while true {
            guard index < bytes.count else { throw CacheJSONError(message: "unterminated string") }
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: "\"") { break }
            guard byte == UInt8(ascii: "\\") else {
                output.append(byte)
                continue
            }
            guard index < bytes.count else { throw CacheJSONError(message: "unterminated escape") }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""): output.append(0x22)
            case UInt8(ascii: "\\"): output.append(0x5C)
            case UInt8(ascii: "/"): output.append(0x2F)
            case UInt8(ascii: "b"): output.append(0x08)
            case UInt8(ascii: "f"): output.append(0x0C)
            case UInt8(ascii: "n"): output.append(0x0A)
            case UInt8(ascii: "r"): output.append(0x0D)
            case UInt8(ascii: "t"): output.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try parseHex4()
                if scalar >= 0xD800, scalar < 0xDC00 {
                    try expect("\\u")
                    let low = try parseHex4()
                    guard low >= 0xDC00, low < 0xE000 else { throw CacheJSONError(message: "bad surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw CacheJSONError(message: "bad scalar") }
                output.append(contentsOf: Array(String(Character(unicode)).utf8))
            default:
                throw CacheJSONError(message: "bad escape")
            }
        }
        guard let string = String(validating: output, as: UTF8.self) else {
            throw CacheJSONError(message: "invalid UTF-8")
        }
        return string
    }

    mutating func parseHex4() throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard index < bytes.count else { throw CacheJSONError(message: "short escape") }
            let byte = bytes[index]
            index += 1
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw CacheJSONError(message: "bad hex digit")
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }
}

struct CacheJSONKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}

struct CacheJSONValueDecoder: Decoder {
    let value: CacheJSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case let .object(object) = value else { throw CacheJSONError(message: "expected an object") }
        return KeyedDecodingContainer(CacheJSONKeyedContainer<Key>(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case let .array(array) = value else { throw CacheJSONError(message: "expected an array") }
        return CacheJSONUnkeyedContainer(array: array, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        CacheJSONSingleValue(value: value, codingPath: codingPath)
    }
}

struct CacheJSONKeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: [String: CacheJSONValue]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { object.keys.compactMap { Key(stringValue: $0) } }
    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    func value(_ key: Key) throws -> CacheJSONValue {
        guard let value = object[key.stringValue] else { throw CacheJSONError(message: "missing \(key.stringValue)") }
        return value
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let value = object[key.stringValue] else { return true }
        if case .null = value { return true }
        return false
    }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        try CacheJSONSingleValue(value: try value(key), codingPath: codingPath + [key]).decode(type)
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try CacheJSONValueDecoder(value: try value(key), codingPath: codingPath + [key]).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try CacheJSONValueDecoder(value: try value(key), codingPath: codingPath + [key]).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder { throw CacheJSONError(message: "no super decoder") }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw CacheJSONError(message: "no super decoder") }
}

struct CacheJSONUnkeyedContainer: UnkeyedDecodingContainer {
    let array: [CacheJSONValue]
    let codingPath: [any CodingKey]
    var currentIndex = 0

    init(array: [CacheJSONValue], codingPath: [any CodingKey]) {
        self.array = array
        self.codingPath = codingPath
    }

    var count: Int? { array.count }
    var isAtEnd: Bool { currentIndex >= array.count }

    mutating func next() throws -> CacheJSONValue {
        guard currentIndex < array.count else { throw CacheJSONError(message: "array too short") }
        defer { currentIndex += 1 }
        return array[currentIndex]
    }

    mutating func decodeNil() throws -> Bool {
        guard currentIndex < array.count else { throw CacheJSONError(message: "array too short") }
        if case .null = array[currentIndex] {
            currentIndex += 1
            return true
        }
        return false
    }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let key = CacheJSONKey(intValue: currentIndex)
        return try CacheJSONSingleValue(value: try next(), codingPath: codingPath + [key]).decode(type)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try CacheJSONValueDecoder(value: try next(), codingPath: codingPath).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try CacheJSONValueDecoder(value: try next(), codingPath: codingPath).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { throw CacheJSONError(message: "no super decoder") }
}

struct CacheJSONSingleValue: SingleValueDecodingContainer {
    let value: CacheJSONValue
    let codingPath: [any CodingKey]

    func decodeNil() -> Bool {
        if case .null = value { return true }
        return false
    }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case let .bool(bool) = value else { throw CacheJSONError(message: "expected a boolean") }
        return bool
    }

    func decode(_ type: String.Type) throws -> String {
        guard case let .string(string) = value else { throw CacheJSONError(message: "expected a string") }
        return string
    }

    func number() throws -> String {
        guard case let .number(text) = value else { throw CacheJSONError(message: "expected a number") }
        return text
    }

    func decode(_ type: Double.Type) throws -> Double {
        guard let number = Double(try number()) else { throw CacheJSONError(message: "bad number") }
        return number
    }

    func decode(_ type: Float.Type) throws -> Float {
        guard let number = Float(try number()) else { throw CacheJSONError(message: "bad number") }
        return number
    }

    func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
        guard let number = I(try number()) else { throw CacheJSONError(message: "bad integer") }
        return number
    }

    func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        // `JSONEncoder` writes a `Decimal` as a plain number, not through
        // `Decimal.encode(to:)`; read it the same way.
        if type == Decimal.self {
            guard let decimal = Decimal(string: try number()), let result = decimal as? T else {
                throw CacheJSONError(message: "bad decimal")
            }
            return result
        }
        // Primitives come back here through their own `init(from:)`.
        return try T(from: CacheJSONValueDecoder(value: value, codingPath: codingPath))
    }
}
