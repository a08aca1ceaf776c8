import Foundation
import Testing

@testable import GuestModeKit
@testable import GuestModePostgres

/// Several processes on several machines share one PostgreSQL store: these
/// race 8 connections (one `PostgresStore` each, as 8 processes would have)
/// on one user's cap, meter, idempotency key and counters, and check that no
/// update is lost and that every limit holds.
@Suite("PostgreSQL concurrency: events, records, meters", .serialized)
struct PostgresEventsConcurrencyTests {
    private static let writers = 8

    @Test func aGuestAtItsCapNeverHoldsMoreRecords() throws {
        let (stores, profile) = try connections(profile: "subscriptions")
        try makeGuests(["u1"], in: stores[0], profile: profile)
        // 8 writers × 4 new keys each against a cap of 5.
        let results = try race(stores) { writer, store in
            try (0..<4).map { index in
                try GuestMode(profile: profile, store: store).putRecord(
                    user: "u1", collection: "subscriptions", key: "w\(writer)-\(index)", json: "{}", now: day(1)
                ).outcome
            }
        }.flatMap { $0 }
        #expect(results.filter { $0 == .allowed }.count == 5)
        #expect(results.filter { $0 == .needsAccount }.count == Self.writers * 4 - 5)
        #expect(
            try GuestMode(profile: profile, store: stores[0]).records(user: "u1", collection: "subscriptions").count
                == 5)
    }

    @Test func aMeterNearExhaustionNeverPassesItsAllowanceAndLosesNoUse() throws {
        let (stores, profile) = try connections(profile: "voice")
        try makeGuests(["u1"], in: stores[0], profile: profile)
        let engine = GuestMode(profile: profile, store: stores[0])
        _ = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 55, key: nil, now: day(1))
        // 60 minutes for guests: 5 left, so exactly 7 uses of 0.7 fit (59.9).
        let results = try race(stores) { _, store in
            try (0..<5).map { _ in
                try GuestMode(profile: profile, store: store).useMeter(
                    user: "u1", meter: "api_minutes", amount: 0.7, key: nil, now: day(1))
            }
        }.flatMap { $0 }
        let recorded = results.filter(\.isRecorded)
        #expect(recorded.count == 7)
        #expect(results.filter { !$0.isAllowed }.count == Self.writers * 5 - 7)
        #expect(results.allSatisfy { $0.status.used <= 60 })
        let status = try engine.meterStatus(user: "u1", meter: "api_minutes", now: day(1))
        #expect(status.used == MeterAmount(millionths: 59_900_000), "every recorded use is counted, exactly")
    }

    @Test func aMeterKeyRacedByEveryWriterIsRecordedOnce() throws {
        let (stores, profile) = try connections(profile: "voice")
        try makeGuests(["u1"], in: stores[0], profile: profile)
        let results = try race(stores) { _, store in
            try GuestMode(profile: profile, store: store).useMeter(
                user: "u1", meter: "api_minutes", amount: 2, key: "call-1", now: day(1))
        }
        #expect(results.filter(\.isRecorded).count == 1)
        #expect(results.filter(\.isDuplicate).count == Self.writers - 1)
        #expect(
            try GuestMode(profile: profile, store: stores[0]).meterStatus(user: "u1", meter: "api_minutes", now: day(1))
                .used == 2)
    }

    @Test func anIdempotencyKeyRacedByEveryWriterCountsOnce() throws {
        let (stores, profile) = try connections(profile: "subscriptions")
        try makeGuests(["u1"], in: stores[0], profile: profile)
        let event = TrackedEvent(user: "u1", action: "subscription_added", at: day(1), count: 3, idempotencyKey: "k1")
        let results = try race(stores) { _, store in
            try GuestMode(profile: profile, store: store).track(event, now: day(1))
        }
        #expect(results.filter(\.isCounted).count == 1)
        #expect(results.allSatisfy { $0.total == 3 }, "a repeat reports the total the first one counted")
        #expect(try stores[0].counters(user: "u1")["subscription_added"] == 3)
    }

    @Test func eventsWithoutKeysLoseNoIncrement() throws {
        let (stores, profile) = try connections(profile: "subscriptions")
        try makeGuests(["u1"], in: stores[0], profile: profile)
        let results = try race(stores) { _, store in
            try (0..<25).map { _ in
                try GuestMode(profile: profile, store: store).track(
                    TrackedEvent(user: "u1", action: "paywall_viewed", at: day(1)), now: day(1))
            }
        }.flatMap { $0 }
        #expect(results.allSatisfy { $0.isCounted })
        #expect(Set(results.map(\.total)).count == Self.writers * 25, "each increment saw a distinct total")
        #expect(try stores[0].counters(user: "u1")["paywall_viewed"] == Self.writers * 25)
        #expect(try stores[0].integrityProblems().isEmpty)
    }

    @Test func theSameBatchRacedByEveryWriterCountsOnceAndCreatesEachUserOnce() throws {
        let (stores, profile) = try connections(profile: "subscriptions")
        // Users in a different order in each half, so batches that locked in
        // arrival order would deadlock.
        let users = (0..<10).map { "b\($0)" }
        let events = (0..<60).map { index in
            TrackedEvent(
                user: index < 30 ? users[index % 10] : users[9 - index % 10], action: "app_opened",
                at: day(1).addingTimeInterval(Double(index)), idempotencyKey: "e\(index)")
        }
        let results = try race(stores) { _, store in
            try applyEvents(events, creatingUsers: true, in: store, profile: profile, now: day(2))
        }
        #expect(results.map(\.counted).reduce(0, +) == 60)
        #expect(results.map(\.duplicates).reduce(0, +) == Self.writers * 60 - 60)
        #expect(results.map(\.usersCreated).reduce(0, +) == 10)
        for user in users { #expect(try stores[0].counters(user: user) == ["app_opened": 6]) }
        #expect(try stores[0].integrityProblems().isEmpty)
    }

    // MARK: Helpers

    /// A fresh store bound to `profile` and `writers` connections to it.
    /// A log goes in as one transaction of many batches: each batch used to
    /// create and drop its own temporary table, and PostgreSQL keeps every
    /// such lock to the end, so a log of some millions of events failed with
    /// "out of shared memory" (`max_locks_per_transaction`). The locks held
    /// must not grow with the number of batches.
    @Test func aTransactionsEventBatchesHoldAsManyLocksAsOne() throws {
        let store = try StoreBackend.makePostgresStore()
        let text = try template("habits")
        try store.bindProfile(text: text, origin: "habits.yaml", now: day(1))
        try makeGuests(["u1"], in: store, profile: try ProfileLoader.parse(text, file: "habits.yaml"))
        func batch(_ number: Int) -> [EventRow] {
            (0..<3).map { index in
                EventRow(
                    user: "u1", action: "app_opened", at: day(2), count: 1, idempotencyKey: "b\(number)-\(index)",
                    properties: nil)
            }
        }
        let before = try store.read { try $0.events(of: "u1", action: nil, since: nil, limit: nil).count }
        let locks = try store.write { transaction in
            let connection = try #require(transaction as? PostgresTransaction).connection
            func heldLocks() throws -> Int {
                try connection.execute("SELECT count(*) AS n FROM pg_locks WHERE pid = pg_backend_pid()").first?.int(
                    "n") ?? 0
            }
            _ = try transaction.appendEvents(batch(0))
            let afterOne = try heldLocks()
            for number in 1...20 { _ = try transaction.appendEvents(batch(number)) }
            return (afterOne, try heldLocks())
        }
        #expect(locks.1 == locks.0, "locks after 1 batch: \(locks.0), after 21: \(locks.1)")
        let stored = try store.read { try $0.events(of: "u1", action: nil, since: nil, limit: nil).count }
        #expect(stored == before + 63, "every batch's events are stored")
    }

    private func connections(profile name: String) throws -> (stores: [PostgresStore], profile: Profile) {
        let text = try template(name)
        let profile = try ProfileLoader.parse(text, file: "\(name).yaml")
        let first = try StoreBackend.makePostgresStore()
        try first.bindProfile(text: text, origin: "\(name).yaml", now: day(1))
        let uri = ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"] ?? ""
        var stores = [first]
        for _ in 1..<Self.writers { stores.append(try PostgresStore.open(uri: uri, schema: first.schema)) }
        return (stores, profile)
    }

    /// Runs `body` once per store, each on its own thread, all released at
    /// once; returns the results in store order, or the first error.
    private func race<T: Sendable>(
        _ stores: [PostgresStore], _ body: @escaping @Sendable (Int, PostgresStore) throws -> T
    ) throws -> [T] {
        let outcomes = Outcomes<T>(count: stores.count)
        let start = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for (index, store) in stores.enumerated() {
            done.enter()
            let thread = Thread {
                start.wait()
                outcomes.set(index, Result { try body(index, store) })
                done.leave()
            }
            thread.start()
        }
        for _ in stores { start.signal() }
        guard done.wait(timeout: .now() + 120) == .success else { throw RaceTimedOut() }
        return try outcomes.values().map { try $0.get() }
    }

    private struct RaceTimedOut: Error {}
    private struct MissingOutcome: Error {}

    private final class Outcomes<T: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var results: [Result<T, any Error>?]

        init(count: Int) { results = Array(repeating: nil, count: count) }

        func set(_ index: Int, _ result: Result<T, any Error>) {
            lock.withLock { results[index] = result }
        }

        func values() throws -> [Result<T, any Error>] {
            try lock.withLock {
                try results.map {
                    guard let result = $0 else { throw MissingOutcome() }; return result
                }
            }
        }
    }
}
