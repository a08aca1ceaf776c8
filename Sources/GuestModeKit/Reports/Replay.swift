import Foundation

/// What a replay did: the log it read, and the report totals of the store
/// it built.
package struct ReplaySummary: Codable, Sendable {
    package var profile: String
    package var events: Int
    /// Record puts applied (refused ones included: a refusal is decided, and may raise a trigger).
    package var records: Int
    /// Meter uses applied (refused ones included).
    package var meterUses: Int
    /// Plan grants and revocations applied.
    package var planChanges: Int
    /// Links to an account applied (a link the user already had included).
    package var links: Int
    /// Events and meter uses whose idempotency key had already been counted.
    package var duplicates: Int
    package var users: Int
    package var promptsShown: Int
    package var prompts: PromptsReport
    package var experiments: ExperimentsReport
}

extension GuestMode {
    /// Runs a log (`ReplayLine`: events in the `track --from` format, record
    /// puts, meter uses, plan changes and links) through a fresh store from
    /// `scratchStore` (an empty in-memory one: the replay writes to it) bound
    /// to `profileText`, taking the time from each line: every line is applied
    /// by the engine's own use case (`track`'s step, `putRecord`, `useMeter`,
    /// `grantPlan`, `revokePlan`, `link`, over an engine whose store is the replay's
    /// transaction), and after every line that counted the prompt policy is
    /// asked what to show that user then, from the same facts `nextPrompt`
    /// reads (limits, meters and raised triggers included); a prompt it
    /// offers is recorded as shown and passed to `onDecision`. Users are
    /// created at their first line. The log is read
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
            var run = ReplayRun(
                profile: profile, transaction: transaction,
                engine: GuestMode(
                    profile: profile, store: TransactionScope(base: store, transaction: transaction, isDurable: true)))
            try EventLog.forEachLine(in: log) { number, line in
                guard case let .success(step?) = ReplayLog.decode(line, defaultTime: now) else { return }
                do {
                    try run.apply(step, onDecision: onDecision)
                } catch let error as GuestModeError {
                    throw GuestModeError(
                        error.code, "\(label ?? log.path):\(number): \(error.message); nothing was replayed")
                }
            }
            return run.totals
        }
        let everything = ReportPeriod()
        let (prompts, variants) = try store.read { transaction in
            (try transaction.promptContexts(in: everything), try transaction.variantCounts(in: everything))
        }
        return ReplaySummary(
            profile: profile.name, events: run.events, records: run.records, meterUses: run.meterUses,
            planChanges: run.planChanges, links: run.links, duplicates: run.duplicates, users: run.users,
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
            switch ReplayLog.decode(line, defaultTime: .distantPast) {
            case let .failure(failure): problems.append(EventLogProblem(line: number, message: failure.description))
            case .success(nil): break
            case let .success(step?):
                if let message = profile.problem(with: step) {
                    problems.append(EventLogProblem(line: number, message: message))
                }
            }
        }
        guard problems.isEmpty else {
            let listed = problems.prefix(20).map { "\(label):\($0.line): \($0.message)" }.joined(separator: "\n")
            let more = problems.count > 20 ? "\n… and \(problems.count - 20) more" : ""
            throw GuestModeError(
                .malformedLog,
                "\(problems.count) bad line\(problems.count == 1 ? "" : "s") in the event log; nothing was replayed:\n\(listed)\(more)"
            )
        }
    }
}

/// One replay in progress: the same steps `track`, `record put`, `meter use`,
/// `plan grant|revoke`, `experiment assign` and `prompt next` take, inside
/// the replay's transaction.
private struct ReplayRun {
    let profile: Profile
    let transaction: any StoreTransaction
    /// The engine over the replay's transaction: each use case runs in a savepoint of it.
    let engine: GuestMode
    var totals = Totals()
    /// Assignments are sticky, so each user's are looked up once and kept for the whole replay.
    var assignments: [String: [ExperimentAssignment]] = [:]
    /// Users whose log carried a `prompt reset` event: only they can have a last reset to look up.
    var resetUsers: Set<String> = []

    struct Totals {
        var events = 0
        var records = 0
        var meterUses = 0
        var planChanges = 0
        var links = 0
        var duplicates = 0
        var users = 0
        var shown = 0
    }

    init(profile: Profile, transaction: any StoreTransaction, engine: GuestMode) {
        self.profile = profile
        self.transaction = transaction
        self.engine = engine
    }

    mutating func apply(_ step: ReplayLine, onDecision: (PromptRecord) throws -> Void) throws {
        let user = step.user
        let at = step.at
        if assignments[user] == nil {
            totals.users += try transaction.createMissingGuests(
                [(user, at, at)], state: .anonymous, promptState: User.newGuestPromptState
            ).count
            assignments[user] = try assignments(of: user, at: at)
        }
        switch step {
        case let .event(event):
            if event.action == PromptTrigger.resetEventAction { resetUsers.insert(user) }
            guard try transaction.count(event, profile: profile, now: event.at) else {
                totals.duplicates += 1
                return
            }
            totals.events += 1
        case let .record(_, collection, key, data, _):
            _ = try engine.putRecord(user: user, collection: collection, key: key, json: data, now: at)
            totals.records += 1
        case let .meter(_, meter, amount, key, overage, _):
            let used = try engine.useMeter(
                user: user, meter: meter, amount: amount, key: key, overage: overage, now: at)
            if used.isDuplicate {
                totals.duplicates += 1
                return
            }
            totals.meterUses += 1
        case let .plan(_, plan, trial, until, revoke, _):
            if revoke {
                _ = try engine.revokePlan(user: user, plan: plan, now: at)
            } else {
                _ = try engine.grantPlan(user: user, plan: plan, trial: trial, until: until, now: at)
            }
            totals.planChanges += 1
        case let .link(_, provider, subject, email, _):
            _ = try engine.link(user: user, provider: provider, subject: subject, email: email, now: at)
            totals.links += 1
        }
        if let record = try decision(for: user, assignments: assignments[user] ?? [], at: at) {
            totals.shown += 1
            try onDecision(record)
        }
    }

    /// The same decision `nextPrompt` makes, from the same facts, recorded as shown.
    private func decision(
        for userID: String, assignments: [ExperimentAssignment], at time: Date
    ) throws -> PromptRecord? {
        guard
            let facts = try transaction.promptSnapshot(
                of: userID, profile: profile, reads: engine.promptReads, now: time, onlyWhatRulesRead: true,
                mayHaveReset: resetUsers.contains(userID))
        else { return nil }
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
    /// Why a replay line cannot be applied under this profile, or nil when
    /// it may be (the use case still decides it when it runs).
    func problem(with step: ReplayLine) -> String? {
        switch step {
        case let .event(event):
            return problem(with: event)
        case let .record(user, collection, key, _, _):
            if !collections.contains(where: { $0.name == collection }) {
                return
                    "unknown collection '\(collection)'; this profile's collections are: \(collections.map(\.name).joined(separator: ", "))"
            }
            return textProblem(["the user id": user, "the collection": collection, "the record key": key])
        case let .meter(user, meter, amount, key, _, _):
            if !meters.contains(where: { $0.name == meter }) {
                return
                    "unknown meter '\(meter)'; this profile's meters are: \(meters.map(\.name).joined(separator: ", "))"
            }
            if !amount.isPositive { return "the amount must be more than 0, not \(amount)" }
            return textProblem(["the user id": user, "the meter": meter, "the idempotency key": key])
        case let .plan(user, plan, _, _, _, _):
            if self.plan(named: plan) == nil {
                return "unknown plan '\(plan)'; this profile's plans are: \(plans.map(\.name).joined(separator: ", "))"
            }
            return textProblem(["the user id": user, "the plan": plan])
        case let .link(user, provider, subject, email, _):
            if !identity.providers.contains(provider) {
                return
                    "unknown provider '\(provider)'; this profile accepts: \(identity.providers.joined(separator: ", "))"
            }
            return textProblem([
                "the user id": user, "the provider": provider, "the identity's subject": subject, "the email": email,
            ])
        }
    }

    private func textProblem(_ texts: KeyValuePairs<String, String?>) -> String? {
        do {
            try TextRule.check(texts)
        } catch {
            return (error as? GuestModeError)?.message ?? "\(error)"
        }
        return nil
    }

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
