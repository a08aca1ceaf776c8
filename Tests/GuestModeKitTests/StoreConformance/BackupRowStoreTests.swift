import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

private typealias Fixture = BackupRowFixture

private struct Abort: Error {}

extension BackupRowSnapshot {
    /// The users `forEachUser` streams, gathered (a test's stores are small).
    func allUsers() throws -> [String] {
        var users: [String] = []
        try forEachUser { users.append($0) }
        return users
    }
}

private func table(_ name: String) throws -> BackupTable {
    try #require(BackupTable.named(name))
}

@Suite struct BackupRowStoreTests {
    @Test(arguments: StoreBackend.allCases)
    func exportThenImportIntoAFreshStoreRoundTripsEveryTable(backend: StoreBackend) throws {
        let (source, profile) = try backend.makeStore(profile: "subscriptions")
        let dataset = Fixture.dataset(guestOwner: profile.guestOwner)
        try Fixture.load(dataset, into: source)
        let exported = try Fixture.export(source, guestOwner: profile.guestOwner)
        #expect(exported == Fixture.grouped(dataset))
        #expect(BackupTable.all.allSatisfy { exported[$0.name]?.isEmpty == false }, "every table holds rows")

        let (target, _) = try backend.makeStore(profile: "subscriptions")
        try target.importBackupRows(dryRun: false) { writes throws in
            for table in BackupTable.all {
                for row in exported[table.name] ?? [] { #expect(try writes.insert(row, into: table) == .inserted) }
            }
            #expect(try writes.tableWithDanglingReferences() == nil)
        }
        #expect(try Fixture.export(target, guestOwner: profile.guestOwner) == exported)
    }

    @Test(arguments: StoreBackend.allCases)
    func theWholeStoreListsEveryUserAndTheGuestOwnerWithRowCounts(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try store.readBackupRows(.all, guestOwner: profile.guestOwner) { snapshot throws in
            #expect(try snapshot.allUsers().isEmpty)
            #expect(snapshot.guestOwner == nil, "no guest-owner records yet")
            #expect(try snapshot.rowCount(in: table("users")) == 0)
        }
        try Fixture.load(Fixture.dataset(guestOwner: profile.guestOwner), into: store)
        try store.readBackupRows(.all, guestOwner: profile.guestOwner) { snapshot throws in
            #expect(try snapshot.allUsers() == ["u1", "u2"])
            #expect(snapshot.guestOwner == profile.guestOwner)
            for table in BackupTable.all {
                var streamed = 0
                try snapshot.forEachRow(in: table) { _, _ in streamed += 1 }
                #expect(try snapshot.rowCount(in: table) == streamed, "\(table.name)")
                #expect(streamed == (table.mayBelongToGuestOwner ? 3 : 2), "\(table.name)")
            }
        }
    }

    /// A whole-store export reads the tables whose owner column is a foreign key to `users(id)` without
    /// looking each row's owner up; the tables without one still leave out the rows of a user the store lacks.
    @Test func aWholeStoreExportLeavesOutRowsOfAUserTheStoreDoesNotHoldWhereNoForeignKeyDoes() throws {
        let backend = StoreBackend.sqlite
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let dataset = Fixture.dataset(guestOwner: profile.guestOwner)
        try Fixture.load(dataset, into: store)
        let time = Fixture.time(1).text ?? ""
        try backend.executeRaw(
            """
            INSERT INTO outbox (user_id, queued_at) VALUES ('gone', '\(time)');
            INSERT INTO user_flags (user_id, flag, set_at) VALUES ('gone', 'flag', '\(time)');
            INSERT INTO records (owner_id, collection, key, data, created_at, updated_at)
                VALUES ('gone', 'notes', 'k', '{}', '\(time)', '\(time)');
            """, on: store)
        #expect(try Fixture.export(store, guestOwner: profile.guestOwner) == Fixture.grouped(dataset))
        try store.readBackupRows(.all, guestOwner: profile.guestOwner) { snapshot throws in
            for table in BackupTable.all {
                #expect(try snapshot.rowCount(in: table) == (table.mayBelongToGuestOwner ? 3 : 2), "\(table.name)")
            }
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func aSelectionOfOneUserExportsOnlyThatUsersRows(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try Fixture.load(Fixture.dataset(guestOwner: profile.guestOwner), into: store)
        let exported = try Fixture.export(store, .users(["u2"]), guestOwner: profile.guestOwner)
        #expect(exported == Fixture.grouped(Fixture.rows(of: "u2", base: 2)))
        try store.readBackupRows(.users(["u2", "nobody", "u2"]), guestOwner: profile.guestOwner) { snapshot throws in
            #expect(try snapshot.allUsers() == ["u2"], "missing users are left out, repeats counted once")
            #expect(snapshot.guestOwner == nil, "guest-owner records travel only in whole-store exports")
            for table in BackupTable.all {
                #expect(try snapshot.rowCount(in: table) == 1, "\(table.name)")
                try snapshot.forEachRow(in: table) { columns, values in
                    let owner = columns.firstIndex(of: table.ownerColumn).map { values[$0] }
                    #expect(owner == .text("u2"), "\(table.name)")
                }
            }
        }
        try store.readBackupRows(.users(["u1", "u2"]), guestOwner: profile.guestOwner) { snapshot throws in
            #expect(try snapshot.allUsers() == ["u1", "u2"])
            #expect(try snapshot.rowCount(in: table("records")) == 2)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func anImportThatThrowsMidwayLeavesTheStoreUnchanged(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try Fixture.load(Fixture.rows(of: "u1", base: 1), into: store)
        let before = try Fixture.export(store, guestOwner: profile.guestOwner)
        #expect(throws: Abort.self) {
            try store.importBackupRows(dryRun: false) { writes throws in
                try writes.deleteRows(ownedBy: ["u1"])
                for (table, row) in Fixture.rows(of: "u2", base: 2) { _ = try writes.insert(row, into: table) }
                throw Abort()
            }
        }
        #expect(try Fixture.export(store, guestOwner: profile.guestOwner) == before)
    }

    @Test(arguments: StoreBackend.allCases)
    func aDryRunReturnsItsResultAndKeepsNothing(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let before = try Fixture.export(store, guestOwner: profile.guestOwner)
        let inserted = try store.importBackupRows(dryRun: true) { writes throws in
            for (table, row) in Fixture.dataset(guestOwner: profile.guestOwner) {
                _ = try writes.insert(row, into: table)
            }
            #expect(try writes.creationTime(ofUser: "u1") != nil, "the dry run sees its own writes")
            return 31
        }
        #expect(inserted == 31)
        #expect(try Fixture.export(store, guestOwner: profile.guestOwner) == before)
    }

    @Test(arguments: StoreBackend.allCases)
    func anImportSeesWhoIsAlreadyThereAndCanReplaceThem(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try Fixture.load(Fixture.dataset(guestOwner: profile.guestOwner), into: store)
        try store.importBackupRows(dryRun: false) { writes throws in
            #expect(try writes.creationTime(ofUser: "u1") == Fixture.time(1).text)
            #expect(try writes.creationTime(ofUser: "nobody") == nil)
            #expect(try writes.hasRecords(ownedBy: profile.guestOwner))
            #expect(try !writes.hasRecords(ownedBy: "nobody"))
            #expect(try writes.columns(of: table("users")) == Set(Fixture.user("x").keys))
            #expect(try writes.columns(of: table("plans")).isSuperset(of: ["id", "user_id", "plan", "granted_at"]))
            try writes.deleteRows(ownedBy: ["u1", profile.guestOwner])
            try writes.deleteRows(ownedBy: [])
            #expect(try writes.creationTime(ofUser: "u1") == nil)
            #expect(try !writes.hasRecords(ownedBy: profile.guestOwner))
        }
        #expect(
            try Fixture.export(store, guestOwner: profile.guestOwner)
                == Fixture.grouped(Fixture.rows(of: "u2", base: 2)))
    }

    @Test(arguments: StoreBackend.allCases)
    func aSurrogateIDAlreadyTakenIsRenumbered(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try Fixture.load(Fixture.rows(of: "u1", base: 1), into: store)
        let incoming = Fixture.rows(of: "u2", base: 1)
        let renumbered = try store.importBackupRows(dryRun: false) { writes throws in
            try incoming.filter { try writes.insert($0.1, into: $0.0) == .renumbered }.map(\.0.name)
        }
        #expect(Set(renumbered) == Set(BackupTable.all.filter(\.hasSurrogateID).map(\.name)))
        let exported = try Fixture.export(store, .users(["u2"]), guestOwner: profile.guestOwner)
        for table in BackupTable.all where table.hasSurrogateID {
            let id = exported[table.name]?.first?["id"]
            #expect(id != nil && id != .integer(1), "\(table.name) got a fresh id")
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func refusedRowsSayWhyAndARolledBackImportKeepsNothing(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try Fixture.load(Fixture.rows(of: "u1", base: 1), into: store)
        let before = try Fixture.export(store, guestOwner: profile.guestOwner)
        let identities = try table("identities")
        let users = try table("users")
        func refusal(
            _ row: Fixture.Row, into table: BackupTable, after setup: [(BackupTable, Fixture.Row)] = []
        )
            throws -> BackupRowRefusal.Reason?
        {
            var reason: BackupRowRefusal.Reason?
            try? store.importBackupRows(dryRun: false) { writes throws in
                for (table, row) in setup { _ = try writes.insert(row, into: table) }
                do {
                    // A store may hold the row back (PostgreSQL writes batches through COPY): the
                    // refusal then comes from the flush.
                    _ = try writes.insert(row, into: table)
                    try writes.flush()
                } catch let refused as BackupRowRefusal {
                    reason = refused.reason
                }
                throw Abort()
            }
            return reason
        }
        // u2 brings an identity u1 already holds.
        var taken = Fixture.rows(of: "u2", base: 2)[1].1
        taken["subject"] = .text("sub-u1")
        #expect(
            try refusal(taken, into: identities, after: [(users, Fixture.user("u2"))]) == .identityTaken(holder: "u1"))
        #expect(try refusal(Fixture.user("u1"), into: users) == .duplicateKey)
        var incomplete = Fixture.user("u3")
        incomplete["created_at"] = .null
        #expect(try refusal(incomplete, into: users) == .invalid)
        #expect(try Fixture.export(store, guestOwner: profile.guestOwner) == before)
    }

    @Test(arguments: StoreBackend.allCases)
    func rowsMayComeBeforeTheirUserButDanglingOnesAreFound(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let rows = Fixture.rows(of: "u1", base: 1)
        try store.importBackupRows(dryRun: false) { writes throws in
            for (table, row) in rows.reversed() { _ = try writes.insert(row, into: table) }
            #expect(try writes.tableWithDanglingReferences() == nil)
        }
        #expect(try Fixture.export(store, guestOwner: profile.guestOwner) == Fixture.grouped(rows))

        let (empty, _) = try backend.makeStore(profile: "subscriptions")
        var dangling: String?
        try? empty.importBackupRows(dryRun: false) { writes throws in
            _ = try writes.insert(Fixture.rows(of: "ghost", base: 1)[1].1, into: table("identities"))
            dangling = try writes.tableWithDanglingReferences()
            throw Abort()
        }
        #expect(dangling == "identities")
        #expect(try Fixture.export(empty, guestOwner: profile.guestOwner) == Fixture.grouped([]))
    }
}
