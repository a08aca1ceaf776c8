import Foundation

/// One thing a user did. `count` lets an app report many at once; an
/// `idempotencyKey` makes a retried report count once.
public struct TrackedEvent: Codable, Sendable, Equatable {
    /// The id of the user who acted.
    public var user: String
    /// The action, one of the profile's `actions` (any name when the profile allows free-form actions).
    public var action: String
    /// When it happened.
    public var at: Date
    /// How many times it happened (1 unless batched).
    public var count: Int
    /// A key that makes a retried event count once.
    public var idempotencyKey: String?
    /// Properties kept with the event.
    public var properties: [String: EventProperty]

    /// An event to track.
    public init(
        user: String, action: String, at: Date, count: Int = 1, idempotencyKey: String? = nil,
        properties: [String: EventProperty] = [:]
    ) {
        self.user = user
        self.action = action
        self.at = at
        self.count = count
        self.idempotencyKey = idempotencyKey
        self.properties = properties
    }
}

/// A property of an event: a string, or a number kept exactly as written
/// so it is stored and read back as a JSON number.
public enum EventProperty: Codable, Sendable, Equatable, ExpressibleByStringLiteral {
    case string(String)
    /// A valid JSON number, as written.
    case number(String)

    /// A string property written as a literal.
    public init(stringLiteral value: String) { self = .string(value) }

    /// Reads a JSON string, number or Boolean.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let text = try? container.decode(String.self) {
            self = .string(text)
        } else {
            self = .number(try container.decode(Decimal.self).description)
        }
    }

    /// Writes the value as JSON, a number exactly as written.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let text): try container.encode(text)
        case .number(let text): try container.encode(Decimal(string: text) ?? 0)
        }
    }
}

/// What tracking one event did.
public struct TrackResult: Codable, Sendable, Equatable {
    /// The user's id.
    public var user: String
    /// The action tracked.
    public var action: String
    /// False when the idempotency key had been seen: nothing was counted.
    public var isCounted: Bool
    /// The action's counter for the user after this event.
    public var total: Int

    package init(user: String, action: String, isCounted: Bool, total: Int) {
        self.user = user
        self.action = action
        self.isCounted = isCounted
        self.total = total
    }
}

/// A line of an event log that cannot be applied, and why.
public struct EventLogProblem: Codable, Sendable, Equatable, CustomStringConvertible {
    /// The line's number, from 1.
    public var line: Int
    /// What is wrong with it.
    public var message: String
    /// The line is valid but names a user the store does not have.
    public var isMissingUser = false
    /// The problem as `line N: message`.
    public var description: String { "line \(line): \(message)" }

    package init(line: Int, message: String, isMissingUser: Bool = false) {
        self.line = line
        self.message = message
        self.isMissingUser = isMissingUser
    }
}

/// What ingesting an event log did.
public struct IngestReport: Codable, Sendable {
    /// Lines read.
    public var lines: Int
    /// Events applied.
    public var applied: Int
    /// Valid lines whose idempotency key had already been counted.
    public var duplicates: Int
    /// Users the ingest created because an event named them.
    public var usersCreated: Int
    /// Lines that were not valid events.
    public var problems: [EventLogProblem]
    /// False when a problem stopped the whole log from being applied.
    public var isApplied: Bool
}

extension GuestMode {
    /// Tracks one event: counts it against the user's counter and keeps it in their history; an event repeated with its idempotency key counts once.
    ///
    /// ```swift
    /// let result = try engine.track(
    ///     TrackedEvent(user: guest.id, action: "recipe_viewed", at: now), now: now)
    /// // result.total is the user's recipe_viewed count
    /// ```
    public func track(_ event: TrackedEvent, now: Date) throws -> TrackResult {
        try event.checkText()
        if let problem = problem(with: event) { throw GuestModeError(.invalidEvent, problem) }
        return try store.write { transaction in
            _ = try transaction.requireUser(event.user, locking: true)
            let result = try transaction.track(event, profile: profile, now: now)
            if event.idempotencyKey != nil { try faults.afterKeyCheck(.track) }
            return result
        }
    }

    /// The user's counters: how many times they did each action.
    ///
    /// ```swift
    /// let viewed = try engine.counters(user: guest.id)["recipe_viewed"] ?? 0
    /// ```
    public func counters(user userID: String) throws -> [String: Int] {
        try TextRule.check(userID, what: "the user id")
        return try store.read { transaction in
            _ = try transaction.requireUser(userID)
            return try transaction.counters(of: userID)
        }
    }

    func problem(with event: TrackedEvent) -> String? {
        profile.problem(with: event)
    }

    /// Ingests an NDJSON event log. Lines are validated first, all of them;
    /// unless `skippingInvalid`, one bad line means nothing is applied. Each
    /// line is parsed once: the valid events are spooled (`EventSpool`, in
    /// constant memory) while validating, then applied from the spool in
    /// batches of one transaction: a run killed or cut off midway leaves
    /// nothing of the log, so repeating it is exact with or without ids.
    /// The spool gives the events back user by user, each user's in the
    /// log's order: what an event does depends only on its user's earlier
    /// events, and the store is written in key order, not all over it.
    public func ingest(
        log: URL, creatingUsers: Bool, skippingInvalid: Bool, now: Date, batchSize: Int = 5_000,
        progress: (Int) -> Void = { _ in }
    ) throws -> IngestReport {
        var problems: [EventLogProblem] = []
        var lineCount = 0
        var knownUsers = Set<String>()
        var missingUsers = Set<String>()
        let spool = EventSpool()
        try EventLog.forEachLine(
            in: log,
            invalidText: { number, error in
                lineCount = number
                problems.append(EventLogProblem(line: number, message: error.message))
            }
        ) { number, line in
            lineCount = number
            switch EventLog.decode(line, defaultTime: now) {
            case .failure(let message):
                problems.append(EventLogProblem(line: number, message: message.description))
            case .success(nil):
                break
            case .success(let event?):
                if let message = problem(with: event) {
                    problems.append(EventLogProblem(line: number, message: message))
                    return
                }
                if !creatingUsers && !knownUsers.contains(event.user) {
                    if try missingUsers.contains(event.user) || !containsUser(event.user) {
                        missingUsers.insert(event.user)
                        problems.append(
                            EventLogProblem(line: number, message: "no user '\(event.user)'", isMissingUser: true))
                        return
                    }
                    knownUsers.insert(event.user)
                }
                // Once a line is bad and bad lines are not skipped, nothing
                // will be applied: validation goes on, spooling stops.
                if skippingInvalid || problems.isEmpty { try spool.append(event) }
            }
        }
        if !problems.isEmpty && !skippingInvalid {
            return IngestReport(
                lines: lineCount, applied: 0, duplicates: 0, usersCreated: 0, problems: problems, isApplied: false)
        }
        var applied = 0
        var duplicates = 0
        var created = 0
        try store.write { transaction in
            // A serialization retry runs this again from the start of the spool.
            applied = 0
            duplicates = 0
            created = 0
            var ingestion = EventIngestion(creatingUsers: creatingUsers, profile: profile, now: now)
            var batch: [TrackedEvent] = []
            batch.reserveCapacity(min(batchSize, spool.count))
            var batchBytes = 0
            func flush() throws {
                guard !batch.isEmpty else { return }
                let result = try ingestion.apply(batch, in: transaction)
                applied += result.counted
                duplicates += result.duplicates
                created += result.usersCreated
                progress(applied + duplicates)
                batch.removeAll(keepingCapacity: true)
                batchBytes = 0
            }
            try spool.forEach { event in
                batchBytes += event.heldBytes
                batch.append(event)
                // By bytes too: 5,000 events whose properties fill their 1 MiB lines would be gigabytes.
                if batch.count >= batchSize || batchBytes >= ingestBatchByteLimit { try flush() }
            }
            try flush()
            try ingestion.finish(in: transaction)
        }
        return IngestReport(
            lines: lineCount, applied: applied, duplicates: duplicates, usersCreated: created, problems: problems,
            isApplied: true)
    }
}

/// The most bytes of events `ingest` applies in one batch (`TrackedEvent.heldBytes`).
private let ingestBatchByteLimit = 4 << 20

extension TrackedEvent {
    /// About the memory this event takes: its texts, and a little for each part.
    var heldBytes: Int {
        var bytes = 128 + user.utf8.count + action.utf8.count + (idempotencyKey?.utf8.count ?? 0)
        for (name, value) in properties {
            switch value {
            case .string(let text), .number(let text): bytes += 64 + name.utf8.count + text.utf8.count
            }
        }
        return bytes
    }
}

/// The NDJSON event log format shared by `track --from` and `replay`:
/// one object per line, `{"user","action","at","count","id","props"}`.
package enum EventLog {
    /// The longest line an event log may hold, newline excluded: 1 MiB.
    /// Documented in guestmode-track(1) and guestmode-replay(1).
    package static let maximumLineLength = 1 << 20

    /// Calls `body` with each line and its 1-based number, reading in chunks
    /// so a log of any size streams through in constant memory and linear
    /// time. A line longer than `maximumLineLength` (or an endless one, such
    /// as /dev/zero) is refused with exit 65 naming its number. A line that
    /// is not valid UTF-8 or holds a raw NUL byte is never repaired: it goes
    /// to `invalidText` (by default refused, naming the path and line).
    package static func forEachLine(
        in url: URL, maximumLineLength: Int = EventLog.maximumLineLength,
        invalidText: ((Int, GuestModeError) throws -> Void)? = nil, _ body: (Int, Substring) throws -> Void
    ) throws {
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            throw GuestModeError(.fileNotFound, "cannot open the event log '\(url.path)'")
        }
        defer { try? handle.close() }
        var pending: [UInt8] = []
        var number = 0
        func deliver(_ bytes: UnsafeBufferPointer<UInt8>) throws {
            // The common case costs one validation and one memchr; TextRule words the refusal.
            if let line = TextRule.validatedUTF8(bytes),
                bytes.isEmpty || memchr(bytes.baseAddress!, 0, bytes.count) == nil
            {
                return try body(number, Substring(line))
            }
            var refusal = GuestModeError(.invalidUtf8, "the line is not valid UTF-8")
            do {
                _ = try TextRule.decode(bytes, what: "the line")
            } catch let error as GuestModeError {
                refusal = error
            }
            guard let invalidText else {
                throw GuestModeError(refusal.code, "\(url.path):\(number): \(refusal.message)")
            }
            try invalidText(number, refusal)
        }
        func tooLong() -> GuestModeError {
            GuestModeError(
                .lineTooLong,
                "\(url.path):\(number + 1): the line is longer than \(maximumLineLength) bytes, the most an event log line may hold; split the log into one event per line"
            )
        }
        while true {
            let chunk = try handle.nextChunk(of: "the event log '\(url.path)'")
            if chunk.isEmpty { break }
            try chunk.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
                let bytes = raw.bindMemory(to: UInt8.self)
                var start = 0
                // Only the new bytes are searched: each byte is looked at once.
                while let newline = bytes[start...].firstIndex(of: 0x0A) {
                    number += 1
                    if pending.isEmpty {
                        guard newline - start <= maximumLineLength else { number -= 1; throw tooLong() }
                        try deliver(UnsafeBufferPointer(rebasing: bytes[start..<newline]))
                    } else {
                        guard pending.count + newline - start <= maximumLineLength else { number -= 1; throw tooLong() }
                        pending.append(contentsOf: bytes[start..<newline])
                        try pending.withUnsafeBufferPointer { try deliver($0) }
                        pending.removeAll(keepingCapacity: true)
                    }
                    start = newline + 1
                }
                guard pending.count + bytes.count - start <= maximumLineLength else { throw tooLong() }
                pending.append(contentsOf: bytes[start...])
            }
        }
        if !pending.isEmpty {
            number += 1
            try pending.withUnsafeBufferPointer { try deliver($0) }
        }
    }

    /// Decodes one line: nil for a blank line, a message for a bad one. The
    /// line is read by the strict JSON parser, so a boolean is never taken
    /// for a number and numbers keep the text they were written with.
    package static func decode(_ line: Substring, defaultTime: Date) -> Result<TrackedEvent?, DecodeFailure> {
        if let event = decodeCommon(line, defaultTime: defaultTime) { return .success(event) }
        return decodeStrictly(line, defaultTime: defaultTime)
    }

    /// `decode` through the strict JSON parser, for every line: what
    /// `decodeCommon` reads must read the same here.
    static func decodeStrictly(_ line: Substring, defaultTime: Date) -> Result<TrackedEvent?, DecodeFailure> {
        if line.allSatisfy(\.isWhitespace) { return .success(nil) }
        let object: [String: JSONValue]
        do {
            guard case .object(let members) = try StrictJSON.parse(line) else {
                return .failure("not a JSON object")
            }
            object = members
        } catch {
            return .failure(DecodeFailure("not a JSON object: \(error)"))
        }
        if let unknown = object.keys.filter({ !knownFields.contains($0) }).min() {
            return .failure(DecodeFailure("unknown field '\(unknown)'; expected user, action, at, count, id, props"))
        }
        guard case .string(let user)? = object["user"] else { return .failure("'user' must be a string") }
        guard case .string(let action)? = object["action"] else { return .failure("'action' must be a string") }
        var at = defaultTime
        if let value = object["at"] {
            guard case .string(let text) = value, let date = Timestamp.parse(text) else {
                return .failure("'at' must be an ISO 8601 time such as 2026-11-22T09:30:00Z")
            }
            at = date
        }
        var count = 1
        if let value = object["count"] {
            guard case .number(let text) = value, let number = Double(text), number.rounded() == number else {
                return .failure("'count' must be a whole number")
            }
            guard number >= 1 && number <= 1_000_000_000 else {
                return .failure(DecodeFailure("'count' must be from 1 to 1000000000, not \(text)"))
            }
            count = Int(number)
        }
        var key: String?
        if let value = object["id"] {
            guard case .string(let text) = value else { return .failure("'id' must be a string") }
            key = text
        }
        var properties: [String: EventProperty] = [:]
        if let value = object["props"] {
            guard case .object(let dictionary) = value else { return .failure("'props' must be an object") }
            for (name, property) in dictionary {
                switch property {
                case .string(let text): properties[name] = .string(text)
                case .number(let text): properties[name] = .number(text)
                default: return .failure(DecodeFailure("property '\(name)' must be a string or a number"))
                }
            }
        }
        return .success(
            TrackedEvent(user: user, action: action, at: at, count: count, idempotencyKey: key, properties: properties))
    }

    private static let knownFields: Set<String> = ["user", "action", "at", "count", "id", "props"]

    /// The line as `decode` reads it, when it is the common kind: one
    /// object of `user`, `action`, `at`, `count` and `id` (each at most
    /// once), strings of ASCII without escapes, `count` a whole number
    /// written with digits only, no `props`. It is read in place, with no
    /// JSON tree, key dictionary or array copy of the line (the strict parse
    /// was half of validating a log). Anything else gives nil, and the
    /// strict parser reads the line and words what is wrong: what this
    /// accepts, the strict path accepts as the same event
    /// (`EventLogTests.commonLinesDecodeAsTheStrictParserReadsThem`).
    static func decodeCommon(_ line: Substring, defaultTime: Date) -> TrackedEvent? {
        let decoded = line.utf8.withContiguousStorageIfAvailable { bytes -> TrackedEvent? in
            var reader = CommonEventReader(bytes: bytes)
            return reader.event(defaultTime: defaultTime)
        }
        return decoded ?? nil
    }

    package struct DecodeFailure: Error, ExpressibleByStringLiteral, CustomStringConvertible {
        package var description: String
        package init(stringLiteral value: String) { description = value }
        init(_ value: String) { description = value }
    }

    /// Properties as stored with an event: a JSON object with sorted keys,
    /// numbers as numbers.
    package static func encodeProperties(_ properties: [String: EventProperty]) -> String {
        JSONValue.object(
            properties.mapValues { property in
                switch property {
                case .string(let text): .string(text)
                case .number(let text): .number(text)
                }
            }
        ).canonicalText
    }

    package static func encodeProperties(_ properties: [String: String]) -> String {
        encodeProperties(properties.mapValues { EventProperty.string($0) })
    }
}

/// Reads one common event line for `EventLog.decodeCommon`; every method
/// gives nil (or false) at the first byte it does not expect.
private struct CommonEventReader {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// JSON's whitespace, as the strict parser skips it.
    mutating func skipWhitespace() {
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

    /// A string's content: ASCII from 0x20, no quote, no backslash.
    mutating func string() -> UnsafeBufferPointer<UInt8>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return UnsafeBufferPointer(rebasing: bytes[start..<(index - 1)])
            }
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        return nil
    }

    /// A count from 1 to 1,000,000,000 written as digits only, no leading zero.
    mutating func count() -> Int? {
        var value = 0
        var digits = 0
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
            if digits == 0 && bytes[index] == UInt8(ascii: "0") { return nil }
            value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
            digits += 1
            index += 1
            if digits > 10 { return nil }
        }
        guard digits > 0, value <= 1_000_000_000 else { return nil }
        return value
    }

    mutating func event(defaultTime: Date) -> TrackedEvent? {
        skipWhitespace()
        guard take(UInt8(ascii: "{")) else { return nil }
        var user: String?
        var action: String?
        var at: Date?
        var count: Int?
        var key: String?
        repeat {
            skipWhitespace()
            guard let name = string() else { return nil }
            skipWhitespace()
            guard take(UInt8(ascii: ":")) else { return nil }
            skipWhitespace()
            switch Field(name) {
            case .user?:
                guard user == nil, let text = string() else { return nil }
                user = String(decoding: text, as: UTF8.self)
            case .action?:
                guard action == nil, let text = string() else { return nil }
                action = String(decoding: text, as: UTF8.self)
            case .at?:
                guard at == nil, let text = string(), let date = Timestamp.parse(bytes: text) else { return nil }
                at = date
            case .count?:
                guard count == nil, let value = self.count() else { return nil }
                count = value
            case .id?:
                guard key == nil, let text = string() else { return nil }
                key = String(decoding: text, as: UTF8.self)
            case nil:
                return nil
            }
            skipWhitespace()
        } while take(UInt8(ascii: ","))
        guard take(UInt8(ascii: "}")) else { return nil }
        skipWhitespace()
        guard index == bytes.count, let user, let action else { return nil }
        return TrackedEvent(
            user: user, action: action, at: at ?? defaultTime, count: count ?? 1, idempotencyKey: key)
    }

    /// The members this reader takes; `props` is left to the strict parser.
    enum Field {
        case user, action, at, count, id

        init?(_ name: UnsafeBufferPointer<UInt8>) {
            switch name.count {
            case 2 where name.elementsEqual("at".utf8): self = .at
            case 2 where name.elementsEqual("id".utf8): self = .id
            case 4 where name.elementsEqual("user".utf8): self = .user
            case 5 where name.elementsEqual("count".utf8): self = .count
            case 6 where name.elementsEqual("action".utf8): self = .action
            default: return nil
            }
        }
    }
}
