import Foundation

/// What decided one rule in `explainPrompt` (`RuleExplanation.verdict`), as
/// `prompt next --explain` prints it.
///
/// ```swift
/// let explained = try engine.explainPrompt(user: guest.id, trigger: nil, now: now)
/// let waiting = explained.rules.filter { $0.verdict == .triggerNotRaised }.map(\.context)
/// ```
public enum PromptVerdict: String, Codable, Sendable, CaseIterable {
    /// The rule decided: it is the prompt to show.
    case chosen
    /// Eligible, but a rule of higher priority (or declared earlier) won.
    case outranked
    /// A sign-in prompt and the user is linked to an identity.
    case userLinked = "user_linked"
    /// A sign-in prompt and the user completed sign-in.
    case userAuthenticated = "user_authenticated"
    /// The user's experiment variant turns this context off.
    case variantDisabled = "variant_disabled"
    /// A once-only prompt that already had an outcome.
    case once
    /// Had an outcome recently; eligible again later.
    case reshowAfter = "reshow_after"
    /// Waits for a trigger neither named nor raised since its last outcome.
    case triggerNotRaised = "trigger_not_raised"
    /// One of its conditions does not hold.
    case conditionFalse = "condition_false"
    /// The user chose never to be asked again.
    case neverAsk = "never_ask"
    /// Within the cooldown after the last prompt.
    case cooldown
    /// As many prompts shown in the window as the profile allows.
    case windowFull = "window_full"
    /// No rule holds.
    case noEligiblePrompt = "no_eligible_prompt"
}

/// Why one rule is, or is not, the prompt to show now.
package enum RuleVerdict: Sendable, Equatable {
    /// The rule decided: it is the prompt to show.
    case chosen
    /// Eligible, but a rule of higher priority (or declared earlier) won.
    case outranked(by: String)
    /// A sign-in prompt and the user is linked or completed sign-in.
    case signedIn(QuietReason)
    /// The user's experiment variant turns this context off.
    case variantDisabled
    /// A once-only prompt that already had an outcome.
    case once(at: Date)
    /// Had an outcome; eligible again only after `until`.
    case reshowAfter(until: Date)
    /// The rule waits for a trigger that was neither named nor raised since its last outcome.
    case triggerNotRaised(String)
    /// The condition at `index` (from 0, in profile order) does not hold.
    case conditionFalse(index: Int, condition: String)
    /// Eligible on its own, held back by something that holds every prompt back.
    case held(QuietReason)

    package var code: PromptVerdict {
        switch self {
        case .chosen: .chosen
        case .outranked: .outranked
        case let .signedIn(reason): reason == .linked ? .userLinked : .userAuthenticated
        case .variantDisabled: .variantDisabled
        case .once: .once
        case .reshowAfter: .reshowAfter
        case .triggerNotRaised: .triggerNotRaised
        case .conditionFalse: .conditionFalse
        case let .held(reason): reason.verdictCode
        }
    }

    package var isEligible: Bool {
        switch self {
        case .chosen, .outranked: true
        default: false
        }
    }

    /// The moment the rule could be eligible again, when time alone decides.
    package var eligibleAt: Date? {
        switch self {
        case let .reshowAfter(until): until
        case let .held(.cooldown(until)): until
        case let .held(.windowFull(_, _, until)): until
        default: nil
        }
    }

    package var explanation: String {
        switch self {
        case .chosen: "this rule decided: it holds and has the highest priority of the rules that hold"
        case let .outranked(by): "holds, but '\(by)' comes first (higher priority, or declared earlier)"
        case let .signedIn(reason): "a sign-in prompt: \(reason.explanation)"
        case .variantDisabled: "the user's experiment variant turns this context off"
        case let .once(at): "a once-only prompt; it had an outcome at \(Timestamp.format(at))"
        case let .reshowAfter(until): "had an outcome recently; eligible again at \(Timestamp.format(until))"
        case let .triggerNotRaised(name):
            "waits for the trigger '\(name)', neither named nor raised since the prompt's last outcome"
        case let .conditionFalse(index, condition): "condition \(index + 1) does not hold: \(condition)"
        case let .held(reason): reason.explanation
        }
    }
}

extension QuietReason {
    var verdictCode: PromptVerdict {
        switch self {
        case .linked: .userLinked
        case .authenticated: .userAuthenticated
        case .neverAsk: .neverAsk
        case .cooldown: .cooldown
        case .windowFull: .windowFull
        case .noEligibleRule: .noEligiblePrompt
        }
    }
}

/// The decision with the reason for every rule, in profile order.
package struct PromptEvaluation: Sendable, Equatable {
    package var decision: PromptDecision
    package var verdicts: [(rule: PromptRule, verdict: RuleVerdict)]

    package static func == (lhs: PromptEvaluation, rhs: PromptEvaluation) -> Bool {
        lhs.decision == rhs.decision && lhs.verdicts.map(\.rule) == rhs.verdicts.map(\.rule)
            && lhs.verdicts.map(\.verdict) == rhs.verdicts.map(\.verdict)
    }
}

extension PromptPolicy {
    /// Decides which prompt, if any, to show now, and says why for each rule.
    /// Pure: the same facts, trigger, strategy and time give the same answer.
    ///
    /// Every recorded outcome counts as contact with its context and restarts
    /// the cooldown (a "later" at noon means not again before noon tomorrow);
    /// only `shown` records count towards the per-window cap, so an app that
    /// records both `shown` and the answer is not charged twice. Sign-in
    /// prompts stop once the user is linked or completed sign-in; upgrade
    /// prompts go on. "Never" silences every prompt until `prompt reset`.
    package func evaluate(
        facts: PromptFacts, trigger: String?, strategy: PromptStrategy, now: Date
    ) -> PromptEvaluation {
        let signedIn: QuietReason? =
            facts.userState == .linked ? .linked : facts.promptState == .authenticated ? .authenticated : nil
        let gate = heldBack(facts: facts, strategy: strategy, now: now)
        var verdicts: [(rule: PromptRule, verdict: RuleVerdict)] = rules.map { rule in
            let own = verdict(
                of: rule, facts: facts, trigger: trigger, strategy: strategy, signedIn: signedIn, now: now)
            return (rule, own ?? gate.map(RuleVerdict.held) ?? .chosen)
        }
        // Highest priority first; among equals the rule declared first in the profile.
        let eligible = verdicts.indices.filter { verdicts[$0].verdict == .chosen }
        let winner = eligible.min { lhs, rhs in
            let left = verdicts[lhs].rule.priority
            let right = verdicts[rhs].rule.priority
            return left != right ? left > right : lhs < rhs
        }
        if let winner {
            for index in eligible where index != winner {
                verdicts[index].verdict = .outranked(by: verdicts[winner].rule.context)
            }
            return PromptEvaluation(decision: .show(verdicts[winner].rule), verdicts: verdicts)
        }
        let quiet: QuietReason
        if let signedIn, rules.allSatisfy({ $0.kind == .signIn }) {
            quiet = signedIn
        } else {
            quiet = gate ?? .noEligibleRule
        }
        return PromptEvaluation(decision: .quiet(quiet), verdicts: verdicts)
    }

    /// What holds back every prompt now: "never", the cooldown, the window cap.
    func heldBack(facts: PromptFacts, strategy: PromptStrategy, now: Date) -> QuietReason? {
        if facts.saidNever { return .neverAsk }
        if let cooldown = strategy.cooldown, let last = facts.history.map(\.at).max() {
            let until = cooldown.added(to: last)
            if now < until { return .cooldown(until: until) }
        }
        if let window, let maximumShownPerWindow {
            let start = window.subtracted(from: now)
            let shown = facts.history.filter { $0.outcome == .shown && $0.at > start && $0.at <= now }
            if shown.count >= maximumShownPerWindow {
                // The window frees a slot once the oldest counted showing falls out of it.
                let oldest = shown.map(\.at).sorted()[shown.count - maximumShownPerWindow]
                return .windowFull(shown: shown.count, window: window, until: window.added(to: oldest))
            }
        }
        return nil
    }

    /// Why the rule itself does not hold, or nil when it does.
    func verdict(
        of rule: PromptRule, facts: PromptFacts, trigger: String?, strategy: PromptStrategy, signedIn: QuietReason?,
        now: Date
    ) -> RuleVerdict? {
        if rule.kind == .signIn, let signedIn { return .signedIn(signedIn) }
        if let enabled = strategy.enabledContexts, !enabled.contains(rule.context) { return .variantDisabled }
        let lastContact = facts.history.last(where: { $0.context == rule.context })?.at
        if let lastContact {
            if rule.isOnce { return .once(at: lastContact) }
            if let reshowAfter = rule.reshowAfter {
                let until = reshowAfter.added(to: lastContact)
                if now < until { return .reshowAfter(until: until) }
            }
        }
        if let ruleTrigger = rule.trigger, ruleTrigger != trigger {
            // A raised trigger stays pending until the prompt has an outcome recorded after it.
            let raised = facts.raisedTriggers[ruleTrigger].map { raisedAt in lastContact.map { raisedAt > $0 } ?? true }
            if raised != true { return .triggerNotRaised(ruleTrigger) }
        }
        if let index = rule.conditions.firstIndex(where: { !$0.holds(for: facts, now: now) }) {
            return .conditionFalse(index: index, condition: rule.conditions[index].describe(for: facts, now: now))
        }
        return nil
    }
}

extension Condition {
    package func holds(for facts: PromptFacts, now: Date) -> Bool {
        switch self {
        case let .counter(action, comparison):
            return comparison.holds(for: Double(facts.counters[action] ?? 0))
        case let .daysSinceFirstSeen(comparison):
            return comparison.holds(for: Condition.daysSince(facts.firstSeen, now: now))
        case let .state(state):
            return facts.userState == state
        case let .limitReached(collection, outcome):
            guard let limit = facts.limits[collection], let cap = limit.cap, let used = limit.used, used >= cap else {
                return false
            }
            return outcome.map { $0 == limit.outcome } ?? true
        case let .limitRemaining(collection, comparison):
            guard let limit = facts.limits[collection], let cap = limit.cap, let used = limit.used else { return false }
            return comparison.holds(for: Double(max(0, cap - used)))
        case let .meterPercentUsed(meter, comparison):
            guard let status = facts.meters[meter], let allowance = status.allowance else { return false }
            return comparison.holds(Condition.comparePercent(used: status.used, of: allowance, to: comparison.value))
        case let .meterRemaining(meter, comparison):
            guard let remaining = facts.meters[meter]?.remaining else { return false }
            let value = MeterAmount(approximating: comparison.value)
            return comparison.holds(
                remaining < value ? .orderedAscending : remaining == value ? .orderedSame : .orderedDescending)
        case let .meterExhausted(meter):
            return facts.meters[meter]?.level == .exhausted
        }
    }

    /// Whole days elapsed, so "at least 3" means 72 hours, not "the third calendar day".
    static func daysSince(_ start: Date, now: Date) -> Double {
        (now.timeIntervalSince(start) / 86_400).rounded(.down)
    }

    /// `used` as a percentage of `allowance` against `percent`, exactly:
    /// used × 100 against percent × allowance in 128-bit arithmetic. An
    /// allowance of zero is 100 % used.
    static func comparePercent(used: MeterAmount, of allowance: MeterAmount, to percent: Double) -> ComparisonResult {
        guard allowance.isPositive else {
            return 100 < percent ? .orderedAscending : 100 == percent ? .orderedSame : .orderedDescending
        }
        let left = used.millionths.multipliedFullWidth(by: 100 * MeterAmount.scale)
        let right = MeterAmount(approximating: percent).millionths.multipliedFullWidth(by: allowance.millionths)
        if (left.high, left.low) == (right.high, right.low) { return .orderedSame }
        return (left.high, left.low) < (right.high, right.low) ? .orderedAscending : .orderedDescending
    }

    /// The condition as the profile writes it, with the value it saw.
    package func describe(for facts: PromptFacts, now: Date) -> String {
        switch self {
        case let .counter(action, comparison):
            return "counter \(action) \(comparison) (is \(facts.counters[action] ?? 0))"
        case let .daysSinceFirstSeen(comparison):
            return "days_since_first_seen \(comparison) (is \(Int(Condition.daysSince(facts.firstSeen, now: now))))"
        case let .state(state):
            return "state \(state.rawValue) (is \(facts.userState.rawValue))"
        case let .limitReached(collection, outcome):
            let wanted = outcome.map { " with outcome \($0.rawValue)" } ?? ""
            return "limit_reached \(collection)\(wanted) (\(Condition.describe(facts.limits[collection])))"
        case let .limitRemaining(collection, comparison):
            return "limit_remaining \(collection) \(comparison) (\(Condition.describe(facts.limits[collection])))"
        case let .meterPercentUsed(meter, comparison):
            return "meter_percent_used \(meter) \(comparison) (\(Condition.describe(facts.meters[meter])))"
        case let .meterRemaining(meter, comparison):
            return "meter_remaining \(meter) \(comparison) (\(Condition.describe(facts.meters[meter])))"
        case let .meterExhausted(meter):
            return "meter_exhausted \(meter) (\(Condition.describe(facts.meters[meter])))"
        }
    }

    static func describe(_ limit: CollectionLimit?) -> String {
        guard let limit else { return "no limit known" }
        // A limit read without counting (an uncapped collection) knows no count.
        switch (limit.used, limit.cap) {
        case (let used?, nil): return "\(used) held, unlimited"
        case (nil, nil): return "unlimited"
        case (let used?, let cap?): return "\(used) of \(cap) held, a new record gets \(limit.outcome.rawValue)"
        case (nil, let cap?): return "a cap of \(cap), a new record gets \(limit.outcome.rawValue)"
        }
    }

    static func describe(_ status: MeterStatus?) -> String {
        guard let status else { return "no usage known" }
        guard let allowance = status.allowance, let remaining = status.remaining else {
            return "\(status.used) \(status.unit) used, unlimited"
        }
        return "\(status.used) of \(allowance) \(status.unit) used, \(remaining) left"
    }
}

extension Comparison: CustomStringConvertible {
    /// The comparison as written in a profile, such as `at_least 3`.
    public var description: String {
        let value =
            self.value == self.value.rounded() && abs(self.value) < 1e15
            ? String(Int64(self.value)) : String(self.value)
        return "\(comparator.rawValue) \(value)"
    }

    /// Whether an ordering of actual against `value` satisfies the comparator.
    func holds(_ order: ComparisonResult) -> Bool {
        switch comparator {
        case .equals: order == .orderedSame
        case .atLeast: order != .orderedAscending
        case .atMost: order != .orderedDescending
        case .below: order == .orderedAscending
        case .above: order == .orderedDescending
        }
    }
}
