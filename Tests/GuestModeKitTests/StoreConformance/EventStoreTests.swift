import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// Creates guests as an ingested log does (a batch with `creatingUsers`),
/// so these suites need no other area's use case.
func makeGuests(_ ids: [String], in store: any GuestStore, profile: Profile, at time: Date = day(1)) throws {
    let events = ids.map { TrackedEvent(user: $0, action: profile.actions[0], at: time) }
    _ = try applyEvents(events, creatingUsers: true, in: store, profile: profile, now: time)
}

/// One batch of an ingested log (`GuestMode.ingest`), in a transaction of its own.
func applyEvents(
    _ events: [TrackedEvent], creatingUsers: Bool, in store: any GuestStore, profile: Profile, now: Date
) throws -> EventBatchResult {
    try store.write { try $0.applyBatch(events, creatingUsers: creatingUsers, profile: profile, now: now) }
}

extension GuestStore {
    /// The user's counters, read as `GuestMode.counters(user:)` reads them,
    /// for suites that hold a store rather than an engine.
    func counters(user userID: String) throws -> [String: Int] {
        try read { transaction in
            _ = try transaction.requireUser(userID)
            return try transaction.counters(of: userID)
        }
    }
}

@Suite("Events conformance, through the engine")
struct EventStoreTests {
    @Test(arguments: StoreBackend.allCases)
    func trackingCountsAndRepeatedKeysCountOnce(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        try makeGuests(["u1"], in: store, profile: profile)
        let event = TrackedEvent(user: "u1", action: "subscription_added", at: day(1), count: 3, idempotencyKey: "k1")
        let first = try engine.track(event, now: day(1))
        #expect(first == TrackResult(user: "u1", action: "subscription_added", isCounted: true, total: 3))
        let repeated = try engine.track(event, now: day(2))
        #expect(!repeated.isCounted)
        #expect(repeated.total == 3)
        let withoutKey = TrackedEvent(user: "u1", action: "subscription_added", at: day(1))
        #expect(try engine.track(withoutKey, now: day(1)).total == 4)
        #expect(
            try engine.track(withoutKey, now: day(1)).total == 5,
            "events without a key always count")
        #expect(try engine.counters(user: "u1") == ["app_opened": 1, "subscription_added": 5])
    }

    /// One batch of many rows: rows without a key and new keys go in and
    /// report nothing; a key repeated within the batch reports the batch's
    /// first row of it; a key stored by an earlier batch reports the stored
    /// event, whatever this row says.
    @Test(arguments: StoreBackend.allCases)
    func aBatchReportsWhatHoldsEachKeyItDidNotInsert(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try makeGuests(["u1", "u2"], in: store, profile: profile)
        func row(
            _ user: String, _ action: String, count: Int = 1, key: String?, properties: String? = nil
        )
            -> EventRow
        {
            EventRow(user: user, action: action, at: day(2), count: count, idempotencyKey: key, properties: properties)
        }
        let earlier = try store.write { transaction in
            try transaction.appendEvents([
                row("u1", "paywall_viewed", count: 2, key: "old", properties: #"{"a":1}"#),
                row("u2", "reminder_set", key: "old"),
            ])
        }
        #expect(earlier.isEmpty)
        let reported = try store.write { transaction in
            try transaction.appendEvents([
                row("u1", "paywall_viewed", key: nil),
                row("u1", "reminder_set", count: 4, key: "new"),
                row("u1", "paywall_viewed", count: 9, key: "old"),
                row("u2", "reminder_set", count: 7, key: "new"),
                row("u1", "reminder_set", count: 5, key: "new"),
                row("u2", "reminder_set", key: "fresh"),
            ])
        }
        #expect(
            reported == [
                2: EventPayload(action: "paywall_viewed", count: 2, properties: #"{"a":1}"#),
                4: EventPayload(action: "reminder_set", count: 4, properties: nil),
            ])
        let stored = try store.read { try $0.events(of: "u1", action: nil, since: nil, limit: nil) }
        #expect(stored.filter { $0.at == day(2) }.count == 3, "the earlier keyed row, the row without a key, 'new'")
    }

    @Test(arguments: StoreBackend.allCases)
    func aKeyReusedForAnotherActionIsRefusedAndChangesNothing(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        try makeGuests(["u1"], in: store, profile: profile)
        _ = try engine.track(
            TrackedEvent(user: "u1", action: "paywall_viewed", at: day(1), idempotencyKey: "k"), now: day(1))
        let before = try engine.counters(user: "u1")
        #expect {
            try engine.track(
                TrackedEvent(user: "u1", action: "reminder_set", at: day(1), idempotencyKey: "k"), now: day(1))
        } throws: { ($0 as? GuestModeError)?.code == .idempotencyKeyReused }
        #expect(try engine.counters(user: "u1") == before)
    }

    @Test(arguments: StoreBackend.allCases)
    func trackingAndCountersOfAMissingUserThrowNotFound(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        #expect {
            try engine.track(
                TrackedEvent(user: "ghost", action: "app_opened", at: day(1)), now: day(1))
        } throws: { ($0 as? GuestModeError)?.code == .userNotFound }
        #expect { try engine.counters(user: "ghost") } throws: { ($0 as? GuestModeError)?.code == .userNotFound }
        #expect(try !engine.containsUser("ghost"))
    }

    @Test(arguments: StoreBackend.allCases)
    func aBatchCreatesUsersCountsOnceAndSumsCounters(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        let events = [
            TrackedEvent(user: "a", action: "app_opened", at: day(1), idempotencyKey: "1"),
            TrackedEvent(user: "a", action: "app_opened", at: day(2), count: 2, idempotencyKey: "2"),
            TrackedEvent(user: "b", action: "reminder_set", at: day(1)),
            TrackedEvent(user: "a", action: "app_opened", at: day(1), idempotencyKey: "1"),
        ]
        let first = try applyEvents(events, creatingUsers: true, in: store, profile: profile, now: day(3))
        #expect(first == EventBatchResult(counted: 3, duplicates: 1, usersCreated: 2))
        #expect(try engine.containsUser("a"))
        #expect(try engine.containsUser("b"))
        #expect(try engine.counters(user: "a") == ["app_opened": 3])
        #expect(try engine.counters(user: "b") == ["reminder_set": 1])

        let keyed = events.filter { $0.idempotencyKey != nil }
        let repeated = try applyEvents(keyed, creatingUsers: true, in: store, profile: profile, now: day(3))
        #expect(
            repeated == EventBatchResult(counted: 0, duplicates: 3, usersCreated: 0), "a repeated batch counts nothing")
        #expect(try engine.counters(user: "a") == ["app_opened": 3])
    }

    @Test(arguments: StoreBackend.allCases)
    func aFailingBatchWritesNothing(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        try makeGuests(["a"], in: store, profile: profile)
        _ = try engine.track(
            TrackedEvent(user: "a", action: "paywall_viewed", at: day(1), idempotencyKey: "k"), now: day(1))
        let before = try engine.counters(user: "a")
        let events = [
            TrackedEvent(user: "new", action: "app_opened", at: day(1)),
            TrackedEvent(user: "a", action: "app_opened", at: day(1)),
            TrackedEvent(user: "a", action: "reminder_set", at: day(1), idempotencyKey: "k"),
        ]
        #expect { try applyEvents(events, creatingUsers: true, in: store, profile: profile, now: day(1)) } throws: {
            ($0 as? GuestModeError)?.code == .idempotencyKeyReused
        }
        #expect(try engine.counters(user: "a") == before)
        #expect(try !engine.containsUser("new"), "users created by a failed batch are rolled back")
    }

    @Test(arguments: StoreBackend.allCases)
    func aBatchWithoutCreatingUsersRefusesUnknownUsers(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        try makeGuests(["a"], in: store, profile: profile)
        let events = [
            TrackedEvent(user: "a", action: "reminder_set", at: day(1)),
            TrackedEvent(user: "ghost", action: "app_opened", at: day(1)),
        ]
        #expect {
            try applyEvents(events, creatingUsers: false, in: store, profile: profile, now: day(1))
        } throws: { ($0 as? GuestModeError)?.code == .userNotFound }
        #expect(try engine.counters(user: "a") == ["app_opened": 1])
        #expect(try !engine.containsUser("ghost"))
    }

    @Test(arguments: StoreBackend.allCases)
    func anEmptyBatchDoesNothing(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        #expect(
            try applyEvents([], creatingUsers: true, in: store, profile: profile, now: day(1))
                == EventBatchResult(counted: 0, duplicates: 0, usersCreated: 0))
    }

    @Test(arguments: StoreBackend.allCases)
    func aKeyRepeatedWithinABatchForAnotherActionIsRefusedAtThatEvent(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        try makeGuests(["a", "b"], in: store, profile: profile)
        _ = try engine.track(
            TrackedEvent(user: "b", action: "reminder_set", at: day(1), idempotencyKey: "s"), now: day(1))
        let events = [
            TrackedEvent(user: "a", action: "app_opened", at: day(2), idempotencyKey: "k"),
            TrackedEvent(user: "b", action: "app_opened", at: day(2), idempotencyKey: "k"),
            TrackedEvent(user: "a", action: "reminder_set", at: day(2), idempotencyKey: "k"),
            TrackedEvent(user: "b", action: "paywall_viewed", at: day(2), idempotencyKey: "s"),
        ]
        #expect {
            try applyEvents(events, creatingUsers: false, in: store, profile: profile, now: day(2))
        } throws: { error in
            let error = error as? GuestModeError
            return error?.code == .idempotencyKeyReused
                && error?.message.contains("'app_opened', not 'reminder_set'") == true
        }
        #expect(try engine.counters(user: "a") == ["app_opened": 1], "nothing of the batch was written")
    }

    @Test(arguments: StoreBackend.allCases)
    func aBatchQueuesOneBackupPerUserMovingForwardOnARepeat(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "habits")
        #expect(profile.backup.queuesOnChange)
        let events = ["a", "b", "a"].map { TrackedEvent(user: $0, action: "app_opened", at: day(1)) }
        _ = try applyEvents(events, creatingUsers: true, in: store, profile: profile, now: day(2))
        _ = try applyEvents(events, creatingUsers: false, in: store, profile: profile, now: day(2))
        let entries = try store.outboxEntries()
        #expect(entries.map(\.userID).sorted() == ["a", "b"])
        #expect(
            entries.allSatisfy { Timestamp.format($0.queuedAt) == Timestamp.format(day(2).addingTimeInterval(0.001)) },
            "the second batch queued strictly after the first")
        #expect(try store.read { try $0.user("a", locking: false)?.lastSeenAt } == day(1))
    }

    /// One log's batches in one transaction: users, counters, last-seen and
    /// the outbox end as when the whole log is one batch, however often the
    /// pending rows are written on the way (`EventIngestion.pendingLimit`).
    @Test(arguments: StoreBackend.allCases)
    func aLogInManyBatchesEndsAsInOneBatch(backend: StoreBackend) throws {
        let distinct = (0..<36).map { index in
            TrackedEvent(
                user: "u\(index % 7)", action: index % 3 == 0 ? "app_opened" : "habit_completed",
                at: day(1).addingTimeInterval(Double((index * 37) % 40) * 60), count: index % 4 + 1,
                idempotencyKey: index % 5 == 0 ? "k\(index)" : nil)
        }
        // Four repeated keys, each in a later batch than its first event.
        let events = distinct + [0, 5, 10, 15].map { distinct[$0] }
        func ingest(batchSize: Int, pendingLimit: Int) throws -> (any GuestStore, EventBatchResult) {
            let (store, profile) = try backend.makeStore(profile: "habits")
            let total = try store.write { transaction in
                var ingestion = EventIngestion(creatingUsers: true, profile: profile, now: day(2))
                ingestion.pendingLimit = pendingLimit
                var total = EventBatchResult(counted: 0, duplicates: 0, usersCreated: 0)
                for start in stride(from: 0, to: events.count, by: batchSize) {
                    let result = try ingestion.apply(
                        Array(events[start..<min(start + batchSize, events.count)]), in: transaction)
                    total.counted += result.counted
                    total.duplicates += result.duplicates
                    total.usersCreated += result.usersCreated
                }
                try ingestion.finish(in: transaction)
                return total
            }
            return (store, total)
        }
        let (whole, wholeResult) = try ingest(batchSize: events.count, pendingLimit: 20_000)
        #expect(wholeResult == EventBatchResult(counted: 36, duplicates: 4, usersCreated: 7))
        for (batchSize, pendingLimit) in [(3, 2), (7, 20_000), (1, 1)] {
            let (batched, result) = try ingest(batchSize: batchSize, pendingLimit: pendingLimit)
            #expect(result == wholeResult)
            for user in (0..<7).map({ "u\($0)" }) {
                #expect(try batched.counters(user: user) == whole.counters(user: user))
                #expect(
                    try batched.read { try $0.user(user, locking: false)?.lastSeenAt }
                        == whole.read { try $0.user(user, locking: false)?.lastSeenAt })
            }
            #expect(try batched.outboxEntries().map(\.userID).sorted() == (0..<7).map { "u\($0)" })
            // Within the limit a transaction queues each user's backup once;
            // past it a user may be queued again, later.
            let queuedOnce = pendingLimit >= 7
            #expect(
                try batched.outboxEntries().allSatisfy {
                    queuedOnce ? $0.queuedAt == day(2) : $0.queuedAt >= day(2)
                })
        }
    }

    /// A guest a batch creates is written once, first seen at its first
    /// event and last seen at the latest event that counts: a repeated key
    /// counts nothing, so its later time moves nobody's last-seen, new or old.
    @Test(arguments: StoreBackend.allCases)
    func aCreatedGuestIsLastSeenAtItsLatestCountedEventOnly(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "habits")
        let hour = { (hours: Double) in day(1).addingTimeInterval(hours * 3_600) }
        try makeGuests(["old"], in: store, profile: profile, at: hour(0))
        _ = try applyEvents(
            [TrackedEvent(user: "old", action: "app_opened", at: hour(1), idempotencyKey: "o")],
            creatingUsers: false, in: store, profile: profile, now: day(2))
        let result = try applyEvents(
            [
                TrackedEvent(user: "new", action: "app_opened", at: hour(2), idempotencyKey: "k"),
                TrackedEvent(user: "new", action: "habit_completed", at: hour(1)),
                TrackedEvent(user: "old", action: "app_opened", at: hour(6), idempotencyKey: "o"),
                TrackedEvent(user: "new", action: "app_opened", at: hour(5), idempotencyKey: "k"),
            ], creatingUsers: true, in: store, profile: profile, now: day(2))
        #expect(result == EventBatchResult(counted: 2, duplicates: 2, usersCreated: 1))
        let new = try #require(try store.read { try $0.user("new", locking: false) })
        #expect(new.createdAt == hour(2) && new.lastSeenAt == hour(2))
        #expect(try store.read { try $0.user("old", locking: false)?.lastSeenAt } == hour(1))
        #expect(try store.counters(user: "new") == ["app_opened": 1, "habit_completed": 1])
        // A later batch moves the new guest on as any other.
        _ = try applyEvents(
            [TrackedEvent(user: "new", action: "app_opened", at: hour(3))], creatingUsers: true, in: store,
            profile: profile, now: day(2))
        #expect(try store.read { try $0.user("new", locking: false)?.lastSeenAt } == hour(3))
    }

    /// A batch of hundreds of events and users, written many rows to a
    /// statement: a key counted before, and a user the store has, in the
    /// middle of them are still told apart row by row.
    @Test(arguments: StoreBackend.allCases)
    func aDuplicateAndAKnownUserAmongManyAreToldApart(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "habits")
        let users = (0..<300).map { String(format: "u%03d", $0) }
        try makeGuests(["u150"], in: store, profile: profile)
        _ = try applyEvents(
            [TrackedEvent(user: "u151", action: "app_opened", at: day(1), idempotencyKey: "k151")],
            creatingUsers: true, in: store, profile: profile, now: day(1))
        let events = users.map {
            TrackedEvent(user: $0, action: "app_opened", at: day(2), idempotencyKey: "k\($0.dropFirst())")
        }
        let result = try applyEvents(events, creatingUsers: true, in: store, profile: profile, now: day(2))
        #expect(result == EventBatchResult(counted: 299, duplicates: 1, usersCreated: 298))
        #expect(try store.counters(user: "u150") == ["app_opened": 2])
        #expect(try store.counters(user: "u151") == ["app_opened": 1])
        for user in ["u000", "u099", "u100", "u152", "u299"] {
            #expect(try store.counters(user: user) == ["app_opened": 1])
            #expect(try store.read { try $0.events(of: user, action: nil, since: nil, limit: nil) }.count == 1)
        }
        #expect(try store.read { try $0.user("u151", locking: false)?.lastSeenAt } == day(1))
        // The same batch again counts nothing and creates nobody.
        let again = try applyEvents(events, creatingUsers: true, in: store, profile: profile, now: day(2))
        #expect(again == EventBatchResult(counted: 0, duplicates: 300, usersCreated: 0))
        #expect(try store.counters(user: "u000") == ["app_opened": 1])
    }

    /// A user settled in an earlier batch is not looked up again, and a user
    /// first met in a later batch still is.
    @Test(arguments: StoreBackend.allCases)
    func aMissingUserInALaterBatchFailsTheLog(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "habits")
        try makeGuests(["a"], in: store, profile: profile)
        #expect {
            try store.write { transaction in
                var ingestion = EventIngestion(creatingUsers: false, profile: profile, now: day(2))
                _ = try ingestion.apply([TrackedEvent(user: "a", action: "app_opened", at: day(1))], in: transaction)
                _ = try ingestion.apply(
                    ["a", "ghost"].map { TrackedEvent(user: $0, action: "app_opened", at: day(1)) }, in: transaction)
                try ingestion.finish(in: transaction)
            }
        } throws: { ($0 as? GuestModeError)?.code == .userNotFound }
        #expect(try store.counters(user: "a") == ["app_opened": 1], "nothing of the log was written")
    }
}
