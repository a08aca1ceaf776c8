import Foundation
import Synchronization

/// The JSON every command prints and every `guestmode serve` answer holds, built by one encoder so that
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
/// Engine types keep their Swift names; a type whose JSON names differ from what these conventions give
/// declares them (`JSONNamed`).
package enum JSONDocument {
    package static func encode<T: Encodable>(_ value: T, pretty: Bool = true) throws -> String {
        try encode(value, pretty: pretty, lineEnd: false)
    }

    /// `encode(value)` and a line break, as a command prints a document and a server answers it, made one
    /// string at once: a document and "\n" added together copied the document into a new string.
    package static func encodeLine<T: Encodable>(_ value: T, pretty: Bool = true) throws -> String {
        try encode(value, pretty: pretty, lineEnd: true)
    }

    private static func encode<T: Encodable>(_ value: T, pretty: Bool, lineEnd: Bool) throws -> String {
        let node = JSONNode()
        try JSONNodeEncoder.encode(value, into: node, at: nil)
        // Written from the nodes: resolving them into `JSONValue`s first made every object a dictionary,
        // hashing each name, only to sort it again (bench/results.md, "Serving, round 7").
        var output: [UInt8] = []
        output.reserveCapacity(256)
        node.write(to: &output, pretty: pretty, indent: 0)
        if lineEnd { output.append(UInt8(ascii: "\n")) }
        return String(decoding: output, as: UTF8.self)
    }
}

/// A type whose JSON names differ from those the conventions above derive
/// from its property names: a user's `id` is `user_id`, an event's `event_id`.
/// The engine's types declare theirs in `JSONNames.swift`.
package protocol JSONNamed {
    /// JSON names by Swift property name; other properties follow the conventions.
    static var jsonNames: [String: String] { get }
}

/// Property names → documented JSON names.
enum JSONKeys {
    /// Renames wherever the key appears.
    static let everywhere: [String: String] = [
        "user": "user_id",
        "created": "created_at",
        "was_already_adopted": "already_adopted",
    ]

    /// The JSON name of `key` of a value whose type names some of its keys itself (`names`); `known` holds
    /// the names found so far for the key's type, and `next` where among them the next key is likely to be.
    static func name(for key: some CodingKey, names: [String: String], known: KeyNames, next: inout Int) -> String {
        let swiftName = key.stringValue
        if !names.isEmpty, let named = names[swiftName] { return named }
        if known.areData { return swiftName }
        if let cached = known.name(for: swiftName, next: &next) { return cached }
        let name = conventionalName(for: swiftName)
        known.store(name, for: swiftName)
        return name
    }

    private static func conventionalName(for swiftName: String) -> String {
        var name = snakeCase(swiftName)
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

/// The conventional JSON names of one key type's keys, each found the first time it is written and kept:
/// reflecting on a key type's name for every key of every row of a long listing would cost more than
/// encoding it. A type's few names are found by a scan, in which a key's name compared with the literal it
/// was made from is a comparison of their bits; one dictionary keyed by type and name hashed every key of
/// every document, 22 k instructions of a served `prompt next` (bench/results.md, "Serving, round 8").
final class KeyNames: Sendable {
    private static let byType = Mutex<[ObjectIdentifier: KeyNames]>([:])

    /// Whether the type's keys are data (a dictionary's: action names, table names), written as they are
    /// and not kept.
    let areData: Bool
    private let names = Mutex<[(swiftName: String, jsonName: String)]>([])

    private init(areData: Bool) { self.areData = areData }

    static func of<Key: CodingKey>(_ type: Key.Type) -> KeyNames {
        byType.withLock { known in
            if let names = known[ObjectIdentifier(type)] { return names }
            // The type's name from `_typeName`, not `String(reflecting:)`, whose printing machinery first asks
            // the metatype for a handful of protocol conformances, each a scan of the binary's records: 3.2 M
            // instructions of every `--json` command (bench/results.md, "Start-up").
            let typeName = _typeName(type, qualified: true)
            let names = KeyNames(
                areData: typeName.contains("DictionaryCodingKey") || typeName.contains("DictionaryKey"))
            known[ObjectIdentifier(type)] = names
            return names
        }
    }

    /// The name kept for `swiftName`, looked for first at `next`, and `next` moved past it: a type's keys
    /// are written in the same order each time, so the first comparison usually finds it (a scan from the
    /// start compared a key with half its type's keys, 12 k instructions of a served `prompt next`).
    func name(for swiftName: String, next: inout Int) -> String? {
        names.withLock { names in
            if next < names.count, names[next].swiftName == swiftName {
                next += 1
                return names[next - 1].jsonName
            }
            guard let index = names.firstIndex(where: { $0.swiftName == swiftName }) else { return nil }
            next = index + 1
            return names[index].jsonName
        }
    }

    func store(_ jsonName: String, for swiftName: String) {
        names.withLock { names in
            if !names.contains(where: { $0.swiftName == swiftName }) { names.append((swiftName, jsonName)) }
        }
    }
}

extension JSONValue {
    /// An object from name-value pairs in the order they were built; a later
    /// value for a name replaces an earlier one, as with JSONEncoder.
    package static func object(_ members: [(String, JSONValue)]) -> JSONValue {
        .object(Dictionary(members, uniquingKeysWith: { _, later in later }))
    }

    /// Six decimals at most, no exponent, no trailing zeros; NaN and infinities as null.
    package static func number(_ value: Double) -> JSONValue {
        guard value.isFinite else { return .null }
        let millionths = (value * 1_000_000).rounded()
        let rounded = millionths / 1_000_000
        if rounded == rounded.rounded(), abs(rounded) < 1e15 { return .number(String(Int64(rounded))) }
        var text: String
        // Below 4e9 a double is exact to far better than a millionth, so the millionths' digits are what
        // "%.6f" prints; written in Swift, since Foundation's formatting costs its first use about 1.5 M
        // instructions (bench/results.md, "Start-up"). Larger values keep Foundation's digits.
        if abs(millionths) < 4e15 {
            let magnitude = Int64(abs(millionths))
            let fraction = String(magnitude % 1_000_000)
            text =
                (millionths < 0 ? "-" : "") + String(magnitude / 1_000_000) + "."
                + String(repeating: "0", count: 6 - fraction.count) + fraction
        } else {
            text = String(format: "%.6f", rounded)
        }
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
        return .number(text)
    }
}

/// A value being built: set once, or filled as an array or object by containers. Its members and elements
/// are stored properties appended to in place: held in an enum's payload, each append took the array out and
/// put it back, and members as tuples were copied by the run-time's generic tuple functions (bench/results.md,
/// "Serving, round 14").
final class JSONNode {
    /// A member or element: a plain value is held as it is, without a node of its own (a node each was an
    /// allocation and a release for every string and number of a document).
    enum Child {
        case value(JSONValue)
        case node(JSONNode)

        func write(to output: inout [UInt8], pretty: Bool, indent: Int) {
            switch self {
            case .value(let value): value.write(to: &output, pretty: pretty, indent: indent)
            case .node(let node): node.write(to: &output, pretty: pretty, indent: indent)
            }
        }
    }

    struct Member {
        let name: String
        let child: Child
    }

    enum Kind { case unset, value, array, object }

    // A node is built and written by the one encoder that made it, on one thread, and no access to these
    // overlaps another; the run-time's check of each access was two calls and about 130 instructions, 42 of
    // them a served `prompt next` (bench/results.md, "Serving, round 19").
    @exclusivity(unchecked) private(set) var kind = Kind.unset
    @exclusivity(unchecked) private var value = JSONValue.null
    @exclusivity(unchecked) private var members: [Member] = []
    @exclusivity(unchecked) private var elements: [Child] = []

    /// How many elements an array holds; 0 for anything else.
    var elementCount: Int { kind == .array ? elements.count : 0 }

    /// Makes the node the plain `value`, whatever it held.
    func set(_ value: JSONValue) {
        clear(to: .value)
        self.value = value
    }

    /// The value as `JSONValue.text(pretty:)` would write it resolved: an unset node as `{}`, an object's
    /// members sorted by name, and of two members with one name the later, as with JSONEncoder.
    func write(to output: inout [UInt8], pretty: Bool, indent: Int) {
        switch kind {
        case .unset: JSONValue.append("{}", to: &output)
        case .value: value.write(to: &output, pretty: pretty, indent: indent)
        case .array:
            JSONValue.writeArray(elements, to: &output, pretty: pretty, indent: indent) { child, output in
                child.write(to: &output, pretty: pretty, indent: indent + 1)
            }
        case .object:
            guard !members.isEmpty else { return JSONValue.append("{}", to: &output) }
            output.append(UInt8(ascii: "{"))
            // Sorted stably, so of two members with one name the later is the last of its run; in place, as
            // nothing reads the members in the order they came: a sorted copy was an allocation and a retain
            // and release of every member.
            members.sort { $0.name < $1.name }
            let ordered = members
            var written = 0
            for (index, member) in ordered.enumerated()
            where index + 1 == ordered.count || ordered[index + 1].name != member.name {
                JSONValue.open(written, name: member.name, in: &output, pretty: pretty, indent: indent + 1)
                member.child.write(to: &output, pretty: pretty, indent: indent + 1)
                written += 1
            }
            JSONValue.close(UInt8(ascii: "}"), in: &output, pretty: pretty, indent: indent)
        }
    }

    /// A new node, member `key` of this object.
    func child(forKey key: String) -> JSONNode {
        let node = JSONNode()
        append(.node(node), forKey: key)
        return node
    }

    func append(_ child: Child, forKey key: String) {
        makeObject()
        members.append(Member(name: key, child: child))
    }

    /// A new node, the next element of this array.
    func appended() -> JSONNode {
        let node = JSONNode()
        append(.node(node))
        return node
    }

    func append(_ child: Child) {
        makeArray()
        elements.append(child)
    }

    func makeObject() {
        guard kind != .object else { return }
        clear(to: .object)
        members.reserveCapacity(8)
    }

    func makeArray() {
        guard kind != .array else { return }
        clear(to: .array)
    }

    /// Drops what the node held, as a new value of another kind replaces it.
    private func clear(to kind: Kind) {
        switch self.kind {
        case .unset: break
        case .value: value = .null
        case .array: elements = []
        case .object: members = []
        }
        self.kind = kind
    }
}

/// Where a value sits in the document: made only for a value that is given an encoder of its own (a string
/// or a number is written without one), and made a `[CodingKey]` only when something asks for `codingPath`.
/// Each nested value copied its parent's path and appended its key before, two arrays a value.
final class CodingPathNode {
    let key: any CodingKey
    let parent: CodingPathNode?

    init(_ key: any CodingKey, parent: CodingPathNode?) {
        self.key = key
        self.parent = parent
    }

    static func path(to node: CodingPathNode?) -> [any CodingKey] {
        var keys: [any CodingKey] = []
        var current = node
        while let step = current {
            keys.append(step.key)
            current = step.parent
        }
        return keys.reversed()
    }
}

/// What the encoder needs to know of a type besides its own `encode(to:)`: whether it is a dictionary keyed
/// by strings, written with its keys sorted, and the JSON names it declares (`JSONNamed`). Found by dynamic
/// casts the first time a type is met and kept: two casts for every value were 32 k instructions of a served
/// `prompt next` (bench/results.md, "Serving, round 8").
enum EncodableShape: Sendable {
    case stringKeyedDictionary
    case named([String: String])

    private static let known = Mutex<[ObjectIdentifier: EncodableShape]>([:])

    static func of<T: Encodable>(_ value: T) -> EncodableShape {
        // The value's own type: a class's instance may be of a subclass that declares other names.
        let type = ObjectIdentifier(Swift.type(of: value))
        if let shape = known.withLock({ $0[type] }) { return shape }
        let shape: EncodableShape =
            if value is [String: any Encodable] {
                .stringKeyedDictionary
            } else {
                .named((value as? any JSONNamed).map { Swift.type(of: $0).jsonNames } ?? [:])
            }
        known.withLock { $0[type] = shape }
        return shape
    }
}

struct JSONNodeEncoder: Encoder {
    let node: JSONNode
    let location: CodingPathNode?
    /// The JSON names the value being encoded declares (`JSONNamed`).
    var names: [String: String] = [:]
    var codingPath: [any CodingKey] { CodingPathNode.path(to: location) }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Writes `value` into `node`; `location` is asked for only when the value is given an encoder.
    static func encode<T: Encodable>(
        _ value: T, into node: JSONNode, at location: @autoclosure () -> CodingPathNode?
    ) throws {
        if let scalar = scalarValue(value) {
            node.set(scalar)
            return
        }
        try encodeComposite(value, into: node, at: location())
    }

    /// `value` as member `key` of `object`, or as the next element of `array`: a plain value is held as it
    /// is, anything else gets a node of its own.
    static func encode<T: Encodable>(
        _ value: T, intoMember key: String, of object: JSONNode, at location: @autoclosure () -> CodingPathNode?
    ) throws {
        if let scalar = scalarValue(value) { return object.append(.value(scalar), forKey: key) }
        try encodeComposite(value, into: object.child(forKey: key), at: location())
    }

    static func encode<T: Encodable>(
        _ value: T, appendedTo array: JSONNode, at location: CodingPathNode?
    ) throws {
        if let scalar = scalarValue(value) { return array.append(.value(scalar)) }
        try encodeComposite(value, into: array.appended(), at: location)
    }

    private static func encodeComposite<T: Encodable>(
        _ value: T, into node: JSONNode, at location: @autoclosure () -> CodingPathNode?
    ) throws {
        switch EncodableShape.of(value) {
        case .stringKeyedDictionary:
            guard let dictionary = value as? [String: any Encodable] else { break }
            node.makeObject()
            let location = location()
            for key in dictionary.keys.sorted() {
                guard let item = dictionary[key] else { continue }
                try encode(item, intoMember: key, of: node, at: location)
            }
            return
        case .named(let names):
            return try value.encode(to: JSONNodeEncoder(node: node, location: location(), names: names))
        }
        try value.encode(to: JSONNodeEncoder(node: node, location: location()))
    }

    /// The JSON of a value written without an encoder of its own, or nil: the plain values, as their own
    /// `encode(to:)` would write them through a single-value container, and the types these conventions
    /// write themselves. The type is compared first, and the value is then that type: casting every value
    /// to each of these types in turn was 76 dynamic casts a served answer (bench/results.md, "Serving,
    /// round 5"), and a cast of the one that matched still looked up its `Optional`'s metadata, about 500
    /// instructions a value ("Serving, round 17").
    private static func scalarValue<T>(_ value: T) -> JSONValue? {
        switch ObjectIdentifier(T.self) {
        case ObjectIdentifier(String.self): .string(known(value, String.self))
        case ObjectIdentifier(Bool.self): .bool(known(value, Bool.self))
        case ObjectIdentifier(Int.self): .number(String(known(value, Int.self)))
        case ObjectIdentifier(Int64.self): .number(String(known(value, Int64.self)))
        case ObjectIdentifier(Int32.self): .number(String(known(value, Int32.self)))
        case ObjectIdentifier(UInt64.self): .number(String(known(value, UInt64.self)))
        case ObjectIdentifier(Date.self): .string(Timestamp.format(known(value, Date.self)))
        case ObjectIdentifier(Decimal.self): .number(known(value, Decimal.self).description)
        // Its own Encodable goes through Decimal, which would rewrite 1.50 as 1.5.
        case ObjectIdentifier(EventProperty.self): known(value, EventProperty.self).jsonValue
        case ObjectIdentifier(JSONValue.self): known(value, JSONValue.self)
        case ObjectIdentifier(Double.self): .number(known(value, Double.self))
        case ObjectIdentifier(Float.self): .number(Double(known(value, Float.self)))
        case ObjectIdentifier(URL.self):
            Optional(known(value, URL.self)).map { .string($0.isFileURL ? $0.path : $0.absoluteString) }
        case ObjectIdentifier(Data.self): .string(known(value, Data.self).base64EncodedString())
        // The engine's amounts and plain enums, as their own `encode(to:)` writes them through a single-value
        // container; each cost an encoder, a container and a node of its own, about 600 instructions
        // (bench/results.md, "Serving, round 14"). Named here, not found by a cast to a protocol, which looks
        // the conformance up for every value that is not one (`JSONDocumentTests` holds each to its own).
        // An amount's own digits are its `Decimal`'s, without Foundation's `Decimal.description`: 1.5 k
        // instructions an amount, three in a served `meter check` ("Serving, round 19").
        case ObjectIdentifier(MeterAmount.self): .number(known(value, MeterAmount.self).description)
        case ObjectIdentifier(TierLevel.self): rawValue(value, as: TierLevel.self)
        case ObjectIdentifier(MeterLevel.self): rawValue(value, as: MeterLevel.self)
        case ObjectIdentifier(MeterGrantState.self): rawValue(value, as: MeterGrantState.self)
        case ObjectIdentifier(PlanState.self): rawValue(value, as: PlanState.self)
        case ObjectIdentifier(CapOutcome.self): rawValue(value, as: CapOutcome.self)
        case ObjectIdentifier(UserState.self): rawValue(value, as: UserState.self)
        case ObjectIdentifier(PromptPriority.self): rawValue(value, as: PromptPriority.self)
        case ObjectIdentifier(PromptKind.self): rawValue(value, as: PromptKind.self)
        case ObjectIdentifier(PromptVerdict.self): rawValue(value, as: PromptVerdict.self)
        case ObjectIdentifier(PromptOutcome.self): rawValue(value, as: PromptOutcome.self)
        case ObjectIdentifier(PromptState.self): rawValue(value, as: PromptState.self)
        default: nil
        }
    }

    /// `value` as `Known`, the type `scalarValue` found `T` to be: the same type, so the bits are the value.
    @inline(__always) private static func known<T, Known>(_ value: T, _: Known.Type) -> Known {
        unsafeBitCast(value, to: Known.self)
    }

    private static func rawValue<T, Plain: RawRepresentable<String>>(_ value: T, as type: Plain.Type) -> JSONValue? {
        .string(known(value, Plain.self).rawValue)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        node.makeObject()
        return KeyedEncodingContainer(KeyedJSONContainer<Key>(node: node, location: location, names: names))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        node.makeArray()
        return UnkeyedJSONContainer(node: node, location: location, names: names)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleJSONContainer(node: node, location: location)
    }
}

struct KeyedJSONContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: JSONNode
    let location: CodingPathNode?
    let names: [String: String]
    private let known = KeyNames.of(Key.self)
    private var nextName = 0
    var codingPath: [any CodingKey] { CodingPathNode.path(to: location) }

    init(node: JSONNode, location: CodingPathNode?, names: [String: String]) {
        self.node = node
        self.location = location
        self.names = names
    }

    private mutating func name(_ key: Key) -> String {
        JSONKeys.name(for: key, names: names, known: known, next: &nextName)
    }

    private mutating func set(_ value: JSONValue, _ key: Key) {
        node.append(.value(value), forKey: name(key))
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
            value, intoMember: name(key), of: node, at: CodingPathNode(key, parent: location))
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
        let child = node.child(forKey: name(key))
        child.makeObject()
        return KeyedEncodingContainer(
            KeyedJSONContainer<NestedKey>(node: child, location: CodingPathNode(key, parent: location), names: names))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let child = node.child(forKey: name(key))
        child.makeArray()
        return UnkeyedJSONContainer(node: child, location: CodingPathNode(key, parent: location), names: names)
    }

    mutating func superEncoder() -> any Encoder {
        JSONNodeEncoder(node: node.child(forKey: "super"), location: location)
    }

    mutating func superEncoder(forKey key: Key) -> any Encoder {
        JSONNodeEncoder(node: node.child(forKey: name(key)), location: CodingPathNode(key, parent: location))
    }
}

struct UnkeyedJSONContainer: UnkeyedEncodingContainer {
    let node: JSONNode
    let location: CodingPathNode?
    /// The names of the value whose container this is, for keyed containers nested in it.
    let names: [String: String]
    var codingPath: [any CodingKey] { CodingPathNode.path(to: location) }
    var count: Int {
        node.elementCount
    }

    mutating func encodeNil() throws { node.append(.value(.null)) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try JSONNodeEncoder.encode(value, appendedTo: node, at: location)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    )
        -> KeyedEncodingContainer<NestedKey>
    {
        let child = node.appended()
        child.makeObject()
        return KeyedEncodingContainer(KeyedJSONContainer<NestedKey>(node: child, location: location, names: names))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let child = node.appended()
        child.makeArray()
        return UnkeyedJSONContainer(node: child, location: location, names: names)
    }

    mutating func superEncoder() -> any Encoder { JSONNodeEncoder(node: node.appended(), location: location) }
}

struct SingleJSONContainer: SingleValueEncodingContainer {
    let node: JSONNode
    let location: CodingPathNode?
    var codingPath: [any CodingKey] { CodingPathNode.path(to: location) }

    mutating func encodeNil() throws { node.set(.null) }
    mutating func encode(_ value: Bool) throws { node.set(.bool(value)) }
    mutating func encode(_ value: String) throws { node.set(.string(value)) }
    mutating func encode(_ value: Double) throws { node.set(.number(value)) }
    mutating func encode(_ value: Float) throws { node.set(.number(Double(value))) }
    mutating func encode(_ value: Int) throws { node.set(.number(String(value))) }
    mutating func encode(_ value: Int8) throws { node.set(.number(String(value))) }
    mutating func encode(_ value: Int16) throws { node.set(.number(String(value))) }
    mutating func encode(_ value: Int32) throws { node.set(.number(String(value))) }
    mutating func encode(_ value: Int64) throws { node.set(.number(String(value))) }
    mutating func encode(_ value: UInt) throws { node.set(.number(String(value))) }
    mutating func encode(_ value: UInt8) throws { node.set(.number(String(value))) }
    mutating func encode(_ value: UInt16) throws { node.set(.number(String(value))) }
    mutating func encode(_ value: UInt32) throws { node.set(.number(String(value))) }
    mutating func encode(_ value: UInt64) throws { node.set(.number(String(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws {
        try JSONNodeEncoder.encode(value, into: node, at: location)
    }
}

extension EventProperty {
    /// The property as JSON, a number with the digits it was written with.
    var jsonValue: JSONValue {
        switch self {
        case .string(let text): .string(text)
        case .number(let text): .number(text)
        }
    }
}

/// Through `JSONDocument` a value is written as it is, numbers with their digits; other encoders
/// (Foundation's) get numbers as `Decimal`, the nearest they have.
extension JSONValue: Codable {
    private struct Member: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    package func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let value):
            var container = encoder.singleValueContainer()
            try container.encode(value)
        case .number(let text):
            var container = encoder.singleValueContainer()
            if let decimal = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")) {
                try container.encode(decimal)
            } else {
                try container.encode(text)
            }
        case .string(let text):
            var container = encoder.singleValueContainer()
            try container.encode(text)
        case .array(let elements):
            var container = encoder.unkeyedContainer()
            for element in elements { try container.encode(element) }
        case .object(let members):
            var container = encoder.container(keyedBy: Member.self)
            for name in members.keys.sorted() {
                try container.encode(members[name], forKey: Member(stringValue: name))
            }
        }
    }

    package init(from decoder: any Decoder) throws {
        if let container = try? decoder.container(keyedBy: Member.self) {
            var members: [String: JSONValue] = [:]
            for key in container.allKeys {
                members[key.stringValue] = try container.decode(JSONValue.self, forKey: key)
            }
            self = .object(members)
        } else if var container = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            while !container.isAtEnd { elements.append(try container.decode(JSONValue.self)) }
            self = .array(elements)
        } else {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let text = try? container.decode(String.self) {
                self = .string(text)
            } else {
                self = .number(try container.decode(Decimal.self).description)
            }
        }
    }
}
