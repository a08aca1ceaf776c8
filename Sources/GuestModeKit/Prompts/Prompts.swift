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
    public func after(_ outcome: PromptOutcome) -> PromptState {
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
    public var context: String
    public var outcome: PromptOutcome
    public var at: Date

    public init(context: String, outcome: PromptOutcome, at: Date) {
        self.context = context
        self.outcome = outcome
        self.at = at
    }
}

/// Everything the prompt policy reads about one user; gathered from the
/// store so the decision itself stays a pure function.
public struct PromptFacts: Sendable, Equatable {
    public var userID: String
    public var userState: UserState
    public var promptState: PromptState
    public var firstSeen: Date
    public var counters: [String: Int]
    /// Oldest first.
    public var history: [PromptHistoryEntry]

    public init(
        userID: String, userState: UserState, promptState: PromptState, firstSeen: Date,
        counters: [String: Int], history: [PromptHistoryEntry]
    ) {
        self.userID = userID
        self.userState = userState
        self.promptState = promptState
        self.firstSeen = firstSeen
        self.counters = counters
        self.history = history
    }
}

/// The prompt policy as an experiment variant bends it for one user.
public struct PromptStrategy: Sendable, Equatable {
    public var cooldown: TimeSpan?
    /// Nil means every context of the profile is on.
    public var enabledContexts: Set<String>?
    /// The experiment variants that shaped this strategy.
    public var variants: [ExperimentAssignment]

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

public enum PromptDecision: Sendable, Equatable {
    case show(PromptRule)
    case quiet(QuietReason)
}

extension PromptPolicy {
    /// Decides which prompt, if any, to show now. Pure: the same facts,
    /// trigger, strategy and time always give the same answer.
    ///
    /// Every recorded outcome counts as contact with its context and restarts
    /// the cooldown (a "later" at noon means not again before noon tomorrow);
    /// only `shown` records count towards the per-window cap, so an app that
    /// records both `shown` and the answer is not charged twice.
    public func decide(
        facts: PromptFacts, trigger: String?, strategy: PromptStrategy, now: Date
    ) -> PromptDecision {
        if facts.userState == .linked { return .quiet(.linked) }
        if facts.promptState == .authenticated { return .quiet(.authenticated) }
        if facts.promptState == .neverAsk || facts.history.contains(where: { $0.outcome == .never }) {
            return .quiet(.neverAsk)
        }
        if let cooldown = strategy.cooldown, let last = facts.history.map(\.at).max() {
            let until = cooldown.added(to: last)
            if now < until { return .quiet(.cooldown(until: until)) }
        }
        if let window, let maximumShownPerWindow {
            let start = window.subtracted(from: now)
            let shown = facts.history.filter { $0.outcome == .shown && $0.at > start && $0.at <= now }
            if shown.count >= maximumShownPerWindow {
                // The window frees a slot once the oldest counted showing falls out of it.
                let oldest = shown.map(\.at).sorted()[shown.count - maximumShownPerWindow]
                return .quiet(.windowFull(shown: shown.count, window: window, until: window.added(to: oldest)))
            }
        }
        let eligible = rules.enumerated().filter { _, rule in
            isEligible(rule, facts: facts, trigger: trigger, strategy: strategy, now: now)
        }
        // Highest priority first; among equals the rule declared first in the profile.
        let chosen = eligible.min { lhs, rhs in
            lhs.element.priority != rhs.element.priority
                ? lhs.element.priority > rhs.element.priority : lhs.offset < rhs.offset
        }
        return chosen.map { .show($0.element) } ?? .quiet(.noEligibleRule)
    }

    func isEligible(
        _ rule: PromptRule, facts: PromptFacts, trigger: String?, strategy: PromptStrategy, now: Date
    ) -> Bool {
        if let ruleTrigger = rule.trigger, ruleTrigger != trigger { return false }
        if let enabled = strategy.enabledContexts, !enabled.contains(rule.context) { return false }
        if let lastContact = facts.history.last(where: { $0.context == rule.context })?.at {
            if rule.isOnce { return false }
            if let reshowAfter = rule.reshowAfter, now < reshowAfter.added(to: lastContact) { return false }
        }
        return rule.conditions.allSatisfy { $0.holds(for: facts, now: now) }
    }
}

extension Profile {
    /// The prompt policy as a user's variants bend it: the first experiment
    /// in the profile that overrides the cooldown sets it, and the contexts
    /// on are those every overriding variant turns on.
    public func promptStrategy(assignments: [ExperimentAssignment]) -> PromptStrategy {
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
        }
        return strategy
    }
}

extension Condition {
    public func holds(for facts: PromptFacts, now: Date) -> Bool {
        switch self {
        case let .counter(action, comparison):
            return comparison.holds(for: Double(facts.counters[action] ?? 0))
        case let .daysSinceFirstSeen(comparison):
            // Whole days elapsed, so "at least 3" means 72 hours, not "the third calendar day".
            let days = (now.timeIntervalSince(facts.firstSeen) / 86_400).rounded(.down)
            return comparison.holds(for: days)
        case let .state(state):
            return facts.userState == state
        }
    }
}

/// Store operations the prompt policy needs.
public protocol PromptStore: Sendable {
    /// Nil when the user does not exist.
    func promptFacts(userID: String) throws -> PromptFacts?
    /// Appends an outcome and moves the user's prompt state (see
    /// `PromptState.after`) in one transaction; returns the new state, or nil
    /// when the user does not exist.
    func recordPromptOutcome(_ entry: PromptHistoryEntry, userID: String) throws -> PromptState?
    /// Records many outcomes in one transaction; a missing user fails them all.
    func recordPromptOutcomes(_ records: [PromptRecord]) throws
}

/// A prompt chosen for a user, with the experiment variants that shaped the choice.
public struct PromptOffer: Codable, Sendable, Equatable {
    public var user: String
    public var context: String
    public var priority: PromptPriority
    public var trigger: String?
    public var content: PromptContent
    public var variants: [ExperimentAssignment]
}

/// What `prompt next` answers: a prompt to show, or why none is due. Like a
/// refused cap (`PutResult.outcome`) and an exhausted meter
/// (`MeterUseResult.isAllowed`), "nothing due" is an answer, not a failure.
public enum NextPrompt: Sendable, Equatable {
    case show(PromptOffer)
    case nothingDue(QuietReason)

    public var offer: PromptOffer? {
        if case let .show(offer) = self { return offer }
        return nil
    }
}

/// A recorded outcome and where it left the user.
public struct RecordedOutcome: Codable, Sendable, Equatable {
    public var user: String
    public var context: String
    public var outcome: PromptOutcome
    public var at: Date
    public var promptState: PromptState
}

public struct PromptHistory: Codable, Sendable, Equatable {
    public var user: String
    public var promptState: PromptState
    public var outcomes: [PromptHistoryEntry]
}

extension GuestMode {
    /// The prompt to show now, or why none is. Assigns the user to the
    /// profile's experiments first, since a variant can change the cooldown
    /// and which contexts are on.
    public func nextPrompt(for userID: String, trigger: String?, now: Date) throws -> NextPrompt {
        if let trigger, !profile.prompts.rules.contains(where: { $0.trigger == trigger }) {
            let known = Set(profile.prompts.rules.compactMap(\.trigger)).sorted()
            throw GuestModeError.usage(
                "no prompt rule of profile '\(profile.name)' has the trigger '\(trigger)'; triggers: \(known.isEmpty ? "none" : known.joined(separator: ", "))",
                code: .unknownTrigger)
        }
        let facts = try requirePromptFacts(userID)
        let strategy = try promptStrategy(for: userID, now: now)
        switch profile.prompts.decide(facts: facts, trigger: trigger, strategy: strategy, now: now) {
        case let .show(rule):
            return .show(
                PromptOffer(
                    user: userID, context: rule.context, priority: rule.priority, trigger: rule.trigger,
                    content: rule.content, variants: strategy.variants))
        case let .quiet(reason):
            return .nothingDue(reason)
        }
    }

    /// The cooldown and contexts a user's experiment variants give them,
    /// assigning the user to each experiment on first use.
    public func promptStrategy(for userID: String, now: Date) throws -> PromptStrategy {
        profile.promptStrategy(assignments: try profile.experiments.map { try assign(userID, to: $0, now: now) })
    }

    public func recordPrompt(
        _ outcome: PromptOutcome, context: String, for userID: String, now: Date
    ) throws
        -> RecordedOutcome
    {
        guard profile.prompts.rules.contains(where: { $0.context == context }) else {
            let known = profile.prompts.rules.map(\.context)
            throw GuestModeError.usage(
                "profile '\(profile.name)' has no prompt context '\(context)'; contexts: \(known.isEmpty ? "none" : known.joined(separator: ", "))",
                code: .unknownContext)
        }
        let entry = PromptHistoryEntry(context: context, outcome: outcome, at: now)
        guard let state = try store.recordPromptOutcome(entry, userID: userID) else {
            throw GuestMode.missingUser(userID)
        }
        return RecordedOutcome(user: userID, context: context, outcome: outcome, at: now, promptState: state)
    }

    public func promptHistory(for userID: String) throws -> PromptHistory {
        let facts = try requirePromptFacts(userID)
        return PromptHistory(user: userID, promptState: facts.promptState, outcomes: facts.history)
    }

    func requirePromptFacts(_ userID: String) throws -> PromptFacts {
        guard let facts = try store.promptFacts(userID: userID) else { throw GuestMode.missingUser(userID) }
        return facts
    }

    static func missingUser(_ userID: String) -> GuestModeError {
        GuestModeError.notFound("no user '\(userID)' in this store", code: .userNotFound)
    }
}

/// One line of a prompt outcome log: `{"user":…,"context":…,"outcome":…,"at":…}`,
/// the form `prompt record --from` reads and `replay` writes.
public struct PromptRecord: Codable, Sendable, Equatable {
    public var user: String
    public var context: String
    public var outcome: PromptOutcome
    public var at: Date

    public init(user: String, context: String, outcome: PromptOutcome, at: Date) {
        self.user = user
        self.context = context
        self.outcome = outcome
        self.at = at
    }

    /// Reads NDJSON; blank lines are skipped, and every malformed line is
    /// reported at once with its number.
    public static func parseLog(_ data: Data, origin: String) throws -> [PromptRecord] {
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
                records.append(try decoder.decode(PromptRecord.self, from: Data(line)))
            } catch {
                problems.append("\(origin):\(index + 1): \(describe(error))")
            }
        }
        if !problems.isEmpty {
            let shown = problems.prefix(20).joined(separator: "\n")
            let more = problems.count > 20 ? "\n… and \(problems.count - 20) more" : ""
            throw GuestModeError.badData(
                "\(problems.count) malformed prompt outcome lines; nothing was recorded:\n\(shown)\(more)",
                code: .malformedLog)
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
    public func recordPrompts(_ records: [PromptRecord]) throws -> Int {
        let contexts = Set(profile.prompts.rules.map(\.context))
        if let unknown = records.first(where: { !contexts.contains($0.context) }) {
            throw GuestModeError.usage(
                "profile '\(profile.name)' has no prompt context '\(unknown.context)' (user \(unknown.user)); nothing was recorded",
                code: .unknownContext)
        }
        try store.recordPromptOutcomes(records)
        return records.count
    }
}
