import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// The prompt snapshot the engine reads in one transaction.
func promptSnapshot(_ store: any GuestStore, _ profile: Profile, of userID: String, now: Date) throws -> PromptFacts? {
    try store.read { try $0.promptSnapshot(of: userID, profile: profile, reads: PromptReads(), now: now) }
}

/// The prompt snapshot (limits, meters, raised triggers, reset), triggers
/// raised by refusals, `prompt reset` and backups queued by outcomes, on
/// every backend.
@Suite struct PromptTriggerStoreTests {
    @Test(arguments: StoreBackend.allCases)
    func theSnapshotHoldsLimitsMetersAndTriggers(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        #expect(try promptSnapshot(store, profile, of: "nobody", now: day(2)) == nil)
        try store.createUser(newUser("u"), credentials: nil)
        for index in 1...3 {
            _ = try engine.putRecord(user: "u", collection: "subscriptions", key: "s\(index)", json: "{}", now: day(2))
        }
        let refusal = RefusalEvent.recordRefused(collection: "subscriptions", outcome: .needsAccount)
        try engine.raisePromptTriggers(for: refusal, userID: "u", now: day(3))
        // An earlier raise never moves the time back; a later one moves it forward.
        try engine.raisePromptTriggers(for: refusal, userID: "u", now: day(2))
        // A user deleted meanwhile raises nothing and is no failure.
        try engine.raisePromptTriggers(for: refusal, userID: "nobody", now: day(3))
        #expect(try store.read { try $0.userFlags(of: "nobody", prefix: "") }.isEmpty)
        let facts = try #require(try promptSnapshot(store, profile, of: "u", now: day(4)))
        #expect(
            facts.limits["subscriptions"]
                == CollectionLimit(
                    collection: "subscriptions", tier: .guest, used: 3, cap: 5, outcome: .allowed))
        #expect(facts.limits["settings"]?.cap == nil)
        #expect(facts.raisedTriggers == ["guest_cap_refused": day(3)])
        #expect(facts.resetAt == nil)
        #expect(try storedPromptFacts(store, of: "u")?.history == facts.history)
        try engine.raisePromptTriggers(for: refusal, userID: "u", now: day(5))
        #expect(try promptSnapshot(store, profile, of: "u", now: day(5))?.raisedTriggers.values.first == day(5))
    }

    @Test(arguments: StoreBackend.allCases)
    func theSnapshotHoldsEveryMeter(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "voice")
        try store.createUser(newUser("u"), credentials: nil)
        _ = try GuestMode(profile: profile, store: store).useMeter(
            user: "u", meter: "api_minutes", amount: 45, key: nil, now: day(2))
        let facts = try #require(try promptSnapshot(store, profile, of: "u", now: day(2)))
        #expect(facts.meters["api_minutes"]?.used == 45)
        #expect(facts.meters["api_minutes"]?.remaining == 15)
        #expect(facts.meters["api_minutes"]?.level == .warning)
    }

    @Test(arguments: StoreBackend.allCases)
    func aRefusedPutRaisesTheTriggerOfItsOutcomeOnly(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        try store.createUser(newUser("u"), credentials: nil)
        for index in 1...5 {
            #expect(
                try engine.putRecord(user: "u", collection: "subscriptions", key: "s\(index)", json: "{}", now: day(2))
                    .outcome == .allowed)
        }
        #expect(try promptSnapshot(store, profile, of: "u", now: day(2))?.raisedTriggers == [:])
        let refused = try engine.putRecord(user: "u", collection: "subscriptions", key: "s6", json: "{}", now: day(3))
        #expect(refused.outcome == .needsAccount)
        let facts = try #require(try promptSnapshot(store, profile, of: "u", now: day(3)))
        #expect(facts.raisedTriggers == ["guest_cap_refused": day(3)])
        #expect(facts.limits["subscriptions"]?.used == 5, "the refusal itself stored nothing")
        let offer = try #require(try engine.nextPrompt(user: "u", trigger: nil, now: day(3)).offer)
        #expect(offer.context == "guest_cap_reached")
        #expect(offer.content.primaryAction == "Create a free account — save your 5 subscriptions")
    }

    @Test(arguments: StoreBackend.allCases)
    func aRefusedUseOrRaisingCheckRaisesTheMeterTrigger(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "voice")
        let engine = GuestMode(profile: profile, store: store)
        try store.createUser(newUser("u"), credentials: nil)
        _ = try engine.useMeter(user: "u", meter: "api_minutes", amount: 58, key: nil, now: day(2))
        #expect(try engine.checkMeter(user: "u", meter: "api_minutes", amount: 1, now: day(2)).isAllowed)
        #expect(try promptSnapshot(store, profile, of: "u", now: day(2))?.raisedTriggers == [:])
        #expect(try !engine.checkMeter(user: "u", meter: "api_minutes", amount: 5, now: day(3)).isAllowed)
        #expect(
            try promptSnapshot(store, profile, of: "u", now: day(3))?.raisedTriggers == [:], "the gate only reads")
        #expect(try !engine.checkMeterRaisingPrompt(user: "u", meter: "api_minutes", amount: 5, now: day(3)).isAllowed)
        #expect(try promptSnapshot(store, profile, of: "u", now: day(3))?.raisedTriggers == ["minutes_refused": day(3)])
        #expect(try !engine.useMeter(user: "u", meter: "api_minutes", amount: 5, key: nil, now: day(4)).isAllowed)
        #expect(try promptSnapshot(store, profile, of: "u", now: day(4))?.raisedTriggers == ["minutes_refused": day(4)])
        #expect(try engine.nextPrompt(user: "u", trigger: nil, now: day(4)).offer?.context == "session_refused")
    }

    @Test(arguments: StoreBackend.allCases)
    func resetUndoesNeverAndRecordsAnEvent(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "habits")
        let engine = GuestMode(profile: profile, store: store)
        #expect(profile.backup.queuesOnChange)
        expectFailure(.notFound, code: .userNotFound) { _ = try engine.resetPrompts(user: "nobody", now: day(2)) }
        try store.createUser(newUser("u"), credentials: nil)
        #expect(try !engine.resetPrompts(user: "u", now: day(2)).wasReset)
        #expect(try store.outboxEntries().isEmpty, "nothing reset, nothing queued")
        #expect(
            try engine.recordPrompt(.never, context: "protect_streak", user: "u", now: day(3)).promptState == .neverAsk)
        #expect(try store.outboxEntries().map(\.userID) == ["u"], "an outcome, never included, queues the backup")
        let reset = try engine.resetPrompts(user: "u", now: day(4))
        #expect(reset.wasReset && reset.promptState == .dismissed)
        let facts = try #require(try promptSnapshot(store, profile, of: "u", now: day(4)))
        #expect(facts.promptState == .dismissed)
        #expect(facts.resetAt == day(4))
        #expect(!facts.saidNever)
        #expect(try store.counters(user: "u")[PromptTrigger.resetEventAction] == 1)
        #expect(try !engine.resetPrompts(user: "u", now: day(5)).wasReset)
    }

    @Test(arguments: StoreBackend.allCases)
    func anUnlinkAfterAResetRebuildsTheStateFromLaterOutcomesOnly(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "habits")
        let engine = GuestMode(profile: profile, store: store)
        try store.createUser(newUser("u"), credentials: nil)
        #expect(
            try engine.recordPrompt(.never, context: "protect_streak", user: "u", now: day(1)).promptState == .neverAsk)
        #expect(try engine.resetPrompts(user: "u", now: day(2)).wasReset)
        _ = try IdentityStoreTests().link(
            store, profile, LinkRequest(user: "u", provider: "apple", subject: "s", email: nil), now: day(3))
        #expect(try engine.unlink(user: "u", provider: "apple", now: day(4)).promptState == "anonymous")

        #expect(
            try engine.recordPrompt(.never, context: "protect_streak", user: "u", now: day(5)).promptState == .neverAsk)
        _ = try IdentityStoreTests().link(
            store, profile, LinkRequest(user: "u", provider: "apple", subject: "s", email: nil), now: day(6))
        #expect(
            try engine.unlink(user: "u", provider: "apple", now: day(7)).promptState == "never_ask",
            "a never after the reset still counts")
    }

    @Test(arguments: StoreBackend.allCases)
    func outcomesQueueBackupsOnlyWhenTheProfileAsks(backend: StoreBackend) throws {
        let (store, recipes) = try backend.makeStore(profile: "recipes")
        #expect(!recipes.backup.queuesOnChange)
        let quiet = GuestMode(profile: recipes, store: store)
        try store.createUser(newUser("a"), credentials: nil)
        try store.createUser(newUser("b"), credentials: nil)
        _ = try quiet.recordPrompt(.shown, context: "reengagement", user: "a", now: day(2))
        _ = try quiet.recordPrompts([PromptRecord(user: "a", context: "reengagement", outcome: .later, at: day(2))])
        #expect(try store.outboxEntries().isEmpty)
        var queuing = recipes
        queuing.backup.queuesOnChange = true
        _ = try GuestMode(profile: queuing, store: store).recordPrompts([
            PromptRecord(user: "b", context: "reengagement", outcome: .shown, at: day(2)),
            PromptRecord(user: "a", context: "reengagement", outcome: .never, at: day(3)),
        ])
        #expect(try Set(store.outboxEntries().map(\.userID)) == ["a", "b"])
    }

    /// The two backends used to differ here: SQLite queued a backup per
    /// outcome, so a log out of time order left it queued after its latest
    /// outcome; PostgreSQL queued each user once, at its latest outcome.
    @Test(arguments: StoreBackend.allCases)
    func aLogQueuesEachUsersBackupOnceAtItsLatestOutcome(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "habits")
        try store.createUser(newUser("u"), credentials: nil)
        _ = try GuestMode(profile: profile, store: store).recordPrompts([
            PromptRecord(user: "u", context: "protect_streak", outcome: .shown, at: day(3)),
            PromptRecord(user: "u", context: "protect_streak", outcome: .later, at: day(2)),
        ])
        #expect(try store.outboxEntries().map(\.queuedAt) == [day(3)])
    }
}
