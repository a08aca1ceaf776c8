import Foundation
import Testing

@testable import GuestModeKit

/// A counter addition that would pass `Bounds` is refused
/// with `count_overflow` and writes nothing, on both backends, where SQLite
/// used to store a REAL and PostgreSQL to fail with exit 1.
@Suite("Counter bounds conformance")
struct CounterBoundsTests {
    /// The store primitives take any count (the engine bounds what comes in),
    /// so a counter is brought to the edge through them.
    static let nearlyFull = Int(Bounds.maximumCounterTotal) - 1

    @Test(arguments: StoreBackend.allCases)
    func anEventPastTheBoundIsRefusedAndWritesNothing(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        try makeGuests(["u1"], in: store, profile: profile)
        let edge = TrackedEvent(user: "u1", action: "recipe_viewed", at: day(1), count: Self.nearlyFull)
        #expect(try store.trackEvent(edge, profile: profile, now: day(1)).total == Self.nearlyFull)
        let one = TrackedEvent(user: "u1", action: "recipe_viewed", at: day(1))
        #expect(try store.trackEvent(one, profile: profile, now: day(1)).total == Int(Bounds.maximumCounterTotal))
        let before = try store.events(of: "u1", action: nil, since: nil, limit: nil).count
        let past = TrackedEvent(user: "u1", action: "recipe_viewed", at: day(2), count: 5)
        #expect(errorCode { _ = try store.trackEvent(past, profile: profile, now: day(2)) } == .countOverflow)
        #expect(
            errorCode { _ = try store.applyEvents([past], creatingUsers: false, profile: profile, now: day(2)) }
                == .countOverflow)
        #expect(try store.counters(of: "u1")["recipe_viewed"] == Int(Bounds.maximumCounterTotal))
        #expect(try store.events(of: "u1", action: nil, since: nil, limit: nil).count == before)
        // Other counters still count.
        #expect(
            try store.trackEvent(
                TrackedEvent(user: "u1", action: "app_opened", at: day(2)), profile: profile, now: day(2)
            ).total == 2)
    }

    @Test(arguments: StoreBackend.allCases)
    func aMergeThatWouldOverflowACounterIsRefusedAndMovesNothing(backend: StoreBackend) throws {
        let (store, engine, guest, account) = try seededTransfer(backend)
        _ = try store.trackEvent(
            TrackedEvent(user: account, action: "recipe_created", at: day(3), count: Self.nearlyFull),
            profile: engine.profile, now: day(3))
        let guestCounters = try store.counters(of: guest)
        let accountCounters = try store.counters(of: account)
        #expect(
            errorCode {
                _ = try engine.merge(guest: guest, into: account, policy: .union, dryRun: false, now: day(4))
            } == .countOverflow)
        #expect(try store.counters(of: guest) == guestCounters)
        #expect(try store.counters(of: account) == accountCounters)
    }
}
