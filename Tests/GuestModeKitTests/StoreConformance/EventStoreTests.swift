import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// Creates guests through the event store (a batch with `creatingUsers`), so
/// these suites need no other area's protocol.
func makeGuests(_ ids: [String], in store: any GuestStore, profile: Profile, at time: Date = day(1)) throws {
    let events = ids.map { TrackedEvent(user: $0, action: profile.actions[0], at: time) }
    _ = try store.applyEvents(events, creatingUsers: true, profile: profile, now: time)
}

@Suite("EventStore conformance")
struct EventStoreTests {
    @Test(arguments: StoreBackend.allCases)
    func trackingCountsAndRepeatedKeysCountOnce(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try makeGuests(["u1"], in: store, profile: profile)
        let event = TrackedEvent(user: "u1", action: "subscription_added", at: day(1), count: 3, idempotencyKey: "k1")
        let first = try store.trackEvent(event, profile: profile, now: day(1))
        #expect(first == TrackResult(user: "u1", action: "subscription_added", isCounted: true, total: 3))
        let repeated = try store.trackEvent(event, profile: profile, now: day(2))
        #expect(!repeated.isCounted)
        #expect(repeated.total == 3)
        let withoutKey = TrackedEvent(user: "u1", action: "subscription_added", at: day(1))
        #expect(try store.trackEvent(withoutKey, profile: profile, now: day(1)).total == 4)
        #expect(
            try store.trackEvent(withoutKey, profile: profile, now: day(1)).total == 5,
            "events without a key always count")
        #expect(try store.counters(of: "u1") == ["app_opened": 1, "subscription_added": 5])
    }

    @Test(arguments: StoreBackend.allCases)
    func aKeyReusedForAnotherActionIsRefusedAndChangesNothing(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try makeGuests(["u1"], in: store, profile: profile)
        _ = try store.trackEvent(
            TrackedEvent(user: "u1", action: "paywall_viewed", at: day(1), idempotencyKey: "k"), profile: profile,
            now: day(1))
        let before = try store.counters(of: "u1")
        #expect {
            try store.trackEvent(
                TrackedEvent(user: "u1", action: "reminder_set", at: day(1), idempotencyKey: "k"), profile: profile,
                now: day(1))
        } throws: { ($0 as? GuestModeError)?.code == .idempotencyKeyReused }
        #expect(try store.counters(of: "u1") == before)
    }

    @Test(arguments: StoreBackend.allCases)
    func trackingAndCountersOfAMissingUserThrowNotFound(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        #expect {
            try store.trackEvent(
                TrackedEvent(user: "ghost", action: "app_opened", at: day(1)), profile: profile, now: day(1))
        } throws: { ($0 as? GuestModeError)?.code == .userNotFound }
        #expect { try store.counters(of: "ghost") } throws: { ($0 as? GuestModeError)?.code == .userNotFound }
        #expect(try !store.containsUser("ghost"))
    }

    @Test(arguments: StoreBackend.allCases)
    func aBatchCreatesUsersCountsOnceAndSumsCounters(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let events = [
            TrackedEvent(user: "a", action: "app_opened", at: day(1), idempotencyKey: "1"),
            TrackedEvent(user: "a", action: "app_opened", at: day(2), count: 2, idempotencyKey: "2"),
            TrackedEvent(user: "b", action: "reminder_set", at: day(1)),
            TrackedEvent(user: "a", action: "app_opened", at: day(1), idempotencyKey: "1"),
        ]
        let first = try store.applyEvents(events, creatingUsers: true, profile: profile, now: day(3))
        #expect(first == EventBatchResult(counted: 3, duplicates: 1, usersCreated: 2))
        #expect(try store.containsUser("a"))
        #expect(try store.containsUser("b"))
        #expect(try store.counters(of: "a") == ["app_opened": 3])
        #expect(try store.counters(of: "b") == ["reminder_set": 1])

        let keyed = events.filter { $0.idempotencyKey != nil }
        let repeated = try store.applyEvents(keyed, creatingUsers: true, profile: profile, now: day(3))
        #expect(
            repeated == EventBatchResult(counted: 0, duplicates: 3, usersCreated: 0), "a repeated batch counts nothing")
        #expect(try store.counters(of: "a") == ["app_opened": 3])
    }

    @Test(arguments: StoreBackend.allCases)
    func aFailingBatchWritesNothing(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try makeGuests(["a"], in: store, profile: profile)
        _ = try store.trackEvent(
            TrackedEvent(user: "a", action: "paywall_viewed", at: day(1), idempotencyKey: "k"), profile: profile,
            now: day(1))
        let before = try store.counters(of: "a")
        let events = [
            TrackedEvent(user: "new", action: "app_opened", at: day(1)),
            TrackedEvent(user: "a", action: "app_opened", at: day(1)),
            TrackedEvent(user: "a", action: "reminder_set", at: day(1), idempotencyKey: "k"),
        ]
        #expect { try store.applyEvents(events, creatingUsers: true, profile: profile, now: day(1)) } throws: {
            ($0 as? GuestModeError)?.code == .idempotencyKeyReused
        }
        #expect(try store.counters(of: "a") == before)
        #expect(try !store.containsUser("new"), "users created by a failed batch are rolled back")
    }

    @Test(arguments: StoreBackend.allCases)
    func aBatchWithoutCreatingUsersRefusesUnknownUsers(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try makeGuests(["a"], in: store, profile: profile)
        let events = [
            TrackedEvent(user: "a", action: "reminder_set", at: day(1)),
            TrackedEvent(user: "ghost", action: "app_opened", at: day(1)),
        ]
        #expect(throws: (any Error).self) {
            try store.applyEvents(events, creatingUsers: false, profile: profile, now: day(1))
        }
        #expect(try store.counters(of: "a") == ["app_opened": 1])
        #expect(try !store.containsUser("ghost"))
    }

    @Test(arguments: StoreBackend.allCases)
    func anEmptyBatchDoesNothing(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        #expect(
            try store.applyEvents([], creatingUsers: true, profile: profile, now: day(1))
                == EventBatchResult(counted: 0, duplicates: 0, usersCreated: 0))
    }
}
