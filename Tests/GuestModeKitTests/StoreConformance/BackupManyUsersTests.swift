import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

private typealias Fixture = BackupRowFixture

private struct Abort: Error {}

/// Ids a JSON string must escape or that sort differently by bytes than by
/// locale, beside thousands of long plain ones: enough for PostgreSQL's
/// cursor to fetch several times and for header.json to be written in
/// several pieces.
private let trickyUsers = [
    "q\"uote", "back\\slash", "a/b", "tab\there", "\u{8}\u{c}\u{1}\u{1f}\n\r", "é", "😀", "line\u{2028}sep", "Z", "a",
    "~", "\u{7f}",
]

private func manyUsers(_ count: Int) -> [String] {
    (0..<count).map { "user-\(String(repeating: "x", count: 24))-\($0)" } + trickyUsers
}

/// Users in the order a whole-store export lists them: UTF-8 byte order.
private func byteOrder(_ users: [String]) -> [String] {
    users.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
}

/// A users row for each user, and an event with its counter for every seventh from the first.
private func rows(for users: [String]) -> [(BackupTable, Fixture.Row)] {
    let events = BackupTable.named("events")!
    let counters = BackupTable.named("counters")!
    var rows: [(BackupTable, Fixture.Row)] = users.map { (BackupTable.all[0], Fixture.user($0)) }
    for (index, user) in users.enumerated() where index % 7 == 0 {
        rows.append(
            (
                events,
                [
                    "id": .integer(Int64(index + 1)), "user_id": .text(user), "action": .text("app_opened"),
                    "at": Fixture.time(1), "count": .integer(1), "idempotency_key": .null, "properties": .null,
                ]
            ))
        rows.append((counters, ["user_id": .text(user), "action": .text("app_opened"), "total": .integer(1)]))
    }
    return rows
}

/// An export's rows per table, each spelled out and sorted: backends order
/// users differently (SQLite by insertion, PostgreSQL by id). An archive's
/// import numbers surrogate ids afresh; `withoutSurrogateIDs` leaves them out.
private func normalized(_ tables: [String: [Fixture.Row]], withoutSurrogateIDs: Bool = false) -> [String: [String]] {
    Dictionary(
        uniqueKeysWithValues: tables.map { name, rows in
            let dropID = withoutSurrogateIDs && BackupTable.named(name)?.hasSurrogateID == true
            let spelled = rows.map { row in
                row.filter { !(dropID && $0.key == "id") }.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
                    .joined(separator: "|")
            }
            return (name, spelled.sorted())
        })
}

private func temporaryDirectory() throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("guestmode-unit-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

/// Whole-store exports and copies stream their users (issue #23): these
/// check that what is streamed is every user, once, in order, and that the
/// archive and the copy mean what they meant when the list was held whole.
@Suite struct BackupManyUsersTests {
    @Test(arguments: StoreBackend.allCases)
    func theUserListStreamsEveryUserInByteOrderTheSameOnEveryPass(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let users = manyUsers(2_500)
        try Fixture.load(users.map { (BackupTable.all[0], Fixture.user($0)) }, into: store)
        try store.readBackupRows(.all, guestOwner: profile.guestOwner) { snapshot throws in
            var first: [String] = []
            try snapshot.forEachUser { first.append($0) }
            #expect(first == byteOrder(users))
            var second: [String] = []
            try snapshot.forEachUser { second.append($0) }
            #expect(second == first)
        }
    }

    /// An export reads the list twice (header.json's size, then its bytes):
    /// the store is scanned once, the second pass read back from the spool,
    /// here past its memory into its file.
    @Test func theUserListIsReadFromTheStoreOnceAndGivenBackFromTheSpool() throws {
        let users = byteOrder(manyUsers(40_000))
        let source = CountingUserSource(users: users)
        let snapshot = try BackupRowSnapshot(source, selection: .all, guestOwner: "guest")
        var first: [String] = []
        try snapshot.forEachUser { first.append($0) }
        var second: [String] = []
        try snapshot.forEachUser { second.append($0) }
        #expect(first == users)
        #expect(second == users)
        #expect(source.scans == 1)
        #expect(users.reduce(0) { $0 + $1.utf8.count } > 1 << 20)
    }

    /// A pass its caller stopped kept no partial list: the next pass reads the store again, whole.
    @Test func aStoppedPassIsNotGivenBack() throws {
        let users = byteOrder(manyUsers(100))
        let source = CountingUserSource(users: users)
        let snapshot = try BackupRowSnapshot(source, selection: .all, guestOwner: "guest")
        var heard = 0
        #expect(throws: Abort.self) {
            try snapshot.forEachUser { _ in
                heard += 1
                if heard == 10 { throw Abort() }
            }
        }
        var again: [String] = []
        try snapshot.forEachUser { again.append($0) }
        #expect(again == users)
        #expect(source.scans == 2)
    }

    @Test(arguments: StoreBackend.allCases)
    func aWholeStoreArchiveListsEveryUserExactlyAsTheEncoderWouldAndRoundTrips(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = try GuestMode(store: store, location: "source")
        let users = manyUsers(3_000)
        try Fixture.load(rows(for: users), into: store)
        let key = BackupKey.generate()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for format in [ArchiveFormat.tarZstd, .zip] {
            let path = directory.appendingPathComponent("all.\(format.fileExtension)").path
            let summary = try engine.exportBackup(
                .all, to: path, format: format, now: day(3), toolVersion: "test", signingKey: key)
            #expect(summary.users == users.count)
            let heard = HeardUsers()
            let walk = try ArchiveWalk.read(path: path, depth: .full, limits: .standard, listed: heard)
            #expect(heard.users == byteOrder(users))
            #expect(walk.userCount == users.count)
            #expect(walk.header.users == Array(heard.users.prefix(ArchiveWalk.userSampleLimit)))
            var whole = walk.header
            whole.users = heard.users
            let encoded = Array(try BackupFormat.encoder().encode(whole))
            #expect(encoded.count > StreamedHeader.pieceSize, "the header was written in several pieces")
            // Byte for byte what the encoder writes for the header holding every user.
            #expect(walk.observed["header.json"]?.size == Int64(encoded.count))
            #expect(walk.observed["header.json"]?.sha256 == StreamingSHA256.hex(of: encoded))
            #expect(walk.problems.isEmpty, "\(walk.problems)")
            #expect(
                try BackupArchive.requireIntact(path: path, keys: BackupKeys(deployment: key)) == .thisDeployment)

            let (target, _) = try backend.makeStore(profile: "subscriptions")
            let report = try GuestMode(store: target, location: "target").importBackup(
                from: path, onConflict: .fail, dryRun: false, keys: BackupKeys(deployment: key), now: day(3))
            #expect(report.signature == .thisDeployment)
            #expect(
                normalized(try Fixture.export(target, guestOwner: profile.guestOwner), withoutSurrogateIDs: true)
                    == normalized(try Fixture.export(store, guestOwner: profile.guestOwner), withoutSurrogateIDs: true),
                "\(format)")
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func anEmptyStoresArchiveHasTheEncodersEmptyUserList(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "subscriptions")
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("empty.tar.zst").path
        let summary = try GuestMode(store: store, location: "source").exportBackup(
            .all, to: path, format: .tarZstd, now: day(3), toolVersion: "test")
        #expect(summary.users == 0)
        let walk = try ArchiveWalk.read(path: path, depth: .full, limits: .standard)
        #expect(walk.header.users.isEmpty && walk.userCount == 0)
        let encoded = Array(try BackupFormat.encoder().encode(walk.header))
        #expect(walk.observed["header.json"]?.sha256 == StreamingSHA256.hex(of: encoded))
        #expect(walk.problems.isEmpty, "\(walk.problems)")
    }

    /// More users than the PostgreSQL import remembers (10,000), some with
    /// rows written one at a time (identities), the others in batches.
    @Test(arguments: zip([StoreBackend.sqlite, .postgres], [StoreBackend.postgres, .sqlite]))
    func aCopyOfMoreUsersThanTheImportRemembersIsExact(from: StoreBackend, to: StoreBackend) throws {
        let (source, profile) = try from.makeStore(profile: "subscriptions")
        let users = manyUsers(10_500)
        var all = rows(for: users)
        for (index, user) in users.enumerated() where index % 50 == 0 {
            all.append(
                (
                    BackupTable.named("identities")!,
                    [
                        "provider": .text("apple"), "subject": .text("sub-\(index)"), "user_id": .text(user),
                        "email": .null, "linked_at": Fixture.time(2),
                    ]
                ))
        }
        try Fixture.load(all, into: source)
        let (destination, _) = try to.makeStore(profile: "subscriptions")
        let digests = try StoreCopy.copy(from: source, to: destination, guestOwner: profile.guestOwner)
        #expect(digests["users"]?.rows == users.count)
        #expect(
            normalized(try Fixture.export(destination, guestOwner: profile.guestOwner))
                == normalized(try Fixture.export(source, guestOwner: profile.guestOwner)))
    }

    /// A hand-made archive may carry rows before their users: batches of them
    /// give their users placeholders, which the users rows then fill; a user
    /// already in the store needs none; one whose row never comes dangles.
    @Test(arguments: StoreBackend.allCases)
    func batchesOfRowsBeforeTheirUsersGetPlaceholdersThatTheUsersFill(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try Fixture.load([(BackupTable.all[0], Fixture.user("existing"))], into: store)
        let users = manyUsers(2_500)
        let all = rows(for: ["existing"] + users)
        let userRows = all.filter { $0.0.name == "users" && $0.1["id"] != .text("existing") }
        let otherRows = all.filter { $0.0.name != "users" }
        #expect(otherRows.contains { $0.1["user_id"] == .text("existing") })
        try store.importBackupRows(dryRun: false) { writes throws in
            for (table, row) in otherRows + userRows { _ = try writes.insert(row, into: table) }
            #expect(try writes.tableWithDanglingReferences() == nil)
        }
        #expect(
            normalized(try Fixture.export(store, guestOwner: profile.guestOwner))
                == normalized(Fixture.grouped([(BackupTable.all[0], Fixture.user("existing"))] + userRows + otherRows)))

        let (other, _) = try backend.makeStore(profile: "subscriptions")
        let missing = try #require(otherRows.first { $0.1["user_id"] != .text("existing") }?.1["user_id"])
        var dangling: String?
        try? other.importBackupRows(dryRun: false) { writes throws in
            for (table, row) in otherRows + userRows where row["id"] != missing {
                _ = try writes.insert(row, into: table)
            }
            dangling = try writes.tableWithDanglingReferences()
            throw Abort()
        }
        #expect(dangling == "events" || dangling == "counters", "\(dangling ?? "nothing") dangles")
    }

    /// Rows the engine says have their users row already (`ownerHasUsersRow`) get no
    /// placeholder; a row said so wrongly still cannot commit with its user missing:
    /// the store's own keys refuse it (at the row, or at the end of a restore, whose keys
    /// to users come back after the rows), and nothing is written.
    @Test(arguments: StoreBackend.allCases)
    func aRowWhoseUserIsWronglySaidWrittenIsStillRefused(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let users = manyUsers(30)
        let all = rows(for: users)
        #expect(throws: (any Error).self) {
            try store.importBackupRows(dryRun: false) { writes throws in
                for (table, row) in all where table.name != "users" || row["id"] != .text(users[0]) {
                    _ = try writes.insert(row, into: table, ownerHasUsersRow: table.name != "users")
                }
            }
        }
        #expect(try Fixture.export(store, guestOwner: profile.guestOwner).values.allSatisfy(\.isEmpty))

        let (other, _) = try backend.makeStore(profile: "subscriptions")
        try other.importBackupRows(dryRun: false) { writes throws in
            for (table, row) in all { _ = try writes.insert(row, into: table, ownerHasUsersRow: table.name != "users") }
        }
        #expect(
            normalized(try Fixture.export(other, guestOwner: profile.guestOwner)) == normalized(Fixture.grouped(all)))
    }
}

/// Every user of header.json, as the walk streams them.
private final class HeardUsers: ListedUserSink {
    var users: [String] = []
    func add(_ user: String) throws { users.append(user) }
    func restart() throws { users = [] }
}

/// A store of users only, counting how often its user list is scanned.
private final class CountingUserSource: BackupRowSource {
    let users: [String]
    private(set) var scans = 0

    init(users: [String]) { self.users = users }

    func userExists(_ id: String) throws -> Bool { users.contains(id) }
    func hasRecords(ownedBy owner: String) throws -> Bool { false }
    func forEachUserID(_ body: (String) throws -> Void) throws {
        scans += 1
        for user in users { try body(user) }
    }
    func rowCount(in table: BackupTable, of owners: BackupOwners) throws -> Int { 0 }
    func forEachRow(
        in table: BackupTable, of owners: BackupOwners,
        _ body: (_ columns: [String], _ values: [CellValue]) throws -> Void
    ) throws {}
    func forEachRawRow(
        in table: BackupTable, of owners: BackupOwners,
        _ body: (_ columns: [String], _ cells: UnsafeBufferPointer<RawCell>) throws -> Void
    ) throws {}
}
