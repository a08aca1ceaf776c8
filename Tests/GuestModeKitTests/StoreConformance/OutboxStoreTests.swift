import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// The backup queue as a push settles it, decided by the engine over each
/// backend's transaction primitives.
@Suite("Outbox conformance")
struct OutboxStoreTests {
    /// A habits store (backups queue on change) with two users queued, `a` first.
    func queued(_ backend: StoreBackend) throws -> (store: any GuestStore, engine: GuestMode, a: String, b: String) {
        let (store, profile) = try backend.makeStore(profile: "habits")
        let engine = try backend.engine(store, profile)
        let a = try engine.createGuest(device: nil, now: day(1)).id
        let b = try engine.createGuest(device: nil, now: day(1)).id
        _ = try engine.putRecord(user: b, collection: "habits", key: "h", json: "{}", now: day(2))
        _ = try engine.putRecord(user: a, collection: "habits", key: "h", json: "{}", now: day(1))
        return (store, engine, a, b)
    }

    @Test(arguments: StoreBackend.allCases)
    func entriesAreListedOldestFirst(backend: StoreBackend) throws {
        let (_, engine, a, b) = try queued(backend)
        let entries = try engine.backupQueue()
        #expect(entries.map(\.userID) == [a, b])
        #expect(
            entries.first
                == OutboxEntry(
                    userID: a, queuedAt: day(1), attempts: 0, lastError: nil, nextAttemptAt: nil))
        let (empty, profile) = try backend.makeStore(profile: "habits")
        #expect(try GuestMode(profile: profile, store: empty).backupQueue().isEmpty)
    }

    @Test(arguments: StoreBackend.allCases)
    func aPushedEntryIsRemoved(backend: StoreBackend) throws {
        let (_, engine, a, b) = try queued(backend)
        let entry = try #require(try engine.backupQueue().first)
        #expect(entry.userID == a)
        #expect(try engine.settlePush(of: entry, now: day(1)) == .removed)
        #expect(try engine.backupQueue().map(\.userID) == [b])
        #expect(try engine.settlePush(of: entry, now: day(1)) == .removed, "already gone: nothing to keep")
        #expect(try engine.backupQueue().map(\.userID) == [b])
    }

    @Test(
        "a user who changed while their archive was written stays queued, retry state cleared",
        arguments: StoreBackend.allCases)
    func aChangedUserStaysQueued(backend: StoreBackend) throws {
        let (_, engine, a, _) = try queued(backend)
        let read = try #require(try engine.backupQueue().first)
        #expect(read.userID == a)
        _ = try engine.recordFailedPush(
            of: read, error: "offline", retry: OutboxRetryPolicy(maxAttempts: 5), now: day(2))
        _ = try engine.putRecord(user: a, collection: "habits", key: "h2", json: "{}", now: day(3))
        #expect(try engine.settlePush(of: read, now: day(1)) == .keptQueued)
        let entry = try #require(try engine.backupQueue().first { $0.userID == a })
        #expect(entry.queuedAt == day(3))
        #expect(entry.attempts == 0 && entry.lastError == nil && entry.nextAttemptAt == nil)
    }

    @Test("a failed push keeps the entry with attempts, error and next retry", arguments: StoreBackend.allCases)
    func aFailedPushKeepsTheEntry(backend: StoreBackend) throws {
        let (_, engine, a, b) = try queued(backend)
        let retry = OutboxRetryPolicy(maxAttempts: 5)
        let before = try #require(try engine.backupQueue().first)
        #expect(before.userID == a)
        let first = try engine.recordFailedPush(of: before, error: "destination unreachable", retry: retry, now: day(1))
        #expect(first.attempts == 1 && first.nextAttemptAt == day(1).addingTimeInterval(60))
        let again = try #require(try engine.backupQueue().first)
        let second = try engine.recordFailedPush(of: again, error: "still unreachable", retry: retry, now: day(1))
        #expect(second.attempts == 2 && second.nextAttemptAt == day(1).addingTimeInterval(120), "the wait doubles")
        let entries = try engine.backupQueue()
        #expect(entries.map(\.userID) == [a, b])
        #expect(
            entries.first
                == OutboxEntry(
                    userID: a, queuedAt: before.queuedAt, attempts: 2, lastError: "still unreachable",
                    nextAttemptAt: day(1).addingTimeInterval(120)))
        _ = try engine.recordFailedPush(
            of: OutboxEntry(
                userID: "nobody", queuedAt: before.queuedAt, attempts: 0, lastError: nil, nextAttemptAt: nil),
            error: "x", retry: retry, now: day(2))
        #expect(try engine.backupQueue() == entries, "a failure for a user not queued changes nothing")
    }

    @Test(arguments: StoreBackend.allCases)
    func onlyEntriesOfDeletedUsersAreDropped(backend: StoreBackend) throws {
        let (store, engine, a, b) = try queued(backend)
        try backend.seedOrphanOutboxEntry(store, userID: "gone", queuedAt: day(1))
        let entries = try engine.backupQueue()
        #expect(entries.map(\.userID).sorted() == [a, b, "gone"].sorted())
        let aEntry = try #require(entries.first { $0.userID == a })
        let gone = try #require(entries.first { $0.userID == "gone" })
        #expect(try engine.dropQueuedBackup(of: aEntry) == false, "the user exists")
        var requeued = gone
        requeued.queuedAt = day(2)
        #expect(try engine.dropQueuedBackup(of: requeued) == false, "queued again since")
        #expect(try engine.backupQueue() == entries)
        #expect(try engine.dropQueuedBackup(of: gone))
        #expect(try engine.backupQueue().map(\.userID) == [a, b])
        #expect(try engine.dropQueuedBackup(of: gone) == false)
    }
}
