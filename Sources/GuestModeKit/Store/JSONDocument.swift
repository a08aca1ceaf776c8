import Foundation

/// The JSON every command and every `guestmode serve` answer prints, built by one encoder so that
/// all follow the same conventions (man page guestmode(1), JSON OUTPUT):
///
/// - keys are `snake_case`; booleans are plain (`dry_run`, `allowed`), never `is_…`;
/// - a user id is `user_id` (`guest_user_id`/`account_user_id`, `source_user_id`/`target_user_id`
///   where two users take part); timestamps end in `_at`;
/// - an absent value is present as `null` (Foundation's JSONEncoder drops nil optionals);
/// - numbers are numbers: decimals exactly as stored (meter amounts), binary floating point
///   rounded to six decimals (no `91.66666666666666`, no `5.551115123125783e-17`);
/// - keys of dictionaries (action names, table names) are data and kept as they are.
///
/// Engine types keep their Swift names; the renames live in `JSONKeys` below.
package enum JSONDocument {
    package static func encode<T: Encodable>(_ value: T, pretty: Bool = true) throws -> String {
        let node = JSONNode()
        try JSONNodeEncoder.encode(value, into: node, path: [])
        var text = ""
        node.resolved.write(to: &text, pretty: pretty, indent: 0)
        return text
    }
}

/// Engine property names → documented JSON names.
enum JSONKeys {
    /// Renames of one property of one type (the type named as Swift names it, without its module), by the
    /// property's snake_case name before `is_` is dropped.
    static let byType: [String: [String: String]] = [
        "User": ["id": "user_id"],
        "UserSummary": ["id": "user_id"],
        "PurgeCandidate": ["id": "user_id"],
        "MergeReport": ["guest": "guest_user_id", "account": "account_user_id"],
        "MigrationJournal": ["id": "journal_id", "source": "source_user_id", "target": "target_user_id"],
        "MigrationPlan": ["source": "source_user_id", "target": "target_user_id"],
        // `user show`: the user itself, an object holding its `user_id`.
        "UserDetails": ["user": "user"],
        // `track --from`: `applied` counts lines; whether they were committed is `committed`.
        "IngestReport": ["is_applied": "committed"],
        "StoredRecord": ["owner": "user_id"],
        "LoggedEvent": ["id": "event_id"],
        "ArchivedConflict": ["id": "conflict_id"],
        "RestoredConflict": ["id": "conflict_id"],
    ]

    /// Renames wherever the key appears.
    static let everywhere: [String: String] = [
        "user": "user_id",
        "created": "created_at",
        "was_already_adopted": "already_adopted",
    ]

    static func name(for key: any CodingKey) -> String {
        let cacheKey = NameCache.Key(type: ObjectIdentifier(type(of: key)), name: key.stringValue)
        if let cached = NameCache.shared.lookup(cacheKey) { return cached }
        let name = computeName(for: key)
        NameCache.shared.store(name, for: cacheKey)
        return name
    }

    private static func computeName(for key: any CodingKey) -> String {
        let typeName = String(reflecting: type(of: key))
        // Keys of a [String: …] dictionary are data: keep them.
        if typeName.contains("DictionaryCodingKey") || typeName.contains("DictionaryKey") { return key.stringValue }
        var name = snakeCase(key.stringValue)
        // "GuestModeKit.User.(unknown context at $…).CodingKeys": the type is the last named part before the keys.
        let parts = typeName.split(separator: ".").dropLast().filter { !$0.hasPrefix("(") }
        if let owner = parts.last, let renamed = byType[String(owner)]?[name] { return renamed }
        if name.hasPrefix("is_"), name.count > 3 { name.removeFirst(3) }
        return everywhere[name] ?? name
    }

    /// `journalID` → `journal_id`, `ci95Low` → `ci95_low`, `URLValue` → `url_value`.
    static func snakeCase(_ text: String) -> String {
        let characters = Array(text)
        var result = ""
        for (index, character) in characters.enumerated() {
            if character.isUppercase, index > 0 {
                let previous = characters[index - 1]
                let next = index + 1 < characters.count ? characters[index + 1] : nil
                if previous.isLowercase || previous.isNumber
                    || (previous.isUppercase && next.map { $0.isLowercase } == true)
                {
                    result.append("_")
                }
            }
            result.append(contentsOf: character.lowercased())
        }
        return result
    }
}

/// JSON names by key type and Swift name: reflecting on a type's name for every key of every row of a
/// long listing would cost more than encoding it.
final class NameCache: @unchecked Sendable {
    struct Key: Hashable {
        var type: ObjectIdentifier
        var name: String
    }

    static let shared = NameCache()
    private let lock = NSLock()
    private var names: [Key: String] = [:]

    func lookup(_ key: Key) -> String? {
        lock.lock()
        defer { lock.unlock() }
        return names[key]
    }

    func store(_ name: String, for key: Key) {
        lock.lock()
        defer { lock.unlock() }
        names[key] = name
    }
}

package indirect enum JSONDocumentValue {
    case null
    case bool(Bool)
    /// A number already in its JSON spelling.
    case number(String)
    case string(String)
    case array([JSONDocumentValue])
    case object([(String, JSONDocumentValue)])

    /// Six decimals at most, no exponent, no trailing zeros; NaN and infinities as null.
    package static func number(_ value: Double) -> JSONDocumentValue {
        guard value.isFinite else { return .null }
        let rounded = (value * 1_000_000).rounded() / 1_000_000
        if rounded == rounded.rounded(), abs(rounded) < 1e15 { return .number(String(Int64(rounded))) }
        var text = String(format: "%.6f", rounded)
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return .number(text)
    }

    package func write(to text: inout String, pretty: Bool, indent: Int) {
        switch self {
        case .null: text += "null"
        case .bool(let value): text += value ? "true" : "false"
        case .number(let value): text += value
        case .string(let value): JSONDocumentValue.quote(value, into: &text)
        case .array(let items):
            guard !items.isEmpty else { return text += "[]" }
            text += "["
            for (index, item) in items.enumerated() {
                if index > 0 { text += "," }
                if pretty { text += "\n" + String(repeating: "  ", count: indent + 1) }
                item.write(to: &text, pretty: pretty, indent: indent + 1)
            }
            if pretty { text += "\n" + String(repeating: "  ", count: indent) }
            text += "]"
        case .object(let members):
            guard !members.isEmpty else { return text += "{}" }
            text += "{"
            for (index, member) in members.sorted(by: { $0.0 < $1.0 }).enumerated() {
                if index > 0 { text += "," }
                if pretty { text += "\n" + String(repeating: "  ", count: indent + 1) }
                JSONDocumentValue.quote(member.0, into: &text)
                text += pretty ? " : " : ":"
                member.1.write(to: &text, pretty: pretty, indent: indent + 1)
            }
            if pretty { text += "\n" + String(repeating: "  ", count: indent) }
            text += "}"
        }
    }

    package static func quote(_ value: String, into text: inout String) {
        text += "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{08}": text += "\\b"
            case "\u{0C}": text += "\\f"
            default:
                if scalar.value < 0x20 {
                    text += String(format: "\\u%04x", scalar.value)
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "\""
    }
}

/// A value being built: set once, or filled as an array or object by containers.
final class JSONNode {
    enum Content {
        case unset
        case value(JSONDocumentValue)
        case array([JSONNode])
        case object([(String, JSONNode)])
    }
    var content = Content.unset

    var resolved: JSONDocumentValue {
        switch content {
        case .unset: return .object([])
        case .value(let value): return value
        case .array(let nodes): return .array(nodes.map(\.resolved))
        case .object(let members):
            // A later value for the same key wins, as with JSONEncoder.
            var seen: [String: Int] = [:]
            var result: [(String, JSONDocumentValue)] = []
            for (key, node) in members {
                if let index = seen[key] {
                    result[index].1 = node.resolved
                } else {
                    seen[key] = result.count
                    result.append((key, node.resolved))
                }
            }
            return .object(result)
        }
    }

    func child(forKey key: String) -> JSONNode {
        let node = JSONNode()
        if case .object(var members) = content {
            members.append((key, node))
            content = .object(members)
        } else {
            content = .object([(key, node)])
        }
        return node
    }

    func appended() -> JSONNode {
        let node = JSONNode()
        if case .array(var items) = content {
            items.append(node)
            content = .array(items)
        } else {
            content = .array([node])
        }
        return node
    }

    func makeObject() { if case .object = content {} else { content = .object([]) } }
    func makeArray() { if case .array = content {} else { content = .array([]) } }
}

struct JSONNodeEncoder: Encoder {
    let node: JSONNode
    var codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    static func encode<T: Encodable>(_ value: T, into node: JSONNode, path: [any CodingKey]) throws {
        switch value {
        case let date as Date: node.content = .value(.string(Timestamp.format(date)))
        case let decimal as Decimal: node.content = .value(.number(decimal.description))
        case let double as Double: node.content = .value(.number(double))
        case let float as Float: node.content = .value(.number(Double(float)))
        case let url as URL: node.content = .value(.string(url.isFileURL ? url.path : url.absoluteString))
        case let data as Data: node.content = .value(.string(data.base64EncodedString()))
        case let dictionary as [String: any Encodable]:
            node.makeObject()
            for key in dictionary.keys.sorted() {
                guard let item = dictionary[key] else { continue }
                try encode(item, into: node.child(forKey: key), path: path)
            }
        default: try value.encode(to: JSONNodeEncoder(node: node, codingPath: path))
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.makeObject()
        return KeyedEncodingContainer(KeyedJSONContainer<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.makeArray()
        return UnkeyedJSONContainer(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleJSONContainer(node: node, codingPath: codingPath)
    }
}

struct KeyedJSONContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: JSONNode
    var codingPath: [any CodingKey]

    private func set(_ value: JSONDocumentValue, _ key: Key) {
        node.child(forKey: JSONKeys.name(for: key)).content = .value(value)
    }

    mutating func encodeNil(forKey key: Key) throws { set(.null, key) }
    mutating func encode(_ value: Bool, forKey key: Key) throws { set(.bool(value), key) }
    mutating func encode(_ value: String, forKey key: Key) throws { set(.string(value), key) }
    mutating func encode(_ value: Double, forKey key: Key) throws { set(.number(value), key) }
    mutating func encode(_ value: Float, forKey key: Key) throws { set(.number(Double(value)), key) }
    mutating func encode(_ value: Int, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: Int8, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: Int16, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: Int32, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: Int64, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: UInt, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: UInt8, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: UInt16, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: UInt32, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode(_ value: UInt64, forKey key: Key) throws { set(.number(String(value)), key) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        try JSONNodeEncoder.encode(
            value, into: node.child(forKey: JSONKeys.name(for: key)), path: codingPath + [key])
    }

    // nil optionals are written as null, not left out.
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { try encodeOptional(value, key) }
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
        try encodeOptional(value, key)
    }

    private mutating func encodeOptional<T: Encodable>(_ value: T?, _ key: Key) throws {
        if let value { try encode(value, forKey: key) } else { set(.null, key) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    )
        -> KeyedEncodingContainer<NestedKey>
    {
        let child = node.child(forKey: JSONKeys.name(for: key))
        child.makeObject()
        return KeyedEncodingContainer(KeyedJSONContainer<NestedKey>(node: child, codingPath: codingPath + [key]))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = node.child(forKey: JSONKeys.name(for: key))
        child.makeArray()
        return UnkeyedJSONContainer(node: child, codingPath: codingPath + [key])
    }

    mutating func superEncoder() -> any Encoder {
        JSONNodeEncoder(node: node.child(forKey: "super"), codingPath: codingPath)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        JSONNodeEncoder(node: node.child(forKey: JSONKeys.name(for: key)), codingPath: codingPath + [key])
    }
}

struct UnkeyedJSONContainer: UnkeyedEncodingContainer {
    let node: JSONNode
    var codingPath: [any CodingKey]
    var count: Int {
        if case .array(let items) = node.content { return items.count }
        return 0
    }

    mutating func encodeNil() throws { node.appended().content = .value(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try JSONNodeEncoder.encode(value, into: node.appended(), path: codingPath)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    )
        -> KeyedEncodingContainer<NestedKey>
    {
        let child = node.appended()
        child.makeObject()
        return KeyedEncodingContainer(KeyedJSONContainer<NestedKey>(node: child, codingPath: codingPath))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = node.appended()
        child.makeArray()
        return UnkeyedJSONContainer(node: child, codingPath: codingPath)
    }

    mutating func superEncoder() -> any Encoder { JSONNodeEncoder(node: node.appended(), codingPath: codingPath) }
}

struct SingleJSONContainer: SingleValueEncodingContainer {
    let node: JSONNode
    var codingPath: [any CodingKey]

    mutating func encodeNil() throws { node.content = .value(.null) }
    mutating func encode(_ value: Bool) throws { node.content = .value(.bool(value)) }
    mutating func encode(_ value: String) throws { node.content = .value(.string(value)) }
    mutating func encode(_ value: Double) throws { node.content = .value(.number(value)) }
    mutating func encode(_ value: Float) throws { node.content = .value(.number(Double(value))) }
    mutating func encode(_ value: Int) throws { node.content = .value(.number(String(value))) }
    mutating func encode(_ value: Int8) throws { node.content = .value(.number(String(value))) }
    mutating func encode(_ value: Int16) throws { node.content = .value(.number(String(value))) }
    mutating func encode(_ value: Int32) throws { node.content = .value(.number(String(value))) }
    mutating func encode(_ value: Int64) throws { node.content = .value(.number(String(value))) }
    mutating func encode(_ value: UInt) throws { node.content = .value(.number(String(value))) }
    mutating func encode(_ value: UInt8) throws { node.content = .value(.number(String(value))) }
    mutating func encode(_ value: UInt16) throws { node.content = .value(.number(String(value))) }
    mutating func encode(_ value: UInt32) throws { node.content = .value(.number(String(value))) }
    mutating func encode(_ value: UInt64) throws { node.content = .value(.number(String(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try JSONNodeEncoder.encode(value, into: node, path: codingPath)
    }
}
