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

    /// A store says whether it holds a user: none when new, one once a users
    /// row is in (the import's own, as it is written), none again after a
    /// dry run rolled it back.
    @Test(arguments: StoreBackend.allCases)
    func aStoreSaysWhetherItHoldsUsers(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "subscriptions")
        for dryRun in [true, false] {
            try store.importBackupRows(dryRun: dryRun) { writes throws in
                #expect(try !writes.holdsUsers())
                _ = try writes.insert(Fixture.user("u1"), into: table("users"))
                #expect(try writes.holdsUsers())
                #expect(try writes.creationTimes(ofUsers: ["u1", "u2"]).keys.sorted() == ["u1"])
            }
        }
        try store.importBackupRows(dryRun: true) { writes throws in #expect(try writes.holdsUsers()) }
    }

    /// Rows of one table share a column list as a rule, and a store binds
    /// the next row by that list; a row in another order, or with a column
    /// left to its default, must still land each value in its own column.
    @Test(arguments: StoreBackend.allCases)
    func rowsOfOneTableMayListTheirColumnsInAnyOrder(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let counters = try table("counters")
        let shared = ["user_id", "action", "total"]
        func counter(_ action: String, _ total: Int64, columns: [String] = shared) -> BackupRow {
            let values: [String: CellValue] = [
                "user_id": .text("u1"), "action": .text(action), "total": .integer(total),
            ]
            return BackupRow(columns: columns, values: columns.map { values[$0] ?? .null })
        }
        try store.importBackupRows(dryRun: false) { writes throws in
            _ = try writes.insert(Fixture.user("u1"), into: table("users"))
            _ = try writes.insert(counter("a", 1), into: counters)
            _ = try writes.insert(counter("b", 2), into: counters)
            _ = try writes.insert(counter("c", 3, columns: ["total", "user_id", "action"]), into: counters)
            _ = try writes.insert(counter("d", 4), into: counters)
            _ = try writes.insert(counter("e", 5, columns: ["action", "total", "user_id"]), into: counters)
            let users = try table("users")
            // The users table's defaults fill what a shorter row leaves out.
            var short = BackupRow(Fixture.user("u2"))
            short["state"] = nil
            short["prompt_state"] = nil
            _ = try writes.insert(short, into: users)
        }
        let exported = try Fixture.export(store, guestOwner: profile.guestOwner)
        let totals = (exported["counters"] ?? []).map { "\($0["action"]?.text ?? "?")=\($0["total"] ?? .null)" }
            .sorted()
        #expect(totals == ["a=integer(1)", "b=integer(2)", "c=integer(3)", "d=integer(4)", "e=integer(5)"])
        let u2 = try #require((exported["users"] ?? []).first { $0["id"] == .text("u2") })
        #expect(u2["state"] == .text("anonymous"))
        #expect(u2["created_at"] == Fixture.user("u2")["created_at"])
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
    @Test(arguments: StoreBackend.allCases)
    func aWholeStoreExportLeavesOutRowsOfAUserTheStoreDoesNotHoldWhereNoForeignKeyDoes(backend: StoreBackend) throws {
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
            #expect(try writes.creationTimes(ofUsers: ["u1"])["u1"] != nil, "the dry run sees its own writes")
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
            #expect(try writes.creationTimes(ofUsers: ["u1", "nobody"]) == ["u1": Fixture.time(1).text])
            #expect(try writes.hasRecords(ownedBy: profile.guestOwner))
            #expect(try !writes.hasRecords(ownedBy: "nobody"))
            #expect(try writes.columns(of: table("users")) == Set(Fixture.user("x").keys))
            #expect(try writes.columns(of: table("plans")).isSuperset(of: ["id", "user_id", "plan", "granted_at"]))
            try writes.deleteRows(ownedBy: ["u1", profile.guestOwner])
            try writes.deleteRows(ownedBy: [])
            #expect(try writes.creationTimes(ofUsers: ["u1"]).isEmpty)
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

    /// Into a store without users (a restore) PostgreSQL drops the primary
    /// keys of the tables whose ids it assigns while the rows go in: rows that
    /// bring ids of their own, above, equal to and below those before them,
    /// are still kept or renumbered as into any store, and the ids the store
    /// gives after the import are new.
    @Test(arguments: StoreBackend.allCases)
    func rowsWithIDsOfTheirOwnIntoAStoreWithoutUsers(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let events = try table("events")
        func event(_ id: Int64?, _ index: Int) -> Fixture.Row {
            var row: Fixture.Row = [
                "user_id": .text("u1"), "action": .text("action-\(index)"), "at": Fixture.time(1 + index),
                "count": .integer(1), "idempotency_key": .null, "properties": .null,
            ]
            if let id { row["id"] = .integer(id) }
            return row
        }
        let incoming = [event(nil, 0), event(5, 1), event(6, 2), event(5, 3), event(nil, 4), event(2, 5)]
        let renumbered = try store.importBackupRows(dryRun: false) { writes throws in
            _ = try writes.insert(Fixture.user("u1"), into: try table("users"))
            return try incoming.filter { try writes.insert($0, into: events) == .renumbered }.count
        }
        #expect(renumbered == 1, "the second row with id 5")
        try store.importBackupRows(dryRun: false) { writes throws in _ = try writes.insert(event(nil, 6), into: events)
        }
        let ids = try Fixture.export(store, .users(["u1"]), guestOwner: profile.guestOwner)["events"]?.compactMap {
            if case .integer(let id) = $0["id"] { id } else { nil }
        }
        #expect(ids?.count == 7 && Set(ids ?? []).count == 7, "\(ids ?? [])")
        #expect(Set(ids ?? []).isSuperset(of: [2, 5, 6]), "\(ids ?? [])")
    }

    /// A store may bind a table's rows by the order the previous row listed
    /// its columns in: rows whose dictionaries list them in that order (copies
    /// of one row), rows listing them in another (built in another order, with
    /// another capacity), a row renumbered between two that are not, and
    /// texts empty or longer than a page each land in their own columns.
    @Test(arguments: StoreBackend.allCases)
    func rowsListingTheirColumnsInAnyOrderLandInTheirColumns(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try Fixture.load([(try table("users"), Fixture.user("u1"))], into: store)
        let events = try table("events")
        let long = #"{"a":""# + String(repeating: "é", count: 12_000) + #""}"#
        func values(_ index: Int) -> [(String, CellValue)] {
            [
                ("id", .integer(index % 4 == 1 ? 1 : Int64(100 + index))), ("user_id", .text("u1")),
                ("action", .text(index % 4 == 0 ? "" : "action-\(index)")), ("at", Fixture.time(1 + index)),
                ("count", .integer(Int64(index + 1))), ("idempotency_key", index % 2 == 0 ? .null : .text("k\(index)")),
                ("properties", .text(index % 5 == 2 ? long : #"{"n":\#(index)}"#)),
            ]
        }
        // Copies of one dictionary list its keys in its order.
        let shared = Dictionary(uniqueKeysWithValues: values(0))
        var incoming: [Fixture.Row] = []
        for index in 0..<16 {
            var row: Fixture.Row
            if index % 3 == 2 {
                row = [:]
                row.reserveCapacity(64)
                for (column, value) in values(index).reversed() { row[column] = value }
            } else {
                row = shared
                for (column, value) in values(index) { row[column] = value }
            }
            incoming.append(row)
        }
        let renumbered = try store.importBackupRows(dryRun: false) { writes throws in
            try incoming.filter { try writes.insert($0, into: events) == .renumbered }.count
        }
        #expect(renumbered == 3, "the rows whose id 1 the first of them took")
        let exported = try Fixture.export(store, .users(["u1"]), guestOwner: profile.guestOwner)
        func withoutID(_ row: Fixture.Row) -> Fixture.Row { row.filter { $0.key != "id" } }
        #expect(Set((exported["events"] ?? []).map(withoutID)) == Set(incoming.map(withoutID)))
        #expect(exported["events"]?.count == incoming.count)
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
                    // refusal then comes from `finishRows`.
                    _ = try writes.insert(row, into: table)
                    try writes.finishRows()
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

    /// PostgreSQL sends a batch and reads the server's answer only while the
    /// next one fills (or at `finishRows`): a row refused there is still named
    /// by its own `insert` call, more than a batch back, and nothing is kept.
    @Test(arguments: StoreBackend.allCases)
    func aRowRefusedBatchesLaterIsNamedByItsInsertion(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try Fixture.load(Fixture.rows(of: "u1", base: 1), into: store)
        let before = try Fixture.export(store, guestOwner: profile.guestOwner)
        let records = try table("records")
        func record(_ owner: String, _ key: String) -> Fixture.Row {
            [
                "owner_id": .text(owner), "collection": .text("subscriptions"), "key": .text(key),
                "data": .text(#"{"a":"tab\there"}"#), "created_at": Fixture.time(1), "updated_at": Fixture.time(2),
            ]
        }
        // Call 0 is u2's users row; then 2,500 records, 1,250 of which follow the refused one.
        func refused(at position: Int, _ row: Fixture.Row) throws -> (BackupRowRefusal, Int)? {
            var found: (BackupRowRefusal, Int)?
            try? store.importBackupRows(dryRun: false) { writes throws in
                var call = 0
                do {
                    _ = try writes.insert(Fixture.user("u2"), into: table("users"))
                    for index in 1...2500 {
                        call = index
                        _ = try writes.insert(index == position ? row : record("u2", "k\(index)"), into: records)
                    }
                    try writes.finishRows()
                } catch let refusal as BackupRowRefusal {
                    found = (refusal, refusal.insertion ?? call)
                }
                throw Abort()
            }
            return found
        }
        // The key of a row 100 calls earlier in the archive.
        let repeated = try #require(try refused(at: 1250, record("u2", "k1150")))
        #expect(repeated.0.reason == .duplicateKey)
        #expect(repeated.1 == 1250)
        // The key of a row the store holds.
        let stored = try #require(try refused(at: 1250, record("u1", "netflix")))
        #expect(stored.0.reason == .duplicateKey)
        #expect(stored.1 == 1250)
        #expect(try Fixture.export(store, guestOwner: profile.guestOwner) == before)

        // Without a refused row every batch is written.
        try store.importBackupRows(dryRun: false) { writes throws in
            _ = try writes.insert(Fixture.user("u2"), into: table("users"))
            for index in 1...2500 { _ = try writes.insert(record("u2", "k\(index)"), into: records) }
        }
        let after = try Fixture.export(store, guestOwner: profile.guestOwner)
        #expect(after["records"]?.count == (before["records"]?.count ?? 0) + 2500)
        #expect(after["records"]?.contains(record("u2", "k2500")) == true)
    }

    /// Into a store without users (a restore) PostgreSQL drops the plain
    /// indexes for the load and keeps the keys the engine does not check
    /// itself (the surrogate ids' and the counters' it does: `CrossRowFacts`):
    /// a repeated key of a history table is refused at its own insertion,
    /// batches after the first, and nothing is kept; explicit ids out of
    /// order are told from taken ones. The import runs `body` once.
    @Test(arguments: StoreBackend.allCases)
    func aRepeatedKeyIntoAStoreWithoutUsersIsRefusedAtItsRow(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let flags = try table("user_flags")
        func flag(_ name: String) -> Fixture.Row {
            ["user_id": .text("u1"), "flag": .text(name), "set_at": Fixture.time(1)]
        }
        var runs = 0
        var refusals: [(BackupRowRefusal.Reason, Int)] = []
        #expect(throws: Abort.self) {
            try store.importBackupRows(dryRun: false) { writes throws in
                runs += 1
                var call = 0
                do {
                    _ = try writes.insert(Fixture.user("u1"), into: table("users"))
                    // Call 1,800 repeats call 100's key, in a later batch.
                    for index in 1...2500 {
                        call = index
                        _ = try writes.insert(flag(index == 1800 ? "f100" : "f\(index)"), into: flags)
                    }
                    try writes.finishRows()
                } catch let refusal as BackupRowRefusal {
                    refusals.append((refusal.reason, refusal.insertion ?? call))
                    throw Abort()
                }
            }
        }
        #expect(runs == 1)
        #expect(refusals.map(\.0) == [.duplicateKey])
        #expect(refusals.map(\.1) == [1800])
        #expect(try Fixture.export(store, guestOwner: profile.guestOwner).values.allSatisfy(\.isEmpty))

        runs = 0
        let events = try table("events")
        func event(_ id: Int64) -> Fixture.Row {
            [
                "id": .integer(id), "user_id": .text("u1"), "action": .text("app_opened"), "at": Fixture.time(1),
                "count": .integer(1), "idempotency_key": .null, "properties": .null,
            ]
        }
        let renumbered = try store.importBackupRows(dryRun: false) { writes throws in
            runs += 1
            _ = try writes.insert(Fixture.user("u1"), into: table("users"))
            for index in 1...2500 { _ = try writes.insert(flag("f\(index)"), into: flags) }
            return try [10, 5, 10].filter { try writes.insert(event($0), into: events) == .renumbered }.count
        }
        #expect(runs == 1)
        #expect(renumbered == 1)
        let exported = try Fixture.export(store, guestOwner: profile.guestOwner)
        #expect(exported["user_flags"]?.count == 2500)
        #expect(Set((exported["events"] ?? []).compactMap { $0["id"] }) == [.integer(5), .integer(10), .integer(11)])
    }

    /// The engine leaves archive ids out: the store assigns them. PostgreSQL
    /// writes such rows in batches too, each after moving the id sequence
    /// past the ids in the table, explicit ones included.
    @Test(arguments: StoreBackend.allCases)
    func rowsWithoutIDsGetFreshOnesAcrossBatches(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try Fixture.load(Fixture.rows(of: "u1", base: 1), into: store)
        let events = try table("events")
        func event(_ index: Int) -> Fixture.Row {
            [
                "user_id": .text("u2"), "action": .text("app_opened"), "at": Fixture.time(1), "count": .integer(1),
                "idempotency_key": .text("e\(index)"), "properties": .null,
            ]
        }
        try store.importBackupRows(dryRun: false) { writes throws in
            _ = try writes.insert(Fixture.user("u2"), into: table("users"))
            for index in 1...1500 { _ = try writes.insert(event(index), into: events) }
            var explicit = event(0)
            explicit["id"] = .integer(5000)
            #expect(try writes.insert(explicit, into: events) == .inserted)
            for index in 1501...2500 { _ = try writes.insert(event(index), into: events) }
        }
        let exported = try Fixture.export(store, guestOwner: profile.guestOwner)["events"] ?? []
        let ids = exported.compactMap { row -> Int64? in
            guard case .integer(let id) = row["id"] else { return nil }
            return id
        }
        #expect(ids.count == 2502)
        #expect(Set(ids).count == 2502)
        #expect(ids.contains(5000))
        // The rows after the explicit id got ids past it.
        #expect(ids.filter { $0 > 5000 }.count == 1000)
        // So does a row the store is given later.
        try store.importBackupRows(dryRun: false) { writes throws in
            _ = try writes.insert(event(2501), into: events)
        }
        let last = try Fixture.export(store, guestOwner: profile.guestOwner)["events"]?.last?["id"]
        #expect(last == .integer(6001))
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
