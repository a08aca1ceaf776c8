import Foundation

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

    public init(user: String, action: String, isCounted: Bool, total: Int) {
        self.user = user
        self.action = action
        self.isCounted = isCounted
        self.total = total
    }
}

/// A line of an event log that cannot be applied, and why.
public struct EventLogProblem: Codable, Sendable, Equatable, CustomStringConvertible {
    public var line: Int
    public var message: String
    /// The line is valid but names a user the store does not have.
    public var isMissingUser = false
    public var description: String { "line \(line): \(message)" }

    public init(line: Int, message: String, isMissingUser: Bool = false) {
        self.line = line
        self.message = message
        self.isMissingUser = isMissingUser
    }
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

extension GuestMode {
    public func track(_ event: TrackedEvent, now: Date) throws -> TrackResult {
        if let problem = problem(with: event) { throw GuestModeError.usage(problem, code: .invalidEvent) }
        return try store.trackEvent(event, profile: profile, now: now)
    }

    public func counters(of userID: String) throws -> [String: Int] {
        try store.counters(of: userID)
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
                    if try missingUsers.contains(event.user) || !store.containsUser(event.user) {
                        missingUsers.insert(event.user)
                        problems.append(
                            EventLogProblem(line: number, message: "no user '\(event.user)'", isMissingUser: true))
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
        func flush() throws {
            guard !batch.isEmpty else { return }
            let result = try store.applyEvents(batch, creatingUsers: creatingUsers, profile: profile, now: now)
            applied += result.counted
            duplicates += result.duplicates
            created += result.usersCreated
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
}

/// The NDJSON event log format shared by `track --from` and `replay`:
/// one object per line, `{"user","action","at","count","id","props"}`.
public enum EventLog {
    /// Calls `body` with each line and its 1-based number, reading in chunks
    /// so a log of any size streams through in constant memory.
    public static func forEachLine(in url: URL, _ body: (Int, Substring) throws -> Void) throws {
        guard let handle = FileHandle(forReadingAtPath: url.path) else {
            throw GuestModeError.notFound("cannot open the event log '\(url.path)'", code: .fileNotFound)
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

    /// Properties as stored with an event: a JSON object with sorted keys.
    public static func encodeProperties(_ properties: [String: String]) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(properties)) ?? Data("{}".utf8), as: UTF8.self)
    }
}
