import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

private let start = Timestamp.parse("2026-11-01T09:00:00Z")!

private func hours(_ count: Double) -> Date { start.addingTimeInterval(count * 3600) }

private func guestFacts(
    state: UserState = .anonymous, promptState: PromptState = .anonymous, history: [PromptHistoryEntry] = [],
    limits: [String: CollectionLimit] = [:], meters: [String: MeterStatus] = [:],
    triggers: [String: Date] = [:], resetAt: Date? = nil, counters: [String: Int] = [:]
) -> PromptFacts {
    PromptFacts(
        userID: "u", userState: state, promptState: promptState, firstSeen: start, counters: counters,
        history: history, limits: limits, meters: meters, raisedTriggers: triggers, resetAt: resetAt)
}

private func minutes(_ used: MeterAmount, of allowance: MeterAmount? = 60, profile: Profile) -> [String: MeterStatus] {
    let meter = profile.meter(named: "api_minutes")!
    return ["api_minutes": meter.status(tier: .guest, used: used, allowance: allowance, periodStart: nil)]
}

private func parseProblems(_ text: String) -> [String] {
    do {
        _ = try ProfileLoader.parse(text, file: "p.yaml")
        return []
    } catch let error as InvalidProfileError {
        return error.diagnostics.map(\.description)
    } catch {
        return ["\(error)"]
    }
}

/// Rules over limits, meters and raised triggers; placeholders; variant
/// copy; the explanation of a decision (the pure policy: no store).
@Suite struct PromptConditionTests {
    let subscriptions: Profile
    let voice: Profile
    let recipes: Profile

    init() throws {
        subscriptions = try ProfileLoader.parse(try template("subscriptions"), file: "subscriptions.yaml")
        voice = try ProfileLoader.parse(try template("voice"), file: "voice.yaml")
        recipes = try ProfileLoader.parse(try template("recipes"), file: "recipes.yaml")
    }

    func chosen(_ profile: Profile, _ facts: PromptFacts, at now: Date = hours(1)) -> String? {
        if case let .show(rule) = profile.prompts.decide(
            facts: facts, trigger: nil, strategy: .plain(profile.prompts), now: now)
        {
            return rule.context
        }
        return nil
    }

    @Test func theGuestCapPromptWaitsForTheRefusal() {
        let full = [
            "subscriptions": CollectionLimit(
                collection: "subscriptions", tier: .guest, used: 5, cap: 5, outcome: .needsAccount)
        ]
        #expect(chosen(subscriptions, guestFacts(limits: full)) == nil, "at the cap but nothing refused yet")
        #expect(
            chosen(subscriptions, guestFacts(limits: full, triggers: ["guest_cap_refused": hours(1)]))
                == "guest_cap_reached")
        // Shown after the refusal: the trigger is spent until the next refusal.
        let shown = [PromptHistoryEntry(context: "guest_cap_reached", outcome: .shown, at: hours(1))]
        #expect(
            chosen(
                subscriptions, guestFacts(history: shown, limits: full, triggers: ["guest_cap_refused": hours(1)]),
                at: hours(48)) == nil)
        #expect(
            chosen(
                subscriptions, guestFacts(history: shown, limits: full, triggers: ["guest_cap_refused": hours(47)]),
                at: hours(48)) == "guest_cap_reached")
    }

    @Test func anUpgradePromptReachesALinkedUserASignInPromptDoesNot() {
        let full = [
            "subscriptions": CollectionLimit(
                collection: "subscriptions", tier: .account, used: 5, cap: 5, outcome: .needsPremium)
        ]
        let triggers = ["guest_cap_refused": hours(1), "account_cap_refused": hours(1)]
        let linked = guestFacts(state: .linked, promptState: .authenticated, limits: full, triggers: triggers)
        #expect(chosen(subscriptions, linked) == "account_cap_reached")
        // Without any upgrade rule, a linked user keeps the old answer.
        #expect(
            recipes.prompts.decide(
                facts: guestFacts(state: .linked), trigger: nil, strategy: .plain(recipes.prompts), now: hours(1))
                == .quiet(.linked))
    }

    @Test func meterThresholdsComparedExactly() {
        #expect(chosen(voice, guestFacts(meters: minutes(44.999999, profile: voice))) == nil)
        #expect(chosen(voice, guestFacts(meters: minutes(45, profile: voice))) == "minutes_running_low")
        #expect(chosen(voice, guestFacts(meters: minutes(53.999999, profile: voice))) == "minutes_running_low")
        #expect(chosen(voice, guestFacts(meters: minutes(54, profile: voice))) == "minutes_almost_gone")
        #expect(chosen(voice, guestFacts(meters: minutes(60, profile: voice))) == "minutes_paywall")
        #expect(chosen(voice, guestFacts(meters: minutes(60, of: nil, profile: voice))) == nil, "unlimited")
        // Past 90 %, the 75 % prompt is not offered even if it was never shown.
        let almostShown = [PromptHistoryEntry(context: "minutes_almost_gone", outcome: .shown, at: hours(1))]
        #expect(
            chosen(voice, guestFacts(history: almostShown, meters: minutes(55, profile: voice)), at: hours(30)) == nil)
    }

    @Test func remainingAndLimitConditions() {
        let status = minutes(57, profile: voice)["api_minutes"]!
        let facts = guestFacts(
            limits: [
                "subscriptions": CollectionLimit(
                    collection: "subscriptions", tier: .guest, used: 4, cap: 5, outcome: .allowed)
            ],
            meters: ["api_minutes": status])
        let three = Comparison(comparator: .atMost, value: 3)
        #expect(Condition.meterRemaining(meter: "api_minutes", comparison: three).holds(for: facts, now: hours(1)))
        #expect(
            !Condition.meterRemaining(meter: "api_minutes", comparison: .init(comparator: .below, value: 3))
                .holds(for: facts, now: hours(1)))
        #expect(
            Condition.limitRemaining(collection: "subscriptions", comparison: .init(comparator: .atMost, value: 1))
                .holds(for: facts, now: hours(1)))
        #expect(!Condition.limitReached(collection: "subscriptions", outcome: nil).holds(for: facts, now: hours(1)))
        #expect(!Condition.limitReached(collection: "unknown", outcome: nil).holds(for: facts, now: hours(1)))
        #expect(!Condition.meterExhausted(meter: "api_minutes").holds(for: facts, now: hours(1)))
    }

    @Test func placeholdersAreFilledFromTheUsersState() {
        let facts = guestFacts(
            limits: [
                "subscriptions": CollectionLimit(
                    collection: "subscriptions", tier: .guest, used: 5, cap: 5, outcome: .needsAccount)
            ],
            meters: minutes(45.5, profile: voice), counters: ["recipe_created": 3])
        let text =
            "{counter.recipe_created} recipes, {limit.subscriptions.used}/{limit.subscriptions.max} "
            + "({limit.subscriptions.remaining} left), {meter.api_minutes.used} used, "
            + "{meter.api_minutes.remaining} of {meter.api_minutes.allowance} left, {meter.api_minutes.percent_used} %, "
            + "day {days_since_first_seen}, {{literal}}"
        #expect(
            PromptText.fill(text, facts: facts, now: hours(50))
                == "3 recipes, 5/5 (0 left), 45.5 used, 14.5 of 60 left, 75.8 %, day 2, {literal}")
    }

    @Test func unknownPlaceholdersAreProfileErrorsWithTheirLine() {
        let text = """
            name: demo
            version: 1
            collections:
              notes:
            actions: [opened]
            tiers:
              guest:
                caps: { notes: 3 }
            prompts:
              rules:
                - context: hello
                  priority: high
                  content:
                    title: "{counter.closed} things"
                    message: "{limit.notes.used} of {limit.notes.max} and {meter.minutes.used} and {whatever}"
                    primary_action: "open {"
            """
        let problems = parseProblems(text)
        #expect(problems.contains { $0.hasPrefix("p.yaml:14:") && $0.contains("'{counter.closed}'") })
        #expect(problems.contains { $0.hasPrefix("p.yaml:15:") && $0.contains("unknown meter 'minutes'") })
        #expect(problems.contains { $0.hasPrefix("p.yaml:15:") && $0.contains("unknown placeholder '{whatever}'") })
        #expect(problems.contains { $0.hasPrefix("p.yaml:16:") && $0.contains("never closed") })
        #expect(!problems.contains { $0.contains("limit.notes") })
    }

    @Test func triggerAndConditionMistakesAreReported() {
        let text = """
            name: demo
            version: 1
            collections:
              notes:
            meters:
              minutes:
            tiers:
              guest:
                caps: { notes: 3 }
            prompts:
              triggers:
                full:
                  collection: notes
                  outcome: allowed
                odd:
                  meter: hours
                unused:
                  meter: minutes
              rules:
                - context: hello
                  priority: high
                  kind: sometimes
                  trigger: full
                  when:
                    - limit_reached: notes
                      at_least: 2
                    - meter_percent_used: minutes
                    - meter_remaining: seconds
                      at_most: 3
                  content: { title: t, message: m }
                - context: bye
                  priority: high
                  trigger: odd
                  content: { title: t, message: m }
            """
        let problems = parseProblems(text)
        #expect(problems.contains { $0.hasPrefix("p.yaml:14:") && $0.contains("needs-account or needs-premium") })
        #expect(problems.contains { $0.hasPrefix("p.yaml:16:") && $0.contains("unknown meter 'hours'") })
        #expect(problems.contains { $0.contains("'unused'") && $0.contains("no prompt rule has trigger") })
        #expect(problems.contains { $0.hasPrefix("p.yaml:22:") && $0.contains("kind 'sometimes'") })
        #expect(problems.contains { $0.hasPrefix("p.yaml:25:") && $0.contains("takes no comparison") })
        #expect(problems.contains { $0.hasPrefix("p.yaml:27:") && $0.contains("needs one of") })
        #expect(problems.contains { $0.hasPrefix("p.yaml:28:") && $0.contains("unknown meter 'seconds'") })
    }

    @Test func aVariantRewritesThePromptsCopy() throws {
        let benefits = ExperimentAssignment(
            experiment: "auth_prompts", variant: "benefits", bucket: 0.7, assignedAt: start, isNew: false)
        let strategy = recipes.promptStrategy(assignments: [benefits])
        let override = try #require(strategy.contentOverrides["first_recipe_success"])
        let rule = try #require(recipes.prompts.rules.first { $0.context == "first_recipe_success" })
        let content = override.applied(to: rule.content).filled(
            facts: guestFacts(counters: ["recipe_created": 1]), now: hours(1))
        #expect(content.title == "Your first recipe is ready")
        #expect(content.message.hasPrefix("Sign in and your 1 recipe is saved"))
        #expect(content.primaryAction == "Keep my recipe")
        #expect(content.secondaryAction == rule.content.secondaryAction, "fields the variant leaves alone stay")
        let control = ExperimentAssignment(
            experiment: "auth_prompts", variant: "control", bucket: 0.1, assignedAt: start, isNew: false)
        #expect(recipes.promptStrategy(assignments: [control]).contentOverrides.isEmpty)
    }

    @Test func theExplanationGivesEveryRulesReason() {
        let history = [
            PromptHistoryEntry(context: "minutes_running_low", outcome: .shown, at: hours(1))
        ]
        let evaluation = voice.prompts.evaluate(
            facts: guestFacts(history: history, meters: minutes(50, profile: voice)), trigger: nil,
            strategy: .plain(voice.prompts), now: hours(2))
        #expect(evaluation.decision == .quiet(.cooldown(until: hours(25))))
        let verdicts = Dictionary(uniqueKeysWithValues: evaluation.verdicts.map { ($0.rule.context, $0.verdict) })
        #expect(verdicts["minutes_running_low"] == .once(at: hours(1)))
        #expect(verdicts["session_refused"] == .triggerNotRaised("minutes_refused"))
        if case let .conditionFalse(index, condition) = verdicts["minutes_almost_gone"] {
            #expect(index == 0)
            #expect(condition.contains("meter_percent_used api_minutes at_least 90"))
            #expect(condition.contains("50 of 60 minutes used"))
        } else {
            Issue.record("expected condition_false, got \(String(describing: verdicts["minutes_almost_gone"]))")
        }
        // At 60 the paywall holds on its own but the cooldown holds it back.
        let held = voice.prompts.evaluate(
            facts: guestFacts(history: history, meters: minutes(60, profile: voice)), trigger: nil,
            strategy: .plain(voice.prompts), now: hours(2))
        let paywall = held.verdicts.first { $0.rule.context == "minutes_paywall" }?.verdict
        #expect(paywall == .held(.cooldown(until: hours(25))))
        #expect(paywall?.eligibleAt == hours(25))
        #expect(paywall.map { $0.code } == .cooldown)
    }

    @Test func neverCountsOnlyUntilAReset() {
        let never = [PromptHistoryEntry(context: "minutes_running_low", outcome: .never, at: hours(1))]
        let before = guestFacts(promptState: .dismissed, history: never, meters: minutes(60, profile: voice))
        #expect(
            voice.prompts.decide(facts: before, trigger: nil, strategy: .plain(voice.prompts), now: hours(30))
                == .quiet(.neverAsk))
        var after = before
        after.resetAt = hours(2)
        #expect(chosen(voice, after, at: hours(30)) == "minutes_paywall")
    }
}
