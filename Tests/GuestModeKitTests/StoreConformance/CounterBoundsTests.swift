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
        let engine = GuestMode(profile: profile, store: store)
        try makeGuests(["u1"], in: store, profile: profile)
        try store.write { try $0.addToCounter(user: "u1", action: "recipe_viewed", count: Self.nearlyFull) }
        let one = TrackedEvent(user: "u1", action: "recipe_viewed", at: day(1))
        #expect(try engine.track(one, now: day(1)).total == Int(Bounds.maximumCounterTotal))
        let before = try engine.events(user: "u1", matching: EventQuery()).count
        let past = TrackedEvent(user: "u1", action: "recipe_viewed", at: day(2), count: 5)
        #expect(errorCode { _ = try engine.track(past, now: day(2)) } == .countOverflow)
        #expect(
            errorCode { _ = try applyEvents([past], creatingUsers: false, in: store, profile: profile, now: day(2)) }
                == .countOverflow)
        #expect(try engine.counters(user: "u1")["recipe_viewed"] == Int(Bounds.maximumCounterTotal))
        #expect(try engine.events(user: "u1", matching: EventQuery()).count == before)
        // Other counters still count.
        #expect(try engine.track(TrackedEvent(user: "u1", action: "app_opened", at: day(2)), now: day(2)).total == 2)
    }

    @Test(arguments: StoreBackend.allCases)
    func partialSumsOfABatchPastTheBoundAreRefused(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        try makeGuests(["u1"], in: store, profile: profile)
        // Each event fits; their sum within the batch does not.
        let half = TrackedEvent(user: "u1", action: "recipe_viewed", at: day(1), count: Self.nearlyFull / 2 + 1)
        #expect(
            errorCode {
                _ = try applyEvents([half, half], creatingUsers: false, in: store, profile: profile, now: day(1))
            }
                == .countOverflow)
        #expect(try store.counters(user: "u1")["recipe_viewed"] == nil)
    }

    /// A batch of hundreds of users, whose counters are written many to a
    /// statement: the one past the bound is still refused by name, and
    /// nothing of the batch stays.
    @Test(arguments: StoreBackend.allCases)
    func aCounterPastTheBoundAmongManyIsRefusedByName(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        let users = (0..<250).map { String(format: "u%03d", $0) }
        try makeGuests(users, in: store, profile: profile)
        try store.write { try $0.addToCounter(user: "u170", action: "recipe_viewed", count: Self.nearlyFull) }
        let events = users.map { TrackedEvent(user: $0, action: "recipe_viewed", at: day(2), count: 2) }
        #expect {
            _ = try applyEvents(events, creatingUsers: false, in: store, profile: profile, now: day(2))
        } throws: { error in
            guard let error = error as? GuestModeError else { return false }
            return error.code == .countOverflow && error.message.contains("u170")
                && error.message.contains("recipe_viewed")
        }
        #expect(try store.counters(user: "u169")["recipe_viewed"] == nil)
        #expect(try store.counters(user: "u170")["recipe_viewed"] == Self.nearlyFull)
        #expect(try store.read { try $0.events(of: "u001", action: "recipe_viewed", since: nil, limit: nil) }.isEmpty)
    }

    @Test(arguments: StoreBackend.allCases)
    func aMergeThatWouldOverflowACounterIsRefusedAndMovesNothing(backend: StoreBackend) throws {
        let (store, engine, guest, account) = try seededTransfer(backend)
        try store.write { try $0.addToCounter(user: account, action: "recipe_created", count: Self.nearlyFull) }
        let guestCounters = try store.counters(user: guest)
        let accountCounters = try store.counters(user: account)
        #expect(
            errorCode {
                _ = try engine.merge(guest: guest, into: account, policy: .union, dryRun: false, now: day(4))
            } == .countOverflow)
        #expect(try store.counters(user: guest) == guestCounters)
        #expect(try store.counters(user: account) == accountCounters)
    }
}
