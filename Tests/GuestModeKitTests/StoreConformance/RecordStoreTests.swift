import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// Records under the tier's caps, decided by the engine over each backend's
/// transaction primitives.
@Suite("Records conformance")
struct RecordStoreTests {
    /// The subscriptions profile caps guests at 5 subscriptions.
    private func filledGuest(backend: StoreBackend) throws -> (engine: GuestMode, store: any GuestStore) {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try makeGuests(["u1"], in: store, profile: profile)
        let engine = GuestMode(profile: profile, store: store)
        for index in 1...5 {
            let result = try engine.putRecord(
                user: "u1", collection: "subscriptions", key: "\(index)", json: #"{"n":\#(index)}"#, now: day(1))
            #expect(result.outcome == .allowed)
            #expect(!result.isReplacement)
            #expect(result.limit.used == index, "the limit is the one after the write")
        }
        return (engine, store)
    }

    /// The record, or nil when the engine reports it missing.
    private func stored(
        _ engine: GuestMode, _ user: String, _ collection: String, _ key: String
    ) throws
        -> StoredRecord?
    {
        do {
            return try engine.record(user: user, collection: collection, key: key)
        } catch let error as GuestModeError where error.code == .recordNotFound {
            return nil
        }
    }

    /// `record get` reads the user and its record together; the engine still tells a missing user from a
    /// missing record, and a record whose owner is no user (the profile's guest owner) is no user's.
    @Test(arguments: StoreBackend.allCases)
    func aRecordIsReadWithItsUser(backend: StoreBackend) throws {
        let (engine, store) = try filledGuest(backend: backend)
        try store.write { transaction in
            try transaction.upsertRecord(
                owner: "guest-owner", collection: "subscriptions", key: "1", data: "{}", at: day(1))
        }
        let read = { (user: String, key: String) in
            try store.read { try $0.record(ofUser: user, collection: "subscriptions", key: key) }
        }
        let found = try read("u1", "3")
        #expect(found.userExists && found.record?.data == #"{"n":3}"# && found.record?.owner == "u1")
        #expect(found.record?.createdAt == day(1) && found.record?.updatedAt == day(1))
        let missingRecord = try read("u1", "9")
        #expect(missingRecord.userExists && missingRecord.record == nil)
        let missingUser = try read("nobody", "1")
        #expect(!missingUser.userExists && missingUser.record == nil)
        let ownerOnly = try read("guest-owner", "1")
        #expect(!ownerOnly.userExists && ownerOnly.record == nil, "the guest owner's record is no user's")

        #expect(try engine.record(user: "u1", collection: "subscriptions", key: "3").key == "3")
        let noRecord = #expect(throws: GuestModeError.self) {
            try engine.record(user: "u1", collection: "subscriptions", key: "9")
        }
        #expect(noRecord?.code == .recordNotFound)
        for user in ["nobody", "guest-owner"] {
            let noUser = #expect(throws: GuestModeError.self) {
                try engine.record(user: user, collection: "subscriptions", key: "1")
            }
            #expect(noUser?.code == .userNotFound)
        }
    }

    /// A long collection read a page at a time: each page after the last key of the one before.
    @Test(arguments: StoreBackend.allCases)
    func pagesOfRecords(backend: StoreBackend) throws {
        let (engine, _) = try filledGuest(backend: backend)
        func keys(after: String?, limit: Int?) throws -> [String] {
            try engine.records(user: "u1", collection: "subscriptions", after: after, limit: limit).map(\.key)
        }
        #expect(try keys(after: nil, limit: nil) == ["1", "2", "3", "4", "5"])
        #expect(try keys(after: nil, limit: 2) == ["1", "2"])
        #expect(try keys(after: "2", limit: 2) == ["3", "4"])
        #expect(try keys(after: "4", limit: 2) == ["5"])
        #expect(try keys(after: "5", limit: 2) == [])
        // After a key that is not there: the keys that sort after it.
        #expect(try keys(after: "25", limit: nil) == ["3", "4", "5"])
        let refused = #expect(throws: GuestModeError.self) { try keys(after: nil, limit: 0) }
        #expect(refused?.code == .invalidLimit)
    }

    @Test(arguments: StoreBackend.allCases)
    func aRefusedPutWritesNothing(backend: StoreBackend) throws {
        let (engine, _) = try filledGuest(backend: backend)
        let before = try engine.records(user: "u1", collection: "subscriptions")
        let refused = try engine.putRecord(user: "u1", collection: "subscriptions", key: "6", json: "{}", now: day(2))
        #expect(refused.outcome == .needsAccount)
        #expect(!refused.isReplacement)
        #expect(
            refused.limit
                == CollectionLimit(collection: "subscriptions", tier: .guest, used: 5, cap: 5, outcome: .needsAccount))
        #expect(try engine.records(user: "u1", collection: "subscriptions") == before)
        #expect(try stored(engine, "u1", "subscriptions", "6") == nil)
    }

    @Test(arguments: StoreBackend.allCases)
    func replacingAKeyIsFreeAtTheCap(backend: StoreBackend) throws {
        let (engine, _) = try filledGuest(backend: backend)
        let replaced = try engine.putRecord(
            user: "u1", collection: "subscriptions", key: "3", json: #"{"n":33}"#, now: day(2))
        #expect(replaced.outcome == .allowed)
        #expect(replaced.isReplacement)
        #expect(replaced.limit.used == 5)
        let record = try #require(try stored(engine, "u1", "subscriptions", "3"))
        #expect(record.data == #"{"n":33}"#)
        #expect(record.createdAt == day(1), "a replacement keeps the creation time")
        #expect(record.updatedAt == day(2))
    }

    @Test(arguments: StoreBackend.allCases)
    func uncappedCollectionsTakeAnyNumber(backend: StoreBackend) throws {
        let (engine, _) = try filledGuest(backend: backend)
        for index in 1...7 {
            let result = try engine.putRecord(
                user: "u1", collection: "settings", key: "s\(index)", json: "{}", now: day(1))
            #expect(result.outcome == .allowed)
            #expect(result.limit.cap == nil)
        }
    }

    /// A put counts the user's records only when the tier caps the
    /// collection (so its cost does not grow with what the user holds); the
    /// count it reports then is exact, and `limits` still counts everything.
    @Test(arguments: StoreBackend.allCases)
    func aPutCountsOnlyWhenACapApplies(backend: StoreBackend) throws {
        let (engine, _) = try filledGuest(backend: backend)
        for index in 1...3 {
            let result = try engine.putRecord(
                user: "u1", collection: "settings", key: "s\(index)", json: "{}", now: day(1))
            #expect(result.outcome == .allowed)
            #expect(result.limit.used == nil, "an uncapped collection is not counted by a put")
        }
        let limits = try ["settings", "subscriptions"].flatMap {
            try engine.limits(user: "u1", collection: $0, now: day(1))
        }
        #expect(limits.map(\.used) == [3, 5])
        // Deleting below the cap lets a new key in, counted exactly.
        try engine.deleteRecord(user: "u1", collection: "subscriptions", key: "1", now: day(2))
        let again = try engine.putRecord(user: "u1", collection: "subscriptions", key: "7", json: "{}", now: day(2))
        #expect(again.outcome == .allowed)
        #expect(
            again.limit
                == CollectionLimit(collection: "subscriptions", tier: .guest, used: 5, cap: 5, outcome: .needsAccount))
        let refused = try engine.putRecord(user: "u1", collection: "subscriptions", key: "8", json: "{}", now: day(2))
        #expect(refused.outcome == .needsAccount)
    }

    /// A bulk load decides each record as a put would: caps per user and
    /// collection, counted as the load goes; an existing key as the policy says.
    @Test(arguments: StoreBackend.allCases)
    func aBulkLoadEnforcesCapsPerUserAndThePolicyOnExistingKeys(backend: StoreBackend) throws {
        let (engine, store) = try filledGuest(backend: backend)
        try makeGuests(["u2"], in: store, profile: engine.profile)
        var outcomes: [BulkPutOutcome] = []
        try engine.putRecords(onConflict: .skip, now: day(3)) { put in
            for record in [
                BulkRecord(user: "u1", collection: "subscriptions", key: "1", data: #"{"n":"new"}"#),
                BulkRecord(user: "u1", collection: "subscriptions", key: "6", data: "{}"),
                BulkRecord(user: "u2", collection: "subscriptions", key: "a", data: "{}"),
                BulkRecord(user: "u2", collection: "settings", key: "s", data: "{}"),
            ] {
                outcomes.append(try put(record))
            }
        }
        #expect(outcomes.count == 4)
        #expect(outcomes[0] == .skipped)
        #expect(
            outcomes[1]
                == .refused(
                    CollectionLimit(collection: "subscriptions", tier: .guest, used: 5, cap: 5, outcome: .needsAccount))
        )
        #expect(outcomes[2] == .added)
        #expect(outcomes[3] == .added)
        #expect(try stored(engine, "u1", "subscriptions", "1")?.data == #"{"n":1}"#)
        #expect(try engine.records(user: "u2", collection: "subscriptions").map(\.key) == ["a"])
        #expect(try store.user(id: "u2").lastSeenAt == day(3))

        // Four more fit under u2's cap of five; the sixth in the same load is refused.
        var counted: [BulkPutOutcome] = []
        try engine.putRecords(onConflict: .replace, now: day(3)) { put in
            for key in ["b", "c", "d", "e", "f", "a"] {
                counted.append(
                    try put(BulkRecord(user: "u2", collection: "subscriptions", key: key, data: #"{"k":"\#(key)"}"#)))
            }
        }
        #expect(counted.prefix(4).allSatisfy { $0 == .added })
        #expect(counted[4] != .added)
        #expect(counted[5] == .replaced, "replacing a key is free at the cap")

        // A missing user, or a feed that throws, rolls everything back.
        struct Stop: Error {}
        #expect(throws: (any Error).self) {
            try engine.putRecords(onConflict: .replace, now: day(4)) { put in
                _ = try put(BulkRecord(user: "u2", collection: "settings", key: "t", data: "{}"))
                _ = try put(BulkRecord(user: "nobody", collection: "settings", key: "t", data: "{}"))
            }
        }
        #expect(try stored(engine, "u2", "settings", "t") == nil)
        #expect(throws: Stop.self) {
            try engine.putRecords(onConflict: .fail, now: day(4)) { put in
                #expect(
                    try put(BulkRecord(user: "u2", collection: "settings", key: "s", data: #"{"v":1}"#)) == .exists)
                _ = try put(BulkRecord(user: "u2", collection: "settings", key: "t", data: "{}"))
                throw Stop()
            }
        }
        #expect(try stored(engine, "u2", "settings", "t") == nil)
    }

    /// The key of a bulk load's record is its user, collection and key: the
    /// same data again is unchanged under every policy and writes nothing;
    /// other data than an earlier record of the load is refused.
    @Test(arguments: StoreBackend.allCases)
    func aBulkLoadAppliesTheKeyRule(backend: StoreBackend) throws {
        let (engine, store) = try filledGuest(backend: backend)
        try makeGuests(["u2"], in: store, profile: engine.profile)
        try engine.putRecords(onConflict: .fail, now: day(3)) { put in
            let outcome = try put(BulkRecord(user: "u2", collection: "settings", key: "s", data: #"{"v":1}"#))
            #expect(outcome == .added)
        }
        let before = try stored(engine, "u2", "settings", "s")
        let seen = try store.user(id: "u2").lastSeenAt
        for policy in RecordConflictPolicy.allCases {
            var outcomes: [BulkPutOutcome] = []
            try engine.putRecords(onConflict: policy, now: day(4)) { put in
                for line in 1...2 {
                    outcomes.append(
                        try put(
                            BulkRecord(user: "u2", collection: "settings", key: "s", data: #"{"v":1}"#, line: line)))
                }
            }
            #expect(outcomes == [.unchanged, .unchanged], "\(policy)")
        }
        #expect(try stored(engine, "u2", "settings", "s") == before, "the record's update time did not move")
        #expect(try store.user(id: "u2").lastSeenAt == seen, "a load that wrote nothing touches no user")

        var outcomes: [BulkPutOutcome] = []
        try engine.putRecords(onConflict: .replace, now: day(5)) { put in
            for (line, data) in [(1, #"{"v":2}"#), (2, #"{"v":2}"#), (3, #"{"v":3}"#)] {
                outcomes.append(
                    try put(BulkRecord(user: "u2", collection: "settings", key: "t", data: data, line: line)))
            }
        }
        #expect(outcomes == [.added, .unchanged, .keyReused(firstLine: 1)])
    }

    @Test(arguments: StoreBackend.allCases)
    func getAndListReturnWhatWasStoredOrderedByKey(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try makeGuests(["u1", "u2"], in: store, profile: profile)
        let engine = GuestMode(profile: profile, store: store)
        for key in ["b", "a", "c"] {
            _ = try engine.putRecord(
                user: "u1", collection: "settings", key: key, json: #"{"k":"\#(key)"}"#, now: day(1))
        }
        _ = try engine.putRecord(user: "u2", collection: "settings", key: "a", json: #"{"k":2}"#, now: day(1))
        let listed = try engine.records(user: "u1", collection: "settings")
        #expect(listed.map(\.key) == ["a", "b", "c"])
        #expect(listed.allSatisfy { $0.owner == "u1" && $0.collection == "settings" })
        #expect(
            try stored(engine, "u1", "settings", "a")
                == StoredRecord(
                    owner: "u1", collection: "settings", key: "a", data: #"{"k":"a"}"#, createdAt: day(1),
                    updatedAt: day(1)))
        #expect(try engine.records(user: "u1", collection: "subscriptions").isEmpty)
        #expect(try stored(engine, "u1", "settings", "missing") == nil)
    }

    @Test(arguments: StoreBackend.allCases)
    func deletingFreesTheCapAndAMissingKeyChangesNothing(backend: StoreBackend) throws {
        let (engine, _) = try filledGuest(backend: backend)
        try engine.deleteRecord(user: "u1", collection: "subscriptions", key: "2", now: day(2))
        #expect(try stored(engine, "u1", "subscriptions", "2") == nil)
        #expect {
            try engine.deleteRecord(user: "u1", collection: "subscriptions", key: "2", now: day(2))
        } throws: { ($0 as? GuestModeError)?.code == .recordNotFound }
        #expect(try engine.records(user: "u1", collection: "subscriptions").count == 4)
        let again = try engine.putRecord(user: "u1", collection: "subscriptions", key: "6", json: "{}", now: day(2))
        #expect(again.outcome == .allowed)
    }

    @Test(arguments: StoreBackend.allCases)
    func limitsFollowTheTierInForce(backend: StoreBackend) throws {
        let (engine, _) = try filledGuest(backend: backend)
        let limits = try ["subscriptions", "settings"].flatMap {
            try engine.limits(user: "u1", collection: $0, now: day(1))
        }
        #expect(
            limits == [
                CollectionLimit(collection: "subscriptions", tier: .guest, used: 5, cap: 5, outcome: .needsAccount),
                CollectionLimit(collection: "settings", tier: .guest, used: 0, cap: nil, outcome: .allowed),
            ])
    }

    @Test(arguments: StoreBackend.allCases)
    func everyUseCaseThrowsForAMissingUser(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        let isUserNotFound: (any Error) -> Bool = { ($0 as? GuestModeError)?.code == .userNotFound }
        #expect {
            try engine.putRecord(user: "ghost", collection: "settings", key: "k", json: "{}", now: day(1))
        } throws: { isUserNotFound($0) }
        #expect { try engine.record(user: "ghost", collection: "settings", key: "k") } throws: { isUserNotFound($0) }
        #expect { try engine.records(user: "ghost", collection: "settings") } throws: { isUserNotFound($0) }
        #expect {
            try engine.deleteRecord(user: "ghost", collection: "settings", key: "k", now: day(1))
        } throws: { isUserNotFound($0) }
        #expect {
            try engine.limits(user: "ghost", collection: "settings", now: day(1))
        } throws: { isUserNotFound($0) }
        #expect(try !engine.containsUser("ghost"), "a refused put creates no user")
    }
}
