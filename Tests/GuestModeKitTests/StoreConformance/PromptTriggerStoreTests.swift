import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// The prompt snapshot (limits, meters, raised triggers, reset), triggers
/// raised by refusals, `prompt reset` and backups queued by outcomes, on
/// every backend.
@Suite struct PromptTriggerStoreTests {
    @Test(arguments: StoreBackend.allCases)
    func theSnapshotHoldsLimitsMetersAndTriggers(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        #expect(try store.promptSnapshot(userID: "nobody", profile: profile, now: day(2)) == nil)
        try store.createUser(newUser("u"), credentials: nil)
        for index in 1...3 {
            _ = try GuestMode(profile: profile, store: store).putRecord(
                user: "u", collection: "subscriptions", key: "s\(index)", json: "{}", now: day(2))
        }
        #expect(try store.raisePromptTriggers(["guest_cap_refused"], userID: "u", at: day(3)))
        // An earlier raise never moves the time back; a later one moves it forward.
        #expect(try store.raisePromptTriggers(["guest_cap_refused"], userID: "u", at: day(2)))
        #expect(try !store.raisePromptTriggers(["guest_cap_refused"], userID: "nobody", at: day(3)))
        let facts = try #require(try store.promptSnapshot(userID: "u", profile: profile, now: day(4)))
        #expect(
            facts.limits["subscriptions"]
                == CollectionLimit(
                    collection: "subscriptions", tier: .guest, used: 3, cap: 5, outcome: .allowed))
        #expect(facts.limits["settings"]?.cap == nil)
        #expect(facts.raisedTriggers == ["guest_cap_refused": day(3)])
        #expect(facts.resetAt == nil)
        #expect(try store.promptFacts(userID: "u")?.history == facts.history)
        _ = try store.raisePromptTriggers(["guest_cap_refused"], userID: "u", at: day(5))
        #expect(
            try store.promptSnapshot(userID: "u", profile: profile, now: day(5))?.raisedTriggers.values.first == day(5))
    }

    @Test(arguments: StoreBackend.allCases)
    func theSnapshotHoldsEveryMeter(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "voice")
        try store.createUser(newUser("u"), credentials: nil)
        _ = try GuestMode(profile: profile, store: store).useMeter(
            user: "u", meter: "api_minutes", amount: 45, key: nil, now: day(2))
        let facts = try #require(try store.promptSnapshot(userID: "u", profile: profile, now: day(2)))
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
        #expect(try store.promptSnapshot(userID: "u", profile: profile, now: day(2))?.raisedTriggers == [:])
        let refused = try engine.putRecord(user: "u", collection: "subscriptions", key: "s6", json: "{}", now: day(3))
        #expect(refused.outcome == .needsAccount)
        let facts = try #require(try store.promptSnapshot(userID: "u", profile: profile, now: day(3)))
        #expect(facts.raisedTriggers == ["guest_cap_refused": day(3)])
        #expect(facts.limits["subscriptions"]?.used == 5, "the refusal itself stored nothing")
        let offer = try #require(try engine.nextPrompt(for: "u", trigger: nil, now: day(3)).offer)
        #expect(offer.context == "guest_cap_reached")
        #expect(offer.content.primaryAction == "Create a free account — save your 5 subscriptions")
    }

    @Test(arguments: StoreBackend.allCases)
    func aRefusedUseOrCheckRaisesTheMeterTrigger(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "voice")
        let engine = GuestMode(profile: profile, store: store)
        try store.createUser(newUser("u"), credentials: nil)
        _ = try engine.useMeter(user: "u", meter: "api_minutes", amount: 58, key: nil, now: day(2))
        #expect(try engine.checkMeter(user: "u", meter: "api_minutes", amount: 1, now: day(2)).isAllowed)
        #expect(try store.promptSnapshot(userID: "u", profile: profile, now: day(2))?.raisedTriggers == [:])
        #expect(try !engine.checkMeter(user: "u", meter: "api_minutes", amount: 5, now: day(3)).isAllowed)
        #expect(
            try store.promptSnapshot(userID: "u", profile: profile, now: day(3))?.raisedTriggers == [
                "minutes_refused": day(3)
            ])
        #expect(try !engine.useMeter(user: "u", meter: "api_minutes", amount: 5, key: nil, now: day(4)).isAllowed)
        #expect(
            try store.promptSnapshot(userID: "u", profile: profile, now: day(4))?.raisedTriggers == [
                "minutes_refused": day(4)
            ])
        #expect(try engine.nextPrompt(for: "u", trigger: nil, now: day(4)).offer?.context == "session_refused")
    }

    @Test(arguments: StoreBackend.allCases)
    func resetUndoesNeverAndRecordsAnEvent(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "habits")
        #expect(profile.backup.queuesOnChange)
        #expect(try store.resetPromptState(userID: "nobody", at: day(2), queuesBackup: true) == nil)
        try store.createUser(newUser("u"), credentials: nil)
        #expect(try store.resetPromptState(userID: "u", at: day(2), queuesBackup: true) == false)
        #expect(try store.outboxEntries().isEmpty, "nothing reset, nothing queued")
        let never = PromptHistoryEntry(context: "c", outcome: .never, at: day(3))
        #expect(try store.recordPromptOutcome(never, userID: "u", queuesBackup: true) == .neverAsk)
        #expect(try store.outboxEntries().map(\.userId) == ["u"], "an outcome, never included, queues the backup")
        #expect(try store.resetPromptState(userID: "u", at: day(4), queuesBackup: true) == true)
        let facts = try #require(try store.promptSnapshot(userID: "u", profile: profile, now: day(4)))
        #expect(facts.promptState == .dismissed)
        #expect(facts.resetAt == day(4))
        #expect(!facts.saidNever)
        #expect(try store.counters(of: "u")[PromptTrigger.resetEventAction] == 1)
        #expect(try store.resetPromptState(userID: "u", at: day(5), queuesBackup: true) == false)
    }

    @Test(arguments: StoreBackend.allCases)
    func anUnlinkAfterAResetRebuildsTheStateFromLaterOutcomesOnly(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "habits")
        try store.createUser(newUser("u"), credentials: nil)
        let never = PromptHistoryEntry(context: "c", outcome: .never, at: day(1))
        #expect(try store.recordPromptOutcome(never, userID: "u", queuesBackup: false) == .neverAsk)
        #expect(try store.resetPromptState(userID: "u", at: day(2), queuesBackup: false) == true)
        _ = try IdentityStoreTests().link(
            store, profile, LinkRequest(user: "u", provider: "apple", subject: "s", email: nil), now: day(3))
        #expect(try store.unlink(user: "u", provider: "apple", profile: profile, now: day(4)).promptState == "anonymous")

        let again = PromptHistoryEntry(context: "c", outcome: .never, at: day(5))
        #expect(try store.recordPromptOutcome(again, userID: "u", queuesBackup: false) == .neverAsk)
        _ = try IdentityStoreTests().link(
            store, profile, LinkRequest(user: "u", provider: "apple", subject: "s", email: nil), now: day(6))
        #expect(
            try store.unlink(user: "u", provider: "apple", profile: profile, now: day(7)).promptState == "never_ask",
            "a never after the reset still counts")
    }

    @Test(arguments: StoreBackend.allCases)
    func outcomesQueueBackupsOnlyWhenAsked(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "recipes")
        try store.createUser(newUser("a"), credentials: nil)
        try store.createUser(newUser("b"), credentials: nil)
        _ = try store.recordPromptOutcome(
            PromptHistoryEntry(context: "c", outcome: .shown, at: day(2)), userID: "a", queuesBackup: false)
        try store.recordPromptOutcomes(
            [PromptRecord(user: "a", context: "c", outcome: .later, at: day(2))], queuesBackup: false)
        #expect(try store.outboxEntries().isEmpty)
        try store.recordPromptOutcomes(
            [
                PromptRecord(user: "b", context: "c", outcome: .shown, at: day(2)),
                PromptRecord(user: "a", context: "c", outcome: .never, at: day(3)),
            ], queuesBackup: true)
        #expect(try Set(store.outboxEntries().map(\.userId)) == ["a", "b"])
    }
}
