import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

@Suite("OutboxStore conformance")
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
        let (store, _, a, b) = try queued(backend)
        let entries = try store.outboxEntries()
        #expect(entries.map(\.userId) == [a, b])
        #expect(
            entries.first
                == OutboxEntry(
                    userId: a, queuedAt: Timestamp.format(day(1)), attempts: 0, lastError: nil, nextAttemptAt: nil))
        let (empty, _) = try backend.makeStore(profile: "habits")
        #expect(try empty.outboxEntries().isEmpty)
    }

    @Test(arguments: StoreBackend.allCases)
    func aPushedEntryIsRemoved(backend: StoreBackend) throws {
        let (store, _, a, b) = try queued(backend)
        let entry = try #require(try store.outboxEntries().first)
        #expect(try store.recordPushSuccess(userID: a, queuedAt: entry.queuedAt) == .removed)
        #expect(try store.outboxEntries().map(\.userId) == [b])
        #expect(
            try store.recordPushSuccess(userID: a, queuedAt: entry.queuedAt) == .removed,
            "already gone: nothing to keep")
        #expect(try store.outboxEntries().map(\.userId) == [b])
    }

    @Test(
        "a user who changed while their archive was written stays queued, retry state cleared",
        arguments: StoreBackend.allCases)
    func aChangedUserStaysQueued(backend: StoreBackend) throws {
        let (store, engine, a, _) = try queued(backend)
        let read = try #require(try store.outboxEntries().first)
        try store.recordPushFailure(userID: a, attempts: 2, error: "offline", nextAttemptAt: day(3))
        _ = try engine.putRecord(user: a, collection: "habits", key: "h2", json: "{}", now: day(3))
        #expect(try store.recordPushSuccess(userID: a, queuedAt: read.queuedAt) == .keptQueued)
        let entry = try #require(try store.outboxEntries().first { $0.userId == a })
        #expect(entry.queuedAt == Timestamp.format(day(3)))
        #expect(entry.attempts == 0 && entry.lastError == nil && entry.nextAttemptAt == nil)
    }

    @Test("a failed push keeps the entry with attempts, error and next retry", arguments: StoreBackend.allCases)
    func aFailedPushKeepsTheEntry(backend: StoreBackend) throws {
        let (store, _, a, b) = try queued(backend)
        let before = try #require(try store.outboxEntries().first)
        try store.recordPushFailure(
            userID: a, attempts: 1, error: "destination unreachable", nextAttemptAt: day(1).addingTimeInterval(60))
        try store.recordPushFailure(
            userID: a, attempts: 2, error: "still unreachable", nextAttemptAt: day(1).addingTimeInterval(120))
        let entries = try store.outboxEntries()
        #expect(entries.map(\.userId) == [a, b])
        #expect(
            entries.first
                == OutboxEntry(
                    userId: a, queuedAt: before.queuedAt, attempts: 2, lastError: "still unreachable",
                    nextAttemptAt: Timestamp.format(day(1).addingTimeInterval(120))))
        try store.recordPushFailure(userID: "nobody", attempts: 1, error: "x", nextAttemptAt: day(2))
        #expect(try store.outboxEntries() == entries, "a failure for a user not queued changes nothing")
    }

    @Test(arguments: StoreBackend.allCases)
    func onlyEntriesOfDeletedUsersAreDropped(backend: StoreBackend) throws {
        let (store, _, a, b) = try queued(backend)
        try backend.seedOrphanOutboxEntry(store, userID: "gone", queuedAt: day(1))
        let entries = try store.outboxEntries()
        #expect(entries.map(\.userId).sorted() == [a, b, "gone"].sorted())
        let aEntry = try #require(entries.first { $0.userId == a })
        #expect(try store.dropOutboxEntry(userID: a, queuedAt: aEntry.queuedAt) == false, "the user exists")
        #expect(
            try store.dropOutboxEntry(userID: "gone", queuedAt: Timestamp.format(day(2))) == false, "queued again since"
        )
        #expect(try store.outboxEntries() == entries)
        #expect(try store.dropOutboxEntry(userID: "gone", queuedAt: Timestamp.format(day(1))))
        #expect(try store.outboxEntries().map(\.userId) == [a, b])
        #expect(try store.dropOutboxEntry(userID: "gone", queuedAt: Timestamp.format(day(1))) == false)
    }
}
