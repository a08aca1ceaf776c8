import Foundation
import GRDB

/// One thing a user did. `count` lets an app report many at once; an
/// `idempotencyKey` makes a retried report count once.
public struct TrackedEvent: Codable, Sendable, Equatable {
    public var user: String
    public var action: String
    public var at: Date
    public var count: Int
    public var idempotencyKey: String?
    public var properties: [String: String]

    public init(
        user: String, action: String, at: Date, count: Int = 1, idempotencyKey: String? = nil,
        properties: [String: String] = [:]
    ) {
        self.user = user
        self.action = action
        self.at = at
        self.count = count
        self.idempotencyKey = idempotencyKey
        self.properties = properties
    }
}

public struct TrackResult: Codable, Sendable, Equatable {
    public var user: String
    public var action: String
    /// False when the idempotency key had been seen: nothing was counted.
    public var isCounted: Bool
    public var total: Int
}

/// A line of an event log that cannot be applied, and why.
public struct EventLogProblem: Codable, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var message: String
    public var description: String { "line \(line): \(message)" }
}

public struct IngestReport: Codable, Sendable {
    public var lines: Int
    public var applied: Int
    /// Valid lines whose idempotency key had already been counted.
    public var duplicates: Int
    public var usersCreated: Int
    public var problems: [EventLogProblem]
    public var isApplied: Bool
}

/// Actions guestmode itself records; they are never refused as unknown.
let systemActions: Set<String> = [
    "account_upgrade_started", "account_upgrade_succeeded", "account_upgrade_failed", "account_unlinked",
    "meter_warning",
]

extension GuestMode {
    public func track(_ event: TrackedEvent, now: Date) throws -> TrackResult {
        if let problem = problem(with: event) { throw GuestModeError.usage(problem, code: "invalid_event") }
        return try store.write { db in
            _ = try store.requireUser(event.user, db)
            return try store.apply(event, profile: profile, now: now, db)
        }
    }

    public func counters(of userID: String) throws -> [String: Int] {
        try store.read { db in
            _ = try store.requireUser(userID, db)
            return try store.counters(of: userID, db)
        }
    }

    func problem(with event: TrackedEvent) -> String? {
        if event.user.isEmpty { return "the user is empty" }
        if event.action.isEmpty { return "the action is empty" }
        if !profile.allowsFreeFormActions && !profile.actions.contains(event.action) {
            return "unknown action '\(event.action)'; this profile's actions are: \(profile.actions.joined(separator: ", "))"
        }
        if event.count < 1 { return "count must be at least 1, not \(event.count)" }
        if let key = event.idempotencyKey, key.isEmpty { return "the idempotency key is empty" }
        return nil
    }

    /// Ingests an NDJSON event log. Lines are validated first, all of them;
    /// unless `skippingInvalid`, one bad line means nothing is applied. Valid
    /// lines are then applied in batched transactions, so a run killed midway
    /// can simply be repeated: idempotency keys make the repeat exact.
    public func ingest(
        log: URL, creatingUsers: Bool, skippingInvalid: Bool, now: Date, batchSize: Int = 5_000,
        progress: (Int) -> Void = { _ in }
    ) throws -> IngestReport {
        var problems: [EventLogProblem] = []
        var lineCount = 0
        var knownUsers = Set<String>()
        var missingUsers = Set<String>()
        try EventLog.forEachLine(in: log) { number, line in
            lineCount = number
            switch EventLog.decode(line, defaultTime: now) {
            case .failure(let message):
                problems.append(EventLogProblem(line: number, message: message.description))
            case .success(nil):
                break
            case .success(let event?):
                if let message = problem(with: event) {
                    problems.append(EventLogProblem(line: number, message: message))
                } else if !creatingUsers && !knownUsers.contains(event.user) {
                    if try missingUsers.contains(event.user) || !userExists(event.user) {
                        missingUsers.insert(event.user)
                        problems.append(
                            EventLogProblem(line: number, message: "no user '\(event.user)' (use --create-users to create guests)"))
                    } else {
                        knownUsers.insert(event.user)
                    }
                }
            }
        }
        if !problems.isEmpty && !skippingInvalid {
            return IngestReport(
                lines: lineCount, applied: 0, duplicates: 0, usersCreated: 0, problems: problems, isApplied: false)
        }
        let invalidLines = Set(problems.map(\.line))
        var applied = 0
        var duplicates = 0
        var created = 0
        var batch: [TrackedEvent] = []
        var existingUsers = Set<String>()
        func flush() throws {
            guard !batch.isEmpty else { return }
            try store.write { db in
                if creatingUsers {
                    for event in batch where !existingUsers.contains(event.user) {
                        if try store.findUser(event.user, db) == nil {
                            try store.insert(
                                User(
                                    id: event.user, device: nil, state: .anonymous, promptState: "anonymous",
                                    createdAt: event.at, lastSeenAt: event.at, linkedAt: nil), db)
                            created += 1
                        }
                        existingUsers.insert(event.user)
                    }
                }
                let result = try store.applyBatch(batch, profile: profile, now: now, db)
                applied += result.counted
                duplicates += result.duplicates
            }
            progress(applied + duplicates)
            batch.removeAll(keepingCapacity: true)
        }
        try EventLog.forEachLine(in: log) { number, line in
            guard !invalidLines.contains(number), case .success(let event?) = EventLog.decode(line, defaultTime: now) else {
                return
            }
            batch.append(event)
            if batch.count >= batchSize { try flush() }
        }
        try flush()
        return IngestReport(
            lines: lineCount, applied: applied, duplicates: duplicates, usersCreated: created, problems: problems,
            isApplied: true)
    }

    private func userExists(_ id: String) throws -> Bool {
        try store.read { db in try store.findUser(id, db) != nil }
    }
}

extension SQLiteStore {
    /// Appends the event unless its idempotency key was seen, and bumps the
    /// counter by its count in the same transaction.
    func apply(_ event: TrackedEvent, profile: Profile, now: Date, _ db: Database) throws -> TrackResult {
        let isCounted = try append(event, db)
        if isCounted {
            try addToCounter(user: event.user, action: event.action, count: event.count, db)
            try touch(event.user, at: event.at, db)
            try noteChange(of: event.user, profile: profile, now: now, db)
        }
        let total = try Int.fetchOne(
            db.cachedStatement(sql: "SELECT total FROM counters WHERE user_id = ? AND action = ?"),
            arguments: [event.user, event.action]) ?? 0
        return TrackResult(user: event.user, action: event.action, isCounted: isCounted, total: total)
    }

    /// The bulk form of `apply`: each event is appended (its idempotency key
    /// decides whether it counts), then counters, last-seen and the outbox
    /// are updated once per user and action rather than once per event.
    func applyBatch(_ events: [TrackedEvent], profile: Profile, now: Date, _ db: Database) throws
        -> (counted: Int, duplicates: Int)
    {
        struct CounterKey: Hashable { var user: String; var action: String }
        var increments: [CounterKey: Int] = [:]
        var lastSeen: [String: Date] = [:]
        var duplicates = 0
        for event in events {
            guard try append(event, db) else {
                duplicates += 1
                continue
            }
            increments[CounterKey(user: event.user, action: event.action), default: 0] += event.count
            lastSeen[event.user] = max(lastSeen[event.user] ?? event.at, event.at)
        }
        for (key, count) in increments { try addToCounter(user: key.user, action: key.action, count: count, db) }
        for (user, time) in lastSeen {
            try touch(user, at: time, db)
            try noteChange(of: user, profile: profile, now: now, db)
        }
        return (events.count - duplicates, duplicates)
    }

    /// Appends the event unless its idempotency key was seen; true when it
    /// was appended. A key seen with another action is a client bug, refused.
    private func append(_ event: TrackedEvent, _ db: Database) throws -> Bool {
        let properties = event.properties.isEmpty ? nil : EventLog.encodeProperties(event.properties)
        // Cached statements: bulk ingestion runs these once per event.
        try db.cachedStatement(
            sql: """
                INSERT INTO events (user_id, action, at, count, idempotency_key, properties)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT DO NOTHING
                """
        ).execute(arguments: [event.user, event.action, Timestamp.format(event.at), event.count, event.idempotencyKey, properties])
        if db.changesCount > 0 { return true }
        if let key = event.idempotencyKey,
            let counted = try String.fetchOne(
                db.cachedStatement(sql: "SELECT action FROM events WHERE user_id = ? AND idempotency_key = ?"),
                arguments: [event.user, key]),
            counted != event.action
        {
            throw GuestModeError.conflict(
                "idempotency key '\(key)' of user '\(event.user)' was already used for '\(counted)', not '\(event.action)'; keys identify one report",
                code: "idempotency_key_reused")
        }
        return false
    }

    private func addToCounter(user: String, action: String, count: Int, _ db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO counters (user_id, action, total) VALUES (?, ?, ?)
                ON CONFLICT(user_id, action) DO UPDATE SET total = total + excluded.total
                """
        ).execute(arguments: [user, action, count])
    }

}

/// The NDJSON event log format shared by `track --from` and `replay`:
/// one object per line, `{"user","action","at","count","id","props"}`.
public enum EventLog {
    /// Calls `body` with each line and its 1-based number, reading in chunks
    /// so a log of any size streams through in constant memory.
    public static func forEachLine(in url: URL, _ body: (Int, Substring) throws -> Void) throws {
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            throw GuestModeError.notFound("cannot open the event log '\(url.path)'", code: "file_not_found")
        }
        defer { try? handle.close() }
        var buffer = Data()
        var number = 0
        while true {
            let chunk = handle.readData(ofLength: 1 << 20)
            if chunk.isEmpty { break }
            buffer.append(chunk)
            var start = buffer.startIndex
            while let newline = buffer[start...].firstIndex(of: 0x0A) {
                number += 1
                try body(number, Substring(decoding: buffer[start..<newline], as: UTF8.self))
                start = buffer.index(after: newline)
            }
            buffer = Data(buffer[start...])
        }
        if !buffer.isEmpty {
            number += 1
            try body(number, Substring(decoding: buffer, as: UTF8.self))
        }
    }

    /// Decodes one line: nil for a blank line, a message for a bad one.
    public static func decode(_ line: Substring, defaultTime: Date) -> Result<TrackedEvent?, DecodeFailure> {
        if line.allSatisfy(\.isWhitespace) { return .success(nil) }
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            return .failure("not a JSON object")
        }
        let known: Set<String> = ["user", "action", "at", "count", "id", "props"]
        if let unknown = object.keys.sorted().first(where: { !known.contains($0) }) {
            return .failure(DecodeFailure("unknown field '\(unknown)'; expected user, action, at, count, id, props"))
        }
        guard let user = object["user"] as? String else { return .failure("'user' must be a string") }
        guard let action = object["action"] as? String else { return .failure("'action' must be a string") }
        var at = defaultTime
        if let value = object["at"] {
            guard let text = value as? String, let date = Timestamp.parse(text) else {
                return .failure("'at' must be an ISO 8601 time such as 2026-11-22T09:30:00Z")
            }
            at = date
        }
        var count = 1
        if let value = object["count"] {
            guard !(value is Bool), let number = value as? NSNumber, number.doubleValue.rounded() == number.doubleValue,
                abs(number.doubleValue) < 1e15
            else {
                return .failure("'count' must be a whole number")
            }
            count = number.intValue
        }
        var key: String?
        if let value = object["id"] {
            guard let text = value as? String else { return .failure("'id' must be a string") }
            key = text
        }
        var properties: [String: String] = [:]
        if let value = object["props"] {
            guard let dictionary = value as? [String: Any] else { return .failure("'props' must be an object") }
            for (name, property) in dictionary {
                switch property {
                case let text as String: properties[name] = text
                case let number as NSNumber: properties[name] = number.stringValue
                default: return .failure(DecodeFailure("property '\(name)' must be a string or a number"))
                }
            }
        }
        return .success(
            TrackedEvent(user: user, action: action, at: at, count: count, idempotencyKey: key, properties: properties))
    }

    public struct DecodeFailure: Error, ExpressibleByStringLiteral, CustomStringConvertible {
        public var description: String
        public init(stringLiteral value: String) { description = value }
        init(_ value: String) { description = value }
    }

    static func encodeProperties(_ properties: [String: String]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(properties)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
