import Foundation
import GuestModeKit
import Hummingbird

/// The request decoder of every route (`ServerContext.requestDecoder`): a
/// body is read within the context's limit, parsed by the engine's strict
/// parser (valid UTF-8, no duplicate member, bounded depth) and decoded into
/// a `Decodable` body type whose members must have exactly the JSON types the
/// OpenAPI document gives: `"5"` is not a number, a number is not a string.
/// An empty body is an empty object; members a route does not know are ignored.
///
/// ```swift
/// let body = try await request.decode(as: GuestBody.self, context: context)
/// ```
struct StrictRequestDecoder: RequestDecoder {
    /// What the body takes of `--body-memory`.
    let lease: BodyLease?

    func decode<T: Decodable>(_ type: T.Type, from request: Request, context: some RequestContext) async throws -> T {
        try Self.decode(
            type, from: try await RequestInput.body(of: request, limit: context.maxUploadSize, lease: lease))
    }

    /// Decodes bytes already read, for the routes that also keep them (an idempotency fingerprint).
    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try T(from: JSONValueDecoder(value: .object(try RequestInput.object(bytes)), codingPath: []))
    }
}

/// A JSON number as it was written, or a string holding a decimal where the
/// OpenAPI document allows one (an amount), so the engine gets the exact
/// decimal and never a `Double`'s approximation.
struct DecimalText: Decodable, Sendable {
    var text: String

    init(from decoder: any Decoder) throws {
        text = try decoder.singleValueContainer().decode(String.self)
    }

    init(text: String) { self.text = text }
}

/// A member kept as the JSON it is (an event's `props`), for the route to
/// check itself.
struct RawJSON: Decodable, Sendable {
    var value: JSONValue

    init(from decoder: any Decoder) throws {
        guard let decoder = decoder as? JSONValueDecoder else {
            throw GuestModeError(.internalFailure, "RawJSON is decoded only by StrictRequestDecoder")
        }
        value = decoder.value
    }
}

/// A `Decoder` over the engine's `JSONValue` that converts nothing: each
/// mismatch is `invalid_json` (422) naming the member, a missing required
/// member `usage` (400).
struct JSONValueDecoder: Decoder, SingleValueDecodingContainer {
    let value: JSONValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// `count`, `props.screen`: where in the body, for messages.
    static func describe(_ path: [any CodingKey]) -> String {
        path.isEmpty
            ? "the request body"
            : "'"
                + path.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
                .joined(separator: ".") + "'"
    }

    func mismatch(_ expected: String) -> GuestModeError {
        GuestModeError(
            .invalidJson, "\(Self.describe(codingPath)) must be \(expected), not \(value.kindDescription)")
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case let .object(members) = value else { throw mismatch("a JSON object") }
        return KeyedDecodingContainer(KeyedContainer<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case let .array(elements) = value else { throw mismatch("a JSON array") }
        return UnkeyedContainer(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeNil() -> Bool { value == .null }

    func decode(_ type: Bool.Type) throws -> Bool {
        guard case let .bool(flag) = value else { throw mismatch("true or false") }
        return flag
    }

    func decode(_ type: String.Type) throws -> String {
        guard case let .string(text) = value else { throw mismatch("a string") }
        return text
    }

    func decode(_ type: Double.Type) throws -> Double {
        guard case let .number(text) = value, let number = Double(text) else { throw mismatch("a number") }
        return number
    }

    func decode(_ type: Float.Type) throws -> Float { Float(try decode(Double.self)) }

    /// A whole number that fits `type`: `5`, never `"5"`, `5.0` or `5e0`.
    private func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        guard case let .number(text) = value, let number = T(text) else { throw mismatch("a whole number") }
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
        // An amount's exact text, which a number and a string may both hold.
        if type == DecimalText.self {
            switch value {
            case let .number(text), let .string(text):
                if let decimal = DecimalText(text: text) as? T { return decimal }
            default: break
            }
            throw mismatch("a number")
        }
        return try T(from: self)
    }

    private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let members: [String: JSONValue]
        let codingPath: [any CodingKey]

        var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

        func decoder(for key: Key) throws -> JSONValueDecoder {
            guard let value = members[key.stringValue] else {
                throw GuestModeError(
                    .usage, "the request body needs \(JSONValueDecoder.describe(codingPath + [key]))")
            }
            return JSONValueDecoder(value: value, codingPath: codingPath + [key])
        }

        func decodeNil(forKey key: Key) throws -> Bool { members[key.stringValue] == .null }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decoder(for: key).decode(type) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try decoder(for: key).decode(type) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decoder(for: key).decode(type) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decoder(for: key).decode(type) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decoder(for: key).decode(type) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decoder(for: key).decode(type) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decoder(for: key).decode(type) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decoder(for: key).decode(type) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decoder(for: key).decode(type) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decoder(for: key).decode(type) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decoder(for: key).decode(type) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decoder(for: key).decode(type) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decoder(for: key).decode(type) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decoder(for: key).decode(type) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decoder(for: key).decode(type) }

        func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type, forKey key: Key
        ) throws -> KeyedDecodingContainer<NestedKey> {
            try decoder(for: key).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try decoder(for: key).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder { JSONValueDecoder(value: .object(members), codingPath: codingPath) }
        func superDecoder(forKey key: Key) throws -> any Decoder { try decoder(for: key) }
    }

    private struct UnkeyedContainer: UnkeyedDecodingContainer {
        let elements: [JSONValue]
        let codingPath: [any CodingKey]
        var currentIndex = 0

        init(elements: [JSONValue], codingPath: [any CodingKey]) {
            self.elements = elements
            self.codingPath = codingPath
        }

        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        private struct Index: CodingKey {
            var intValue: Int?
            var stringValue: String { "\(intValue ?? 0)" }
            init(intValue: Int) { self.intValue = intValue }
            init?(stringValue: String) { nil }
        }

        private mutating func next() throws -> JSONValueDecoder {
            guard !isAtEnd else {
                throw GuestModeError(
                    .invalidJson, "\(JSONValueDecoder.describe(codingPath)) has fewer elements than it needs")
            }
            defer { currentIndex += 1 }
            return JSONValueDecoder(
                value: elements[currentIndex], codingPath: codingPath + [Index(intValue: currentIndex)])
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, elements[currentIndex] == .null else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode(_ type: Bool.Type) throws -> Bool { try next().decode(type) }
        mutating func decode(_ type: String.Type) throws -> String { try next().decode(type) }
        mutating func decode(_ type: Double.Type) throws -> Double { try next().decode(type) }
        mutating func decode(_ type: Float.Type) throws -> Float { try next().decode(type) }
        mutating func decode(_ type: Int.Type) throws -> Int { try next().decode(type) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try next().decode(type) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try next().decode(type) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try next().decode(type) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try next().decode(type) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try next().decode(type) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next().decode(type) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next().decode(type) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next().decode(type) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next().decode(type) }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decode(type) }

        mutating func nestedContainer<NestedKey: CodingKey>(
            keyedBy type: NestedKey.Type
        ) throws -> KeyedDecodingContainer<NestedKey> {
            try next().container(keyedBy: type)
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            try next().unkeyedContainer()
        }

        mutating func superDecoder() throws -> any Decoder { try next() }
    }
}
