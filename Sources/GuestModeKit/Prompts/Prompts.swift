import Foundation

/// What a user did with a sign-in prompt, as the app reports it.
public enum PromptOutcome: String, Codable, Sendable, CaseIterable {
    case shown, dismissed, later, never, completed
}

/// Where a user stands with sign-in prompts. `neverAsk` and `authenticated`
/// are final: no outcome but `completed` leaves `neverAsk`, nothing leaves
/// `authenticated`.
public enum PromptState: String, Codable, Sendable, CaseIterable {
    case anonymous, prompted, dismissed
    case neverAsk = "never_ask"
    case authenticated

    /// The state after an outcome is recorded.
    package func after(_ outcome: PromptOutcome) -> PromptState {
        switch (self, outcome) {
        case (.authenticated, _): .authenticated
        case (_, .completed): .authenticated
        case (.neverAsk, _), (_, .never): .neverAsk
        case (_, .shown): .prompted
        case (_, .dismissed), (_, .later): .dismissed
        }
    }
}

/// One recorded prompt outcome.
public struct PromptHistoryEntry: Codable, Sendable, Equatable {
    /// The prompt's context.
    public var context: String
    /// What the user did with it.
    public var outcome: PromptOutcome
    /// When.
    public var at: Date

    package init(context: String, outcome: PromptOutcome, at: Date) {
        self.context = context
        self.outcome = outcome
        self.at = at
    }
}

/// Everything the prompt policy reads about one user; gathered from the
/// store so the decision itself stays a pure function.
package struct PromptFacts: Sendable, Equatable {
    package var userID: String
    package var userState: UserState
    package var promptState: PromptState
    package var firstSeen: Date
    package var counters: [String: Int]
    /// Oldest first.
    package var history: [PromptHistoryEntry]
    /// Where the user stands against each collection's cap, by collection
    /// (a snapshot: `promptSnapshot(of:profile:now:)`; empty in replays).
    package var limits: [String: CollectionLimit]
    /// Each meter's status in its current period, by meter.
    package var meters: [String: MeterStatus]
    /// When each trigger was last raised for the user, by trigger name.
    package var raisedTriggers: [String: Date]
    /// The last `prompt reset`: "never" outcomes before it no longer count.
    package var resetAt: Date?

    package init(
        userID: String, userState: UserState, promptState: PromptState, firstSeen: Date,
        counters: [String: Int], history: [PromptHistoryEntry], limits: [String: CollectionLimit] = [:],
        meters: [String: MeterStatus] = [:], raisedTriggers: [String: Date] = [:], resetAt: Date? = nil
    ) {
        self.userID = userID
        self.userState = userState
        self.promptState = promptState
        self.firstSeen = firstSeen
        self.counters = counters
        self.history = history
        self.limits = limits
        self.meters = meters
        self.raisedTriggers = raisedTriggers
        self.resetAt = resetAt
    }

    /// Whether the user said "never" after the last reset.
    package var saidNever: Bool {
        promptState == .neverAsk
            || history.contains { $0.outcome == .never && $0.at > (resetAt ?? .distantPast) }
    }
}

/// The prompt policy as an experiment variant bends it for one user.
public struct PromptStrategy: Sendable, Equatable {
    /// The least time between two prompts; nil for none.
    public var cooldown: TimeSpan?
    /// Nil means every context of the profile is on.
    public var enabledContexts: Set<String>?
    /// The experiment variants that shaped this strategy.
    public var variants: [ExperimentAssignment]
    /// Per context, the copy a variant shows instead of the rule's.
    public var contentOverrides: [String: PromptContentOverride] = [:]

    /// The profile's policy as it is, without a variant.
    public static func plain(_ policy: PromptPolicy) -> PromptStrategy {
        PromptStrategy(cooldown: policy.cooldown, enabledContexts: nil, variants: [])
    }
}

/// Why no prompt is due; the message tells people when one could be.
public enum QuietReason: Sendable, Equatable {
    case linked
    case authenticated
    case neverAsk
    case cooldown(until: Date)
    case windowFull(shown: Int, window: TimeSpan, until: Date)
    case noEligibleRule

    /// The error code a caller reports for this reason.
    public var code: GuestModeError.Code {
        switch self {
        case .linked: .userLinked
        case .authenticated: .userAuthenticated
        case .neverAsk: .neverAsk
        case .cooldown: .cooldown
        case .windowFull: .windowFull
        case .noEligibleRule: .noEligiblePrompt
        }
    }

    /// The reason in words, for people.
    public var explanation: String {
        switch self {
        case .linked: "the user is linked to an identity and gets no sign-in prompts"
        case .authenticated: "the user completed sign-in"
        case .neverAsk: "the user chose never to be asked again"
        case let .cooldown(until): "the prompt cooldown runs until \(Timestamp.format(until))"
        case let .windowFull(shown, window, until):
            "\(shown) prompts were shown in the last \(window); the next fits after \(Timestamp.format(until))"
        case .noEligibleRule: "no prompt rule holds for the user now"
        }
    }
}

package enum PromptDecision: Sendable, Equatable {
    case show(PromptRule)
    case quiet(QuietReason)
}

extension PromptPolicy {
    /// Decides which prompt, if any, to show now. Pure: the same facts,
    /// trigger, strategy and time always give the same answer.
    package func decide(
        facts: PromptFacts, trigger: String?, strategy: PromptStrategy, now: Date
    ) -> PromptDecision {
        evaluate(facts: facts, trigger: trigger, strategy: strategy, now: now).decision
    }
}

extension Profile {
    /// The prompt policy as a user's variants bend it: the first experiment
    /// in the profile that overrides the cooldown sets it, and the contexts
    /// on are those every overriding variant turns on.
    package func promptStrategy(assignments: [ExperimentAssignment]) -> PromptStrategy {
        var strategy = PromptStrategy.plain(prompts)
        var cooldownOverridden = false
        for assignment in assignments {
            guard let variantName = assignment.variant,
                let variant = experiment(named: assignment.experiment)?.variants.first(where: { $0.name == variantName }
                )
            else { continue }
            strategy.variants.append(assignment)
            if let cooldown = variant.promptCooldown, !cooldownOverridden {
                strategy.cooldown = cooldown
                cooldownOverridden = true
            }
            if let contexts = variant.enabledContexts {
                strategy.enabledContexts = (strategy.enabledContexts ?? Set(contexts)).intersection(contexts)
            }
            // The first experiment (in profile order) that rewrites a prompt's copy sets it.
            for (context, override) in variant.contentOverrides where strategy.contentOverrides[context] == nil {
                strategy.contentOverrides[context] = override
            }
        }
        return strategy
    }
}

extension PromptTrigger {
    /// Raised triggers are kept as per-user flags named with this prefix.
    package static let flagPrefix = "trigger-"
    /// The system event `prompt reset` appends.
    public static let resetEventAction = "prompt_reset"
}

/// A prompt chosen for a user, with the experiment variants that shaped the choice.
public struct PromptOffer: Codable, Sendable, Equatable {
    /// The user's id.
    public var user: String
    /// The context of the rule chosen, which recording an outcome names.
    public var context: String
    /// The rule's priority.
    public var priority: PromptPriority
    /// The trigger that made the rule due, if one did.
    public var trigger: String?
    /// What to show, with any variant's copy applied.
    public var content: PromptContent
    /// The experiment variants that shaped the choice.
    public var variants: [ExperimentAssignment]
}

/// What `prompt next` answers: a prompt to show, or why none is due. Like a
/// refused cap (`PutResult.outcome`) and an exhausted meter
/// (`MeterUseResult.isAllowed`), "nothing due" is an answer, not a failure.
public enum NextPrompt: Sendable, Equatable {
    case show(PromptOffer)
    case nothingDue(QuietReason)

    /// The prompt to show; nil when nothing is due.
    public var offer: PromptOffer? {
        if case let .show(offer) = self { return offer }
        return nil
    }
}

/// A recorded outcome and where it left the user.
public struct RecordedOutcome: Codable, Sendable, Equatable {
    /// The user's id.
    public var user: String
    /// The prompt's context.
    public var context: String
    /// The outcome recorded.
    public var outcome: PromptOutcome
    /// When.
    public var at: Date
    /// The user's prompt state after it.
    public var promptState: PromptState
}

/// The prompt outcomes recorded for a user.
public struct PromptHistory: Codable, Sendable, Equatable {
    /// The user's id.
    public var user: String
    /// The user's prompt state now.
    public var promptState: PromptState
    /// Every outcome, oldest first.
    public var outcomes: [PromptHistoryEntry]
}

/// `prompt next --explain`: the decision, the rule that made it, and why
/// every rule is or is not due.
public struct PromptExplanation: Encodable, Sendable, Equatable {
    /// The user's id.
    public var userID: String
    /// True when a prompt is due.
    public var isDue: Bool
    /// The context of the rule that decided; nil when nothing is due.
    public var decidedBy: String?
    /// The prompt to show; nil when nothing is due.
    public var offer: PromptOffer?
    /// Why nothing is due; nil when a prompt is.
    public var quiet: QuietReason?
    /// Every rule of the profile, with its verdict.
    public var rules: [RuleExplanation]
    /// The experiment variants that shaped the decision.
    public var variants: [ExperimentAssignment]

    enum CodingKeys: String, CodingKey {
        case userID = "user_id", isDue = "due", decidedBy = "decided_by", offer, reason, rules, variants
    }

    struct Reason: Encodable {
        var code: String
        var message: String
        var eligibleAt: Date?

        enum CodingKeys: String, CodingKey { case code, message, eligibleAt = "eligible_at" }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(code, forKey: .code)
            try container.encode(message, forKey: .message)
            try container.encode(eligibleAt, forKey: .eligibleAt)
        }
    }

    /// Writes the explanation as `prompt next --explain` prints it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(userID, forKey: .userID)
        try container.encode(isDue, forKey: .isDue)
        try container.encode(decidedBy, forKey: .decidedBy)
        try container.encode(offer, forKey: .offer)
        try container.encode(
            quiet.map { Reason(code: $0.code.rawValue, message: $0.explanation, eligibleAt: $0.eligibleAt) },
            forKey: .reason)
        try container.encode(rules, forKey: .rules)
        try container.encode(variants, forKey: .variants)
    }
}

/// Why one rule is or is not due.
public struct RuleExplanation: Encodable, Sendable, Equatable {
    /// The rule's context.
    public var context: String
    /// The rule's priority.
    public var priority: PromptPriority
    /// Whether the rule asks for a sign-in or an upgrade.
    public var kind: PromptKind
    /// True when the rule could be shown now.
    public var isEligible: Bool
    /// What decided the rule: `chosen`, `outranked`, `cooldown`, `trigger_not_raised`, …
    public var verdict: PromptVerdict
    /// The verdict in words.
    public var message: String
    /// When the rule could be shown next; nil when never or unknown.
    public var eligibleAt: Date?
    /// For `condition_false`: the condition that failed, with the value seen.
    public var condition: String?

    enum CodingKeys: String, CodingKey {
        case context, priority, kind, isEligible = "eligible", verdict, message, eligibleAt = "eligible_at", condition
    }

    /// Writes the explanation of the rule, with every field present.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(context, forKey: .context)
        try container.encode(priority, forKey: .priority)
        try container.encode(kind, forKey: .kind)
        try container.encode(isEligible, forKey: .isEligible)
        try container.encode(verdict, forKey: .verdict)
        try container.encode(message, forKey: .message)
        try container.encode(eligibleAt, forKey: .eligibleAt)
        try container.encode(condition, forKey: .condition)
    }
}

extension QuietReason {
    /// When time alone lifts the reason.
    public var eligibleAt: Date? {
        switch self {
        case let .cooldown(until): until
        case let .windowFull(_, _, until): until
        default: nil
        }
    }
}

extension GuestMode {
    /// The prompt to show now, or why none is. Assigns the user to the
    /// profile's experiments first, since a variant can change the cooldown,
    /// which contexts are on and a prompt's copy.
    ///
    /// ```swift
    /// switch try engine.nextPrompt(user: guest.id, trigger: nil, now: now) {
    /// case .show(let offer): print(offer.content.title)  // then recordPrompt(.shown, …)
    /// case .nothingDue(let reason): print(reason.explanation)
    /// }
    /// ```
    public func nextPrompt(user userID: String, trigger: String?, now: Date) throws -> NextPrompt {
        try TextRule.check(userID, what: "the user id")
        let explanation = try explainPrompt(user: userID, trigger: trigger, now: now)
        if let offer = explanation.offer { return .show(offer) }
        return .nothingDue(explanation.quiet ?? .noEligibleRule)
    }

    /// The decision `nextPrompt` makes, with the reason for every rule. The
    /// offered content is the variant's copy when the user's variant
    /// rewrites it, with its placeholders filled from the user's state.
    public func explainPrompt(user userID: String, trigger: String?, now: Date) throws -> PromptExplanation {
        try TextRule.check(userID, what: "the user id")
        let known = Set(profile.prompts.rules.compactMap(\.trigger))
        if let trigger, !known.contains(trigger) {
            throw GuestModeError(
                .unknownTrigger,
                "no prompt rule of profile '\(profile.name)' has the trigger '\(trigger)'; triggers: \(known.isEmpty ? "none" : known.sorted().joined(separator: ", "))"
            )
        }
        guard
            let facts = try store.read({
                try $0.promptSnapshot(of: userID, profile: profile, reads: promptReads, now: now)
            })
        else {
            throw GuestMode.missingUser(userID)
        }
        let strategy = try promptStrategy(user: userID, now: now)
        let evaluation = profile.prompts.evaluate(facts: facts, trigger: trigger, strategy: strategy, now: now)
        let rules = evaluation.verdicts.map { rule, verdict in
            var condition: String?
            if case let .conditionFalse(_, text) = verdict { condition = text }
            return RuleExplanation(
                context: rule.context, priority: rule.priority, kind: rule.kind, isEligible: verdict.isEligible,
                verdict: verdict.code, message: verdict.explanation, eligibleAt: verdict.eligibleAt,
                condition: condition)
        }
        switch evaluation.decision {
        case let .show(rule):
            let offer = promptOffer(of: rule, user: userID, facts: facts, strategy: strategy, now: now)
            return PromptExplanation(
                userID: userID, isDue: true, decidedBy: rule.context, offer: offer, quiet: nil, rules: rules,
                variants: strategy.variants)
        case let .quiet(reason):
            return PromptExplanation(
                userID: userID, isDue: false, decidedBy: nil, offer: nil, quiet: reason, rules: rules,
                variants: strategy.variants)
        }
    }

    /// Raises the triggers a refusal names (a refused `record put` into
    /// `collection` with `outcome`, or a refused use or raising check of `meter`) and
    /// its webhook (`limit.refused`, `meter.exhausted`). Its own small write
    /// after the refused transaction, which changed nothing: the refusal is
    /// recorded only here, so its event commits with the triggers.
    func raisePromptTriggers(for event: RefusalEvent, userID: String, now: Date) throws {
        let webhook = event.webhook
        guard
            profile.prompts.triggers.contains(where: { $0.source.matches(event) })
                || !profile.webhooks.subscribers(of: webhook.type).isEmpty
        else { return }
        try store.write { transaction in
            try raisePromptTriggers(for: event, userID: userID, now: now, in: transaction)
        }
    }

    /// `raisePromptTriggers(for:userID:now:)` inside the caller's transaction.
    func raisePromptTriggers(
        for event: RefusalEvent, userID: String, now: Date, in transaction: any StoreTransaction
    ) throws {
        let names = profile.prompts.triggers.filter { $0.source.matches(event) }.map(\.name)
        let webhook = event.webhook
        guard !names.isEmpty || !profile.webhooks.subscribers(of: webhook.type).isEmpty else { return }
        guard try transaction.user(userID, locking: true) != nil else { return }
        for name in names {
            try transaction.raiseUserFlag(PromptTrigger.flagPrefix + name, of: userID, at: now)
        }
        try transaction.raiseWebhook(webhook.type, user: userID, data: webhook.data, at: now, profile: profile)
    }

    /// Undoes "never ask again" (`prompt reset`); false when the user had not said never.
    public func resetPrompts(user userID: String, now: Date) throws -> PromptResetResult {
        try TextRule.check(userID, what: "the user id")
        return try store.write { transaction in
            guard let current = try transaction.promptState(of: userID, locking: true) else {
                throw GuestMode.missingUser(userID)
            }
            guard current == .neverAsk else {
                return PromptResetResult(userID: userID, wasReset: false, promptState: current, at: now)
            }
            try transaction.setPromptState(of: userID, to: .dismissed)
            try transaction.appendSystemEvent(
                user: userID, action: PromptTrigger.resetEventAction, properties: ["previous_state": current.rawValue],
                at: now)
            try transaction.noteChange(of: userID, profile: profile, now: now)
            return PromptResetResult(userID: userID, wasReset: true, promptState: .dismissed, at: now)
        }
    }

    /// The cooldown and contexts a user's experiment variants give them,
    /// assigning the user to each experiment on first use.
    public func promptStrategy(user userID: String, now: Date) throws -> PromptStrategy {
        try TextRule.check(userID, what: "the user id")
        return profile.promptStrategy(assignments: try assignments(of: userID, to: profile.experiments, now: now))
    }

    /// Records what the user did with a prompt (shown, dismissed, later, never, completed); the next decisions count it.
    ///
    /// ```swift
    /// let recorded = try engine.recordPrompt(.shown, context: offer.context, user: guest.id, now: now)
    /// // recorded.promptState
    /// ```
    public func recordPrompt(
        _ outcome: PromptOutcome, context: String, user userID: String, now: Date
    ) throws
        -> RecordedOutcome
    {
        try TextRule.check(["the user id": userID, "the prompt context": context])
        guard profile.prompts.rules.contains(where: { $0.context == context }) else {
            let known = profile.prompts.rules.map(\.context)
            throw GuestModeError(
                .unknownContext,
                "profile '\(profile.name)' has no prompt context '\(context)'; contexts: \(known.isEmpty ? "none" : known.joined(separator: ", "))"
            )
        }
        let entry = PromptHistoryEntry(context: context, outcome: outcome, at: now)
        let state = try store.write { transaction in
            guard let state = try transaction.recordPromptOutcome(entry, of: userID) else {
                throw GuestMode.missingUser(userID)
            }
            try transaction.noteChange(of: userID, profile: profile, now: now)
            try transaction.raiseWebhook(
                .promptOutcome, user: userID,
                data: [
                    "context": .string(context), "outcome": .string(outcome.rawValue),
                    "prompt_state": .string(state.rawValue),
                ], at: now, profile: profile)
            return state
        }
        return RecordedOutcome(user: userID, context: context, outcome: outcome, at: now, promptState: state)
    }

    /// Every prompt outcome recorded for the user.
    public func promptHistory(user userID: String) throws -> PromptHistory {
        try TextRule.check(userID, what: "the user id")
        guard let facts = try store.read({ try $0.promptFacts(of: userID)?.facts }) else {
            throw GuestMode.missingUser(userID)
        }
        return PromptHistory(user: userID, promptState: facts.promptState, outcomes: facts.history)
    }

    static func missingUser(_ userID: String) -> GuestModeError {
        GuestModeError(.userNotFound, "no user '\(userID)' in this store")
    }
}

/// One line of a prompt outcome log: `{"user":…,"context":…,"outcome":…,"at":…}`,
/// the form `prompt record --from` reads and `replay` writes.
package struct PromptRecord: Codable, Sendable, Equatable {
    package var user: String
    package var context: String
    package var outcome: PromptOutcome
    package var at: Date

    package init(user: String, context: String, outcome: PromptOutcome, at: Date) {
        self.user = user
        self.context = context
        self.outcome = outcome
        self.at = at
    }

    /// Reads NDJSON; blank lines are skipped, and every malformed line is
    /// reported at once with its number.
    package static func parseLog(_ data: Data, origin: String) throws -> [PromptRecord] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = Timestamp.parse(text) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: decoder.codingPath, debugDescription: "'\(text)' is not an ISO 8601 time"))
            }
            return date
        }
        var records: [PromptRecord] = []
        var problems: [String] = []
        for (index, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            if line.allSatisfy({ $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\t") }) {
                continue
            }
            do {
                // JSONDecoder would repair invalid UTF-8; the text rule refuses it, and U+0000.
                _ = try TextRule.decode(line, what: "the line")
                let record = try decoder.decode(PromptRecord.self, from: Data(line))
                try TextRule.check(["the user id": record.user, "the prompt context": record.context])
                records.append(record)
            } catch let error as GuestModeError {
                problems.append("\(origin):\(index + 1): \(error.message)")
            } catch {
                problems.append("\(origin):\(index + 1): \(describe(error))")
            }
        }
        if !problems.isEmpty {
            let shown = problems.prefix(20).joined(separator: "\n")
            let more = problems.count > 20 ? "\n… and \(problems.count - 20) more" : ""
            throw GuestModeError(
                .malformedLog,
                "\(problems.count) malformed prompt outcome lines; nothing was recorded:\n\(shown)\(more)")
        }
        return records
    }

    static func describe(_ error: Error) -> String {
        switch error {
        case let DecodingError.keyNotFound(key, _): "missing \"\(key.stringValue)\""
        case let DecodingError.dataCorrupted(context):
            context.codingPath.isEmpty
                ? "not a JSON object"
                : "\"\(context.codingPath.map(\.stringValue).joined(separator: "."))\": \(context.debugDescription)"
        case let DecodingError.typeMismatch(_, context):
            "\"\(context.codingPath.map(\.stringValue).joined(separator: "."))\" has the wrong type"
        default: "\(error)"
        }
    }
}

extension GuestMode {
    /// Records a log of outcomes in one transaction: all of them or, on any
    /// unknown user or context, none.
    package func recordPrompts(_ records: [PromptRecord]) throws -> Int {
        for (index, record) in records.enumerated() {
            try TextRule.check([
                "the user id of outcome \(index + 1)": record.user,
                "the prompt context of outcome \(index + 1)": record.context,
            ])
        }
        let contexts = Set(profile.prompts.rules.map(\.context))
        if let unknown = records.first(where: { !contexts.contains($0.context) }) {
            throw GuestModeError(
                .unknownContext,
                "profile '\(profile.name)' has no prompt context '\(unknown.context)' (user \(unknown.user)); nothing was recorded"
            )
        }
        guard !records.isEmpty else { return 0 }
        // Sorted, so every run queues the backups in the same order.
        let userIDs = Set(records.map(\.user)).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        try store.write { transaction in
            // Every user is locked before any decision; the store takes the locks in id order.
            var states = try transaction.promptStates(of: userIDs, locking: true)
            // The first record (in log order) whose user is missing is the one reported.
            if let missing = records.first(where: { states[$0.user] == nil }) {
                throw GuestModeError(
                    .userNotFound, "no user '\(missing.user)' in this store; nothing was recorded")
            }
            // The states move exactly as recording the outcomes one by one moves them.
            var latest: [String: Date] = [:]
            for record in records {
                states[record.user] = states[record.user]?.after(record.outcome)
                latest[record.user] = max(latest[record.user] ?? record.at, record.at)
                try transaction.raiseWebhook(
                    .promptOutcome, user: record.user,
                    data: [
                        "context": .string(record.context), "outcome": .string(record.outcome.rawValue),
                        "prompt_state": .string(states[record.user]?.rawValue ?? ""),
                    ], at: record.at, profile: profile)
            }
            try transaction.appendPromptOutcomes(records)
            try transaction.setPromptStates(states)
            // Each user's backup once, queued at their latest outcome of the log.
            for userID in userIDs {
                if let at = latest[userID] { try transaction.noteChange(of: userID, profile: profile, now: at) }
            }
        }
        return records.count
    }
}

/// What a refusal was, for matching the triggers it raises.
enum RefusalEvent {
    case recordRefused(collection: String, outcome: CapOutcome)
    case meterRefused(meter: String)
}

extension RefusalEvent {
    /// The webhook event a refusal raises.
    var webhook: (type: WebhookEventType, data: [String: JSONValue]) {
        switch self {
        case let .recordRefused(collection, outcome):
            (.limitRefused, ["collection": .string(collection), "outcome": .string(outcome.rawValue)])
        case let .meterRefused(meter):
            (.meterExhausted, ["meter": .string(meter)])
        }
    }
}

extension PromptTrigger.Source {
    func matches(_ event: RefusalEvent) -> Bool {
        switch (self, event) {
        case let (.collection(collection, wanted), .recordRefused(refused, outcome)):
            collection == refused && (wanted.map { $0 == outcome } ?? true)
        case let (.meter(meter), .meterRefused(refused)): meter == refused
        default: false
        }
    }
}

/// What `prompt reset` did.
public struct PromptResetResult: Encodable, Sendable, Equatable {
    /// The user's id.
    public var userID: String
    /// False when the user had not said "never" (nothing changed).
    public var wasReset: Bool
    /// The user's prompt state after the reset.
    public var promptState: PromptState
    /// When.
    public var at: Date

    enum CodingKeys: String, CodingKey { case userID = "user_id", wasReset = "reset", promptState = "prompt_state", at }
}
