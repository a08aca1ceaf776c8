import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

private let start = Timestamp.parse("2026-11-01T09:00:00Z")!

private func hours(_ count: Double) -> Date { start.addingTimeInterval(count * 3600) }

private func facts(
    counters: [String: Int] = [:], history: [PromptHistoryEntry] = [], state: UserState = .anonymous,
    promptState: PromptState = .anonymous
) -> PromptFacts {
    PromptFacts(
        userID: "u1", userState: state, promptState: promptState, firstSeen: start, counters: counters,
        history: history)
}

@Suite struct PromptPolicyTests {
    let policy: PromptPolicy

    init() throws {
        policy = try ProfileLoader.parse(try template("recipes"), file: "recipes.yaml").prompts
    }

    func decide(
        _ facts: PromptFacts, trigger: String? = nil, at now: Date, strategy: PromptStrategy? = nil
    )
        -> PromptDecision
    {
        policy.decide(facts: facts, trigger: trigger, strategy: strategy ?? .plain(policy), now: now)
    }

    func context(_ decision: PromptDecision) -> String? {
        if case let .show(rule) = decision { return rule.context }
        return nil
    }

    @Test func firstRecipeIsCelebratedOnce() {
        let created = facts(counters: ["recipe_created": 1])
        #expect(context(decide(created, at: hours(1))) == "first_recipe_success")
        let shown = facts(
            counters: ["recipe_created": 1],
            history: [PromptHistoryEntry(context: "first_recipe_success", outcome: .shown, at: hours(1))])
        #expect(decide(shown, at: hours(100)) == .quiet(.noEligibleRule))
    }

    @Test func cooldownHoldsBackTheNextPromptForADay() {
        let history = [PromptHistoryEntry(context: "first_recipe_success", outcome: .shown, at: hours(1))]
        let both = facts(counters: ["recipe_created": 1, "video_generated": 1, "video_shared": 1], history: history)
        #expect(decide(both, at: hours(24.9)) == .quiet(.cooldown(until: hours(25))))
        #expect(context(decide(both, at: hours(25))) == "viral_content_created")
    }

    @Test func aVariantCooldownReplacesTheProfileCooldown() {
        let history = [PromptHistoryEntry(context: "first_recipe_success", outcome: .shown, at: hours(1))]
        let both = facts(counters: ["recipe_created": 1, "video_generated": 1, "video_shared": 1], history: history)
        let aggressive = PromptStrategy(cooldown: TimeSpan(amount: 6, unit: .hours), enabledContexts: nil, variants: [])
        #expect(context(decide(both, at: hours(7), strategy: aggressive)) == "viral_content_created")
    }

    @Test func aVariantCanTurnContextsOff() {
        let created = facts(counters: ["recipe_created": 1])
        let delayed = PromptStrategy(cooldown: nil, enabledContexts: ["reengagement"], variants: [])
        #expect(decide(created, at: hours(1), strategy: delayed) == .quiet(.noEligibleRule))
    }

    @Test func neverAskSilencesEverythingForever() {
        let history = [PromptHistoryEntry(context: "first_recipe_success", outcome: .never, at: hours(1))]
        let everything = facts(
            counters: ["recipe_created": 1, "video_generated": 1, "video_shared": 1, "app_opened": 50], history: history
        )
        #expect(decide(everything, at: hours(24 * 365)) == .quiet(.neverAsk))
        #expect(
            decide(facts(counters: ["recipe_created": 1], promptState: .neverAsk), at: hours(2)) == .quiet(.neverAsk))
        #expect(
            decide(everything, trigger: "daily_limit_reached", at: hours(24 * 365)) == .quiet(.neverAsk))
    }

    @Test func reengagementNeedsThreeDaysAndFiveOpens() {
        let opened = facts(counters: ["app_opened": 5])
        #expect(decide(opened, at: hours(71)) == .quiet(.noEligibleRule))
        #expect(context(decide(opened, at: hours(72))) == "reengagement")
        #expect(decide(facts(counters: ["app_opened": 4]), at: hours(100)) == .quiet(.noEligibleRule))
    }

    @Test func reshowAfterMakesAPromptEligibleAgain() {
        let history = [PromptHistoryEntry(context: "reengagement", outcome: .dismissed, at: hours(72))]
        let opened = facts(counters: ["app_opened": 9], history: history)
        #expect(decide(opened, at: hours(72 + 24 * 7 - 1)) == .quiet(.noEligibleRule))
        #expect(context(decide(opened, at: hours(72 + 24 * 7))) == "reengagement")
    }

    @Test func linkedAndAuthenticatedUsersGetNothing() {
        #expect(decide(facts(counters: ["recipe_created": 1], state: .linked), at: hours(1)) == .quiet(.linked))
        #expect(
            decide(facts(counters: ["recipe_created": 1], promptState: .authenticated), at: hours(1))
                == .quiet(.authenticated))
    }

    @Test func higherPriorityWinsEveryTime() {
        // first_recipe_success is medium, viral_content_created high, challenge_interest medium.
        let all = facts(counters: ["recipe_created": 1, "video_generated": 2, "video_shared": 1, "challenge_viewed": 3])
        for hour in 0..<50 {
            #expect(context(decide(all, at: hours(Double(hour)))) == "viral_content_created")
        }
        #expect(context(decide(all, trigger: "daily_limit_reached", at: hours(1))) == "daily_limit_reached")
    }

    @Test func equalPrioritiesFallBackToProfileOrder() {
        // Both medium: first_recipe_success is declared before challenge_interest.
        let tie = facts(counters: ["recipe_created": 1, "challenge_viewed": 3])
        #expect(context(decide(tie, at: hours(1))) == "first_recipe_success")
    }

    @Test func triggeredRulesNeedTheirTrigger() {
        #expect(decide(facts(), at: hours(1)) == .quiet(.noEligibleRule))
        #expect(context(decide(facts(), trigger: "share_intent", at: hours(1))) == "share_intent")
    }

    @Test func theWindowCapsShowingsAndSaysWhenASlotFrees() {
        // Three showings, a day apart, fill the 7-day window of three.
        let history = (0..<3).map {
            PromptHistoryEntry(context: "share_intent", outcome: .shown, at: hours(Double($0) * 24))
        }
        let triggered = facts(history: history)
        #expect(
            decide(triggered, trigger: "daily_limit_reached", at: hours(72))
                == .quiet(.windowFull(shown: 3, window: TimeSpan(amount: 7, unit: .days), until: hours(168))))
        #expect(context(decide(triggered, trigger: "daily_limit_reached", at: hours(168))) == "daily_limit_reached")
    }

    @Test func promptStatesMoveAsDocumented() {
        #expect(PromptState.anonymous.after(.shown) == .prompted)
        #expect(PromptState.prompted.after(.dismissed) == .dismissed)
        #expect(PromptState.prompted.after(.later) == .dismissed)
        #expect(PromptState.dismissed.after(.never) == .neverAsk)
        #expect(PromptState.neverAsk.after(.shown) == .neverAsk)
        #expect(PromptState.neverAsk.after(.completed) == .authenticated)
        #expect(PromptState.authenticated.after(.never) == .authenticated)
    }
}

@Suite struct PromptEngineTests {
    func engine() throws -> GuestMode {
        try GuestMode.inMemory(profileText: try template("recipes"), origin: "recipes.yaml", now: start)
    }

    func insertUser(
        _ engine: GuestMode, _ id: String, variant: String = "control", counters: [String: Int] = [:]
    ) throws {
        try engine.store.createUser(
            User(
                id: id, device: nil, state: .anonymous, promptState: "anonymous", createdAt: start, lastSeenAt: start,
                linkedAt: nil),
            credentials: nil)
        _ = try engine.forceVariant(variant, of: "auth_prompts", user: id, now: start)
        for (action, total) in counters {
            _ = try engine.track(TrackedEvent(user: id, action: action, at: start, count: total), now: start)
        }
    }

    @Test func recordingMovesStateAndHistory() throws {
        let engine = try engine()
        try insertUser(engine, "u1", counters: ["recipe_created": 1])
        #expect(try engine.nextPrompt(user: "u1", trigger: nil, now: hours(1)).offer?.context == "first_recipe_success")
        let shown = try engine.recordPrompt(.shown, context: "first_recipe_success", user: "u1", now: hours(1))
        #expect(shown.promptState == .prompted)
        let completed = try engine.recordPrompt(
            .completed, context: "first_recipe_success", user: "u1", now: hours(1.1))
        #expect(completed.promptState == .authenticated)
        let history = try engine.promptHistory(user: "u1")
        #expect(history.outcomes.map(\.outcome) == [.shown, .completed])
        #expect(history.promptState == .authenticated)
        #expect(try engine.nextPrompt(user: "u1", trigger: nil, now: hours(100)) == .nothingDue(.authenticated))
    }

    @Test func theStoredVariantShapesTheStrategy() throws {
        let engine = try engine()
        try insertUser(engine, "d", variant: "delayed", counters: ["recipe_created": 1])
        // The delayed variant has first_recipe_success off.
        #expect(try engine.nextPrompt(user: "d", trigger: nil, now: hours(1)) == .nothingDue(.noEligibleRule))
        let strategy = try engine.promptStrategy(user: "d", now: hours(1))
        #expect(strategy.cooldown == TimeSpan(amount: 72, unit: .hours))
    }

    @Test func unknownUsersContextsAndTriggersAreRefusedPrecisely() throws {
        let engine = try engine()
        try insertUser(engine, "u1")
        #expect(throws: GuestModeError(.userNotFound, "no user 'ghost' in this store")) {
            try engine.nextPrompt(user: "ghost", trigger: nil, now: hours(1))
        }
        #expect(
            performing: { try engine.recordPrompt(.shown, context: "nope", user: "u1", now: hours(1)) },
            throws: { ($0 as? GuestModeError)?.kind == .usage })
        #expect(
            performing: { try engine.nextPrompt(user: "u1", trigger: "nope", now: hours(1)) },
            throws: { ($0 as? GuestModeError)?.code == .unknownTrigger })
    }
}

@Suite struct StoredTimeTests {
    @Test func storedTimesReadAndWriteLikeFoundation() throws {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        for text in [
            "1970-01-01T00:00:00.000Z", "2000-02-29T23:59:59.999Z", "2026-11-22T09:30:00.123Z",
            "2100-03-01T00:00:00.001Z",
            "1969-12-31T23:59:59.500Z", "1600-01-01T12:00:00.000Z",
        ] {
            let date = try #require(Timestamp.parse(text), "\(text)")
            let reference = try #require(formatter.date(from: text))
            #expect(abs(date.timeIntervalSince(reference)) < 0.0005, "\(text)")
            #expect(Timestamp.format(date) == text)
        }
        #expect(Timestamp.parse("2026-11-22T09:30:00Z") == Timestamp.parse("2026-11-22T09:30:00+00:00"))
    }

    @Test func fixedSpansAreExactAndMonthsFollowTheCalendar() {
        let start = Timestamp.parse("2026-01-31T10:00:00Z")!
        #expect(TimeSpan(amount: 24, unit: .hours).added(to: start) == Timestamp.parse("2026-02-01T10:00:00Z"))
        #expect(TimeSpan(amount: 2, unit: .weeks).added(to: start) == Timestamp.parse("2026-02-14T10:00:00Z"))
        #expect(TimeSpan(amount: 1, unit: .months).added(to: start) == Timestamp.parse("2026-02-28T10:00:00Z"))
        #expect(TimeSpan(amount: 3, unit: .days).subtracted(from: start) == Timestamp.parse("2026-01-28T10:00:00Z"))
    }
}
