import Foundation
import GRDB

/// What a replay did: the log it read, and the report totals of the store
/// it built.
public struct ReplaySummary: Codable, Sendable {
    public var profile: String
    public var events: Int
    /// Events whose idempotency key had already been counted.
    public var duplicates: Int
    public var users: Int
    public var promptsShown: Int
    public var prompts: PromptsReport
    public var experiments: ExperimentsReport
}

extension GuestMode {
    /// Runs an event log (the `track --from` format) through a fresh
    /// in-memory store bound to `profileText`, taking the time from each
    /// event: after every counted event the prompt policy is asked what to
    /// show that user then, and a prompt it offers is recorded as shown and
    /// passed to `onDecision`. Users are created at their first event. The
    /// log is read twice, to refuse it whole if any line is bad, so it
    /// streams in constant memory whatever its size.
    public static func replay(
        log: URL, profileText: String, origin: String, now: Date, onDecision: (PromptRecord) throws -> Void
    ) throws -> ReplaySummary {
        let engine = try GuestMode.inMemory(profileText: profileText, origin: origin, now: now)
        try engine.refuseInvalidLines(in: log)
        return try engine.store.write { db in
            var events = 0
            var duplicates = 0
            var users = 0
            var shown = 0
            // Assignments are sticky, so each user's are looked up once and kept for the whole replay.
            var assignments: [String: [ExperimentAssignment]] = [:]
            try EventLog.forEachLine(in: log) { _, line in
                guard case let .success(event?) = EventLog.decode(line, defaultTime: now) else { return }
                if assignments[event.user] == nil {
                    try engine.store.insert(
                        User(
                            id: event.user, device: nil, state: .anonymous, promptState: PromptState.anonymous.rawValue,
                            createdAt: event.at, lastSeenAt: event.at, linkedAt: nil), db)
                    users += 1
                    assignments[event.user] = try engine.assignments(of: event.user, at: event.at, db)
                }
                guard try engine.store.apply(event, profile: engine.profile, now: event.at, db).isCounted else {
                    duplicates += 1
                    return
                }
                events += 1
                if let record = try engine.replayDecision(
                    for: event.user, assignments: assignments[event.user] ?? [], at: event.at, db)
                {
                    shown += 1
                    try onDecision(record)
                }
            }
            return ReplaySummary(
                profile: engine.profile.name, events: events, duplicates: duplicates, users: users, promptsShown: shown,
                prompts: try SQLiteStore.promptsReport(db, ReportPeriod(), profile: engine.profile),
                experiments: try SQLiteStore.experimentsReport(db, ReportPeriod(), profile: engine.profile))
        }
    }

    /// The same decision `nextPrompt` makes, inside the replay's transaction.
    private func replayDecision(
        for userID: String, assignments: [ExperimentAssignment], at time: Date, _ db: Database
    ) throws -> PromptRecord? {
        guard let facts = try SQLiteStore.promptFacts(db, userID: userID) else { return nil }
        let strategy = profile.promptStrategy(assignments: assignments)
        guard case let .show(rule) = profile.prompts.decide(facts: facts, trigger: nil, strategy: strategy, now: time)
        else { return nil }
        let record = PromptRecord(user: userID, context: rule.context, outcome: .shown, at: time)
        _ = try SQLiteStore.recordPromptOutcome(
            db, PromptHistoryEntry(context: rule.context, outcome: .shown, at: time), userID: userID)
        return record
    }

    /// The user's assignment to every experiment, made at their first event as `prompt next` would.
    private func assignments(of userID: String, at time: Date, _ db: Database) throws -> [ExperimentAssignment] {
        try profile.experiments.map { experiment in
            try experiment.assignment(
                for: userID, stored: try SQLiteStore.storedAssignment(db, userID: userID, experiment: experiment.name)
            ) { variant in
                try SQLiteStore.storeAssignment(db, userID: userID, experiment: experiment.name, variant: variant, at: time)
            }
        }
    }

    private func refuseInvalidLines(in log: URL) throws {
        var problems: [EventLogProblem] = []
        try EventLog.forEachLine(in: log) { number, line in
            switch EventLog.decode(line, defaultTime: .distantPast) {
            case let .failure(failure): problems.append(EventLogProblem(line: number, message: failure.description))
            case .success(nil): break
            case let .success(event?):
                if let message = problem(with: event) { problems.append(EventLogProblem(line: number, message: message)) }
            }
        }
        guard problems.isEmpty else {
            let listed = problems.prefix(20).map { "\(log.path):\($0.line): \($0.message)" }.joined(separator: "\n")
            let more = problems.count > 20 ? "\n… and \(problems.count - 20) more" : ""
            throw GuestModeError.badData(
                "\(problems.count) bad lines in the event log; nothing was replayed:\n\(listed)\(more)", code: "malformed_log")
        }
    }
}

extension SQLiteStore {
    /// The profile a store is bound to, read without writing a byte to the
    /// store, for commands such as `replay` that only borrow its profile.
    public static func boundProfile(readingOnly path: String) throws -> (text: String, origin: String)? {
        guard FileManager.default.fileExists(atPath: path) else {
            throw GuestModeError.notFound(
                "no store at '\(path)'; create one with 'guestmode init --profile NAME', set --store, or name a profile with --profile",
                code: "store_not_found")
        }
        try StoreFile.refuseUnknownSchema(path: path)
        do {
            let queue = try DatabaseQueue(path: path, configuration: AppDatabase.configuration(readOnly: true))
            defer { try? queue.close() }
            return try queue.read { db in
                let rows = try Row.fetchAll(
                    db, sql: "SELECT key, value FROM meta WHERE key IN ('profile_text', 'profile_origin')")
                var values: [String: String] = [:]
                for row in rows { values[row["key"]] = row["value"] }
                return values["profile_text"].map { ($0, values["profile_origin"] ?? "") }
            }
        } catch let error as DatabaseError {
            throw StoreFile.translate(error, path: path)
        }
    }
}
