import Foundation

/// What a replay did: the log it read, and the report totals of the store
/// it built.
package struct ReplaySummary: Codable, Sendable {
    package var profile: String
    package var events: Int
    /// Events whose idempotency key had already been counted.
    package var duplicates: Int
    package var users: Int
    package var promptsShown: Int
    package var prompts: PromptsReport
    package var experiments: ExperimentsReport
}

extension GuestMode {
    /// Runs an event log (the `track --from` format) through a fresh store
    /// from `scratchStore` (an empty in-memory one: the replay writes to it)
    /// bound to `profileText`, taking the time from each event: after every
    /// counted event the prompt policy is asked what to show that user then,
    /// and a prompt it offers is recorded as shown and passed to
    /// `onDecision`. Users are created at their first event. The log is read
    /// twice, to refuse it whole if any line is bad, so it streams in
    /// constant memory whatever its size. Problems name the log by `label`
    /// (default: its path), as `<stdin>` for a spooled standard input.
    package static func replay(
        log: URL, label: String? = nil, profileText: String, origin: String, now: Date,
        scratchStore: () throws -> any GuestStore, onDecision: (PromptRecord) throws -> Void
    ) throws -> ReplaySummary {
        let profile = try ProfileLoader.parse(profileText, file: origin)
        try refuseInvalidLines(in: log, label: label ?? log.path, profile: profile)
        let store = try scratchStore()
        try store.bindProfile(text: profileText, origin: origin, now: now)
        // The scratch store has no other writer, so no serialization failure
        // reruns this body (and its callbacks).
        let run = try store.write { transaction in
            var run = ReplayRun(profile: profile, transaction: transaction)
            try EventLog.forEachLine(in: log) { _, line in
                guard case let .success(event?) = EventLog.decode(line, defaultTime: now) else { return }
                try run.apply(event, onDecision: onDecision)
            }
            return run.totals
        }
        let everything = ReportPeriod()
        let (prompts, variants) = try store.read { transaction in
            (try transaction.promptContexts(in: everything), try transaction.variantCounts(in: everything))
        }
        return ReplaySummary(
            profile: profile.name, events: run.events, duplicates: run.duplicates, users: run.users,
            promptsShown: run.shown,
            prompts: PromptsReport(period: everything, profile: profile, counts: prompts),
            experiments: ExperimentsReport(period: everything, profile: profile, counts: variants))
    }

    private static func refuseInvalidLines(in log: URL, label: String, profile: Profile) throws {
        var problems: [EventLogProblem] = []
        try EventLog.forEachLine(
            in: log,
            invalidText: { number, error in problems.append(EventLogProblem(line: number, message: error.message)) }
        ) { number, line in
            switch EventLog.decode(line, defaultTime: .distantPast) {
            case let .failure(failure): problems.append(EventLogProblem(line: number, message: failure.description))
            case .success(nil): break
            case let .success(event?):
                if let message = profile.problem(with: event) {
                    problems.append(EventLogProblem(line: number, message: message))
                }
            }
        }
        guard problems.isEmpty else {
            let listed = problems.prefix(20).map { "\(label):\($0.line): \($0.message)" }.joined(separator: "\n")
            let more = problems.count > 20 ? "\n… and \(problems.count - 20) more" : ""
            throw GuestModeError.badData(
                "\(problems.count) bad line\(problems.count == 1 ? "" : "s") in the event log; nothing was replayed:\n\(listed)\(more)",
                code: .malformedLog)
        }
    }
}

/// One replay in progress: the same steps `track`, `experiment assign` and
/// `prompt next` take, inside the replay's transaction.
private struct ReplayRun {
    let profile: Profile
    let transaction: any StoreTransaction
    var totals = Totals()
    /// Assignments are sticky, so each user's are looked up once and kept for the whole replay.
    var assignments: [String: [ExperimentAssignment]] = [:]

    struct Totals {
        var events = 0
        var duplicates = 0
        var users = 0
        var shown = 0
    }

    init(profile: Profile, transaction: any StoreTransaction) {
        self.profile = profile
        self.transaction = transaction
    }

    mutating func apply(_ event: TrackedEvent, onDecision: (PromptRecord) throws -> Void) throws {
        if assignments[event.user] == nil {
            totals.users += try transaction.createMissingGuests([(event.user, event.at)])
            assignments[event.user] = try assignments(of: event.user, at: event.at)
        }
        guard try transaction.count(event, profile: profile, now: event.at) else {
            totals.duplicates += 1
            return
        }
        totals.events += 1
        if let record = try decision(for: event.user, assignments: assignments[event.user] ?? [], at: event.at) {
            totals.shown += 1
            try onDecision(record)
        }
    }

    /// The same decision `nextPrompt` makes, recorded as shown.
    private func decision(
        for userID: String, assignments: [ExperimentAssignment], at time: Date
    ) throws -> PromptRecord? {
        guard let facts = try transaction.promptFacts(of: userID) else { return nil }
        let strategy = profile.promptStrategy(assignments: assignments)
        guard case let .show(rule) = profile.prompts.decide(facts: facts, trigger: nil, strategy: strategy, now: time)
        else { return nil }
        _ = try transaction.recordPromptOutcome(
            PromptHistoryEntry(context: rule.context, outcome: .shown, at: time), of: userID)
        return PromptRecord(user: userID, context: rule.context, outcome: .shown, at: time)
    }

    /// The user's assignment to every experiment, made at their first event as `prompt next` would.
    private func assignments(of userID: String, at time: Date) throws -> [ExperimentAssignment] {
        try profile.experiments.map { try transaction.assignment(of: userID, to: $0, now: time) }
    }
}

extension Profile {
    /// Why an event cannot be tracked under this profile, or nil when it can.
    func problem(with event: TrackedEvent) -> String? {
        if event.user.isEmpty { return "the user is empty" }
        if event.action.isEmpty { return "the action is empty" }
        if !allowsFreeFormActions && !actions.contains(event.action) {
            return "unknown action '\(event.action)'; this profile's actions are: \(actions.joined(separator: ", "))"
        }
        if event.count < 1 || event.count > Bounds.maximumEventCount {
            return "count must be from 1 to \(Bounds.maximumEventCount), not \(event.count)"
        }
        if let key = event.idempotencyKey, key.isEmpty { return "the idempotency key is empty" }
        if event.properties.keys.contains("") { return "a property name is empty" }
        do {
            try event.checkText()
        } catch {
            return (error as? GuestModeError)?.message ?? "\(error)"
        }
        return nil
    }
}

extension TrackedEvent {
    /// Applies `TextRule` to every text of the event: ids, action, key,
    /// property names and string values.
    func checkText() throws {
        try TextRule.check(["the user id": user, "the action": action, "the idempotency key": idempotencyKey])
        let acceptable = properties.allSatisfy { name, property in
            guard TextRule.isAcceptable(name) else { return false }
            if case .string(let text) = property { return TextRule.isAcceptable(text) }
            return true
        }
        if acceptable { return }
        // Sorted only to name the same property whatever the dictionary's order.
        for name in properties.keys.sorted() {
            try TextRule.check(name, what: "the property name \(name.debugDescription)")
            if case .string(let text)? = properties[name] {
                try TextRule.check(text, what: "the property \(name.debugDescription)")
            }
        }
    }
}
