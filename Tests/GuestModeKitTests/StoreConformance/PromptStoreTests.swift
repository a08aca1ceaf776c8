import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// The prompt facts the engine reads about a user, in one read transaction.
func storedPromptFacts(_ store: any GuestStore, of userID: String) throws -> PromptFacts? {
    try store.read { try $0.promptFacts(of: userID)?.facts }
}

/// The prompt history a store keeps, recorded and read through the engine,
/// on every backend (PromptPolicyTests covers the pure policy).
@Suite struct PromptStoreTests {
    @Test(arguments: StoreBackend.allCases)
    func factsOfANewGuestAndOfNobody(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "recipes")
        #expect(try storedPromptFacts(store, of: "nobody") == nil)
        try store.createUser(newUser("u", at: day(2)), credentials: nil)
        let facts = try #require(try storedPromptFacts(store, of: "u"))
        #expect(
            facts
                == PromptFacts(
                    userID: "u", userState: .anonymous, promptState: .anonymous, firstSeen: day(2), counters: [:],
                    history: []))
    }

    @Test(arguments: StoreBackend.allCases)
    func outcomesMoveTheStateAndAreKeptOldestFirst(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        let engine = GuestMode(profile: profile, store: store)
        let record = { (entry: PromptHistoryEntry, userID: String) in
            try engine.recordPrompt(entry.outcome, context: entry.context, user: userID, now: entry.at).promptState
        }
        try store.createUser(newUser("u"), credentials: nil)
        try store.createUser(newUser("other"), credentials: nil)
        let shown = PromptHistoryEntry(context: "first_recipe_success", outcome: .shown, at: day(3))
        let later = PromptHistoryEntry(context: "first_recipe_success", outcome: .later, at: day(3))
        let early = PromptHistoryEntry(context: "reengagement", outcome: .shown, at: day(2))
        #expect(try record(shown, "u") == .prompted)
        #expect(try record(later, "u") == .dismissed)
        // Recorded last but earlier in time: the history is ordered by time, then by arrival.
        #expect(try record(early, "u") == .prompted)
        let facts = try #require(try storedPromptFacts(store, of: "u"))
        #expect(facts.history == [early, shown, later])
        #expect(facts.promptState == .prompted)
        #expect(try store.user(id: "u").promptState == PromptState.prompted.rawValue)
        #expect(try storedPromptFacts(store, of: "other")?.history == [], "another user's history is its own")

        expectFailure(.notFound, code: .userNotFound) { _ = try record(shown, "nobody") }
        let never = PromptHistoryEntry(context: "reengagement", outcome: .never, at: day(4))
        #expect(try record(never, "u") == .neverAsk)
        #expect(try record(shown, "u") == .neverAsk, "never ask sticks")
    }

    @Test(arguments: StoreBackend.allCases)
    func aLogIsRecordedWholeAndFoldedInOrder(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        let engine = GuestMode(profile: profile, store: store)
        for id in ["a", "b", "c"] { try store.createUser(newUser(id), credentials: nil) }
        let log = [
            PromptRecord(user: "b", context: "reengagement", outcome: .shown, at: day(2)),
            PromptRecord(user: "a", context: "reengagement", outcome: .shown, at: day(2)),
            PromptRecord(user: "b", context: "reengagement", outcome: .dismissed, at: day(2)),
            PromptRecord(user: "a", context: "reengagement", outcome: .completed, at: day(3)),
            PromptRecord(user: "b", context: "share_intent", outcome: .shown, at: day(4)),
            PromptRecord(user: "a", context: "share_intent", outcome: .never, at: day(4)),
        ]
        #expect(try engine.recordPrompts(log) == log.count)
        let a = try #require(try storedPromptFacts(store, of: "a"))
        let b = try #require(try storedPromptFacts(store, of: "b"))
        #expect(a.promptState == .authenticated)
        #expect(b.promptState == .prompted)
        #expect(b.history.map(\.outcome) == [.shown, .dismissed, .shown], "same time: in log order")
        #expect(a.history.map(\.outcome) == [.shown, .completed, .never])
        #expect(try storedPromptFacts(store, of: "c")?.history == [])
        #expect(try engine.recordPrompts([]) == 0)
    }

    @Test(arguments: StoreBackend.allCases)
    func aLogNamingAMissingUserRecordsNothing(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        try store.createUser(newUser("a"), credentials: nil)
        let log = [
            PromptRecord(user: "a", context: "reengagement", outcome: .shown, at: day(2)),
            PromptRecord(user: "ghost", context: "reengagement", outcome: .shown, at: day(2)),
            PromptRecord(user: "phantom", context: "reengagement", outcome: .shown, at: day(2)),
        ]
        do {
            _ = try GuestMode(profile: profile, store: store).recordPrompts(log)
            Issue.record("a missing user was accepted")
        } catch let error as GuestModeError {
            #expect(error.code == .userNotFound)
            #expect(error.message.contains("'ghost'"), "the first missing user is named: \(error.message)")
        }
        let facts = try #require(try storedPromptFacts(store, of: "a"))
        #expect(facts.history.isEmpty)
        #expect(facts.promptState == .anonymous)
    }

    @Test(arguments: StoreBackend.allCases)
    func theEngineRecordsAndReadsHistoryThroughTheStore(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        let engine = GuestMode(profile: profile, store: store)
        try store.createUser(newUser("u"), credentials: nil)
        let shown = try engine.recordPrompt(.shown, context: "first_recipe_success", user: "u", now: day(2))
        #expect(shown.promptState == .prompted)
        #expect(
            try engine.recordPrompts([
                PromptRecord(user: "u", context: "reengagement", outcome: .dismissed, at: day(3))
            ]) == 1)
        let history = try engine.promptHistory(user: "u")
        #expect(history.promptState == .dismissed)
        #expect(history.outcomes.map(\.context) == ["first_recipe_success", "reengagement"])
        expectFailure(.notFound, code: .userNotFound) {
            _ = try engine.recordPrompt(.shown, context: "reengagement", user: "ghost", now: day(2))
        }
        expectFailure(.notFound, code: .userNotFound) { _ = try engine.promptHistory(user: "ghost") }
        // The strategy assigns the user to the profile's experiment through the same store.
        let strategy = try engine.promptStrategy(user: "u", now: day(4))
        #expect(strategy.variants.map(\.experiment) == ["auth_prompts"])
        #expect(
            try store.read { try $0.assignment(of: "u", experiment: "auth_prompts") }?.variant
                == strategy.variants.first?.variant)
    }

    @Test(arguments: StoreBackend.allCases)
    func unlinkingRebuildsTheStateFromTheHistory(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        try store.createUser(newUser("u"), credentials: nil)
        _ = try engine.recordPrompt(.shown, context: "guest_cap_reached", user: "u", now: day(2))
        _ = try engine.recordPrompt(.never, context: "guest_cap_reached", user: "u", now: day(2))
        let request = LinkRequest(user: "u", provider: "apple", subject: "s", email: nil)
        _ = try IdentityStoreTests().link(store, profile, request, now: day(3))
        #expect(try storedPromptFacts(store, of: "u")?.promptState == .authenticated)
        let unlinked = try engine.unlink(user: "u", provider: "apple", now: day(4))
        #expect(unlinked.promptState == PromptState.afterUnlinking(outcomes: [.shown, .never]).rawValue)
        #expect(try storedPromptFacts(store, of: "u")?.userState == .anonymous)
    }
}
