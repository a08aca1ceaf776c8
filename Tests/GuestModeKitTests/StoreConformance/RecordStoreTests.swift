import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

@Suite("RecordStore conformance")
struct RecordStoreTests {
    /// The subscriptions profile caps guests at 5 subscriptions.
    private func filledGuest(backend: StoreBackend) throws -> (store: any GuestStore, profile: Profile) {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try makeGuests(["u1"], in: store, profile: profile)
        for index in 1...5 {
            let result = try store.putRecord(
                owner: "u1", collection: "subscriptions", key: "\(index)", data: #"{"n":\#(index)}"#, profile: profile,
                now: day(1))
            #expect(result.outcome == .allowed)
            #expect(!result.isReplacement)
            #expect(result.limit.used == index, "the limit is the one after the write")
        }
        return (store, profile)
    }

    @Test(arguments: StoreBackend.allCases)
    func aRefusedPutWritesNothing(backend: StoreBackend) throws {
        let (store, profile) = try filledGuest(backend: backend)
        let before = try store.records(owner: "u1", collection: "subscriptions")
        let refused = try store.putRecord(
            owner: "u1", collection: "subscriptions", key: "6", data: "{}", profile: profile, now: day(2))
        #expect(refused.outcome == .needsAccount)
        #expect(!refused.isReplacement)
        #expect(
            refused.limit
                == CollectionLimit(collection: "subscriptions", tier: .guest, used: 5, cap: 5, outcome: .needsAccount))
        #expect(try store.records(owner: "u1", collection: "subscriptions") == before)
        #expect(try store.record(owner: "u1", collection: "subscriptions", key: "6") == nil)
    }

    @Test(arguments: StoreBackend.allCases)
    func replacingAKeyIsFreeAtTheCap(backend: StoreBackend) throws {
        let (store, profile) = try filledGuest(backend: backend)
        let replaced = try store.putRecord(
            owner: "u1", collection: "subscriptions", key: "3", data: #"{"n":33}"#, profile: profile, now: day(2))
        #expect(replaced.outcome == .allowed)
        #expect(replaced.isReplacement)
        #expect(replaced.limit.used == 5)
        let record = try #require(try store.record(owner: "u1", collection: "subscriptions", key: "3"))
        #expect(record.data == #"{"n":33}"#)
        #expect(record.createdAt == day(1), "a replacement keeps the creation time")
        #expect(record.updatedAt == day(2))
    }

    @Test(arguments: StoreBackend.allCases)
    func uncappedCollectionsTakeAnyNumber(backend: StoreBackend) throws {
        let (store, profile) = try filledGuest(backend: backend)
        for index in 1...7 {
            let result = try store.putRecord(
                owner: "u1", collection: "settings", key: "s\(index)", data: "1", profile: profile, now: day(1))
            #expect(result.outcome == .allowed)
            #expect(result.limit.cap == nil)
        }
    }

    /// A put counts the user's records only when the tier caps the
    /// collection (so its cost does not grow with what the user holds); the
    /// count it reports then is exact, and `limits` still counts everything.
    @Test(arguments: StoreBackend.allCases)
    func aPutCountsOnlyWhenACapApplies(backend: StoreBackend) throws {
        let (store, profile) = try filledGuest(backend: backend)
        for index in 1...3 {
            let result = try store.putRecord(
                owner: "u1", collection: "settings", key: "s\(index)", data: "{}", profile: profile, now: day(1))
            #expect(result.outcome == .allowed)
            #expect(result.limit.used == nil, "an uncapped collection is not counted by a put")
        }
        let limits = try store.collectionLimits(
            of: "u1", collections: ["settings", "subscriptions"], profile: profile, now: day(1))
        #expect(limits.map(\.used) == [3, 5])
        // Deleting below the cap lets a new key in, counted exactly.
        #expect(
            try store.deleteRecord(owner: "u1", collection: "subscriptions", key: "1", profile: profile, now: day(2)))
        let again = try store.putRecord(
            owner: "u1", collection: "subscriptions", key: "7", data: "{}", profile: profile, now: day(2))
        #expect(again.outcome == .allowed)
        #expect(again.limit == CollectionLimit(collection: "subscriptions", tier: .guest, used: 5, cap: 5, outcome: .needsAccount))
        let refused = try store.putRecord(
            owner: "u1", collection: "subscriptions", key: "8", data: "{}", profile: profile, now: day(2))
        #expect(refused.outcome == .needsAccount)
    }

    @Test(arguments: StoreBackend.allCases)
    func getAndListReturnWhatWasStoredOrderedByKey(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try makeGuests(["u1", "u2"], in: store, profile: profile)
        for key in ["b", "a", "c"] {
            _ = try store.putRecord(
                owner: "u1", collection: "settings", key: key, data: #""\#(key)""#, profile: profile, now: day(1))
        }
        _ = try store.putRecord(owner: "u2", collection: "settings", key: "a", data: "2", profile: profile, now: day(1))
        let listed = try store.records(owner: "u1", collection: "settings")
        #expect(listed.map(\.key) == ["a", "b", "c"])
        #expect(listed.allSatisfy { $0.owner == "u1" && $0.collection == "settings" })
        #expect(
            try store.record(owner: "u1", collection: "settings", key: "a")
                == StoredRecord(
                    owner: "u1", collection: "settings", key: "a", data: #""a""#, createdAt: day(1), updatedAt: day(1)))
        #expect(try store.records(owner: "u1", collection: "subscriptions").isEmpty)
        #expect(try store.record(owner: "u1", collection: "settings", key: "missing") == nil)
    }

    @Test(arguments: StoreBackend.allCases)
    func deletingFreesTheCapAndAMissingKeyChangesNothing(backend: StoreBackend) throws {
        let (store, profile) = try filledGuest(backend: backend)
        #expect(
            try store.deleteRecord(owner: "u1", collection: "subscriptions", key: "2", profile: profile, now: day(2)))
        #expect(try store.record(owner: "u1", collection: "subscriptions", key: "2") == nil)
        #expect(
            try !store.deleteRecord(owner: "u1", collection: "subscriptions", key: "2", profile: profile, now: day(2)))
        #expect(try store.records(owner: "u1", collection: "subscriptions").count == 4)
        let again = try store.putRecord(
            owner: "u1", collection: "subscriptions", key: "6", data: "{}", profile: profile, now: day(2))
        #expect(again.outcome == .allowed)
    }

    @Test(arguments: StoreBackend.allCases)
    func limitsFollowTheTierInForce(backend: StoreBackend) throws {
        let (store, profile) = try filledGuest(backend: backend)
        let limits = try store.collectionLimits(
            of: "u1", collections: ["subscriptions", "settings"], profile: profile, now: day(1))
        #expect(
            limits == [
                CollectionLimit(collection: "subscriptions", tier: .guest, used: 5, cap: 5, outcome: .needsAccount),
                CollectionLimit(collection: "settings", tier: .guest, used: 0, cap: nil, outcome: .allowed),
            ])
        #expect(try store.collectionLimits(of: "u1", collections: [], profile: profile, now: day(1)).isEmpty)
    }

    @Test(arguments: StoreBackend.allCases)
    func everyMethodThrowsForAMissingUser(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let isUserNotFound: (any Error) -> Bool = { ($0 as? GuestModeError)?.code == .userNotFound }
        #expect {
            try store.putRecord(
                owner: "ghost", collection: "settings", key: "k", data: "1", profile: profile, now: day(1))
        } throws: { isUserNotFound($0) }
        #expect { try store.record(owner: "ghost", collection: "settings", key: "k") } throws: { isUserNotFound($0) }
        #expect { try store.records(owner: "ghost", collection: "settings") } throws: { isUserNotFound($0) }
        #expect {
            try store.deleteRecord(owner: "ghost", collection: "settings", key: "k", profile: profile, now: day(1))
        } throws: { isUserNotFound($0) }
        #expect {
            try store.collectionLimits(of: "ghost", collections: ["settings"], profile: profile, now: day(1))
        } throws: { isUserNotFound($0) }
        #expect(try !store.containsUser("ghost"), "a refused put creates no user")
    }
}
