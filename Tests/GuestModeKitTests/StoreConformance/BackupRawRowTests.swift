import Foundation
import GRDB
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModePostgres
@testable import GuestModeSQLite

/// A cell as bytes, so texts compare byte for byte (String's `==` is by canonical equivalence).
private enum Cell: Equatable {
    case null
    case integer(Int64)
    case real(UInt64)
    case text([UInt8])

    init(_ value: CellValue) {
        switch value {
        case .null: self = .null
        case .integer(let number): self = .integer(number)
        case .real(let number): self = .real(number.bitPattern)
        case .text(let text): self = .text(Array(text.utf8))
        }
    }

    init(_ cell: RawCell) {
        switch cell {
        case .null: self = .null
        case .integer(let number): self = .integer(number)
        case .real(let number): self = .real(number.bitPattern)
        case .text(let bytes): self = .text(Array(bytes))
        }
    }
}

/// Every selected row of every table, read both ways.
private func bothReadings(_ store: any GuestStore, guestOwner: String) throws -> (rows: [[Cell]], raw: [[Cell]]) {
    try store.readBackupRows(.all, guestOwner: guestOwner) { snapshot throws in
        var rows: [[Cell]] = []
        var raw: [[Cell]] = []
        for table in BackupTable.all {
            var columns: [String] = []
            try snapshot.forEachRow(in: table) { names, values in
                columns = names
                rows.append(values.map(Cell.init))
            }
            try snapshot.forEachRawRow(in: table) { names, cells in
                #expect(names == columns || columns.isEmpty, "\(table.name)")
                raw.append(cells.map(Cell.init))
            }
        }
        return (rows, raw)
    }
}

@Suite struct BackupRawRowTests {
    @Test(arguments: StoreBackend.allCases)
    func rawRowsHoldWhatTheRowsHold(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try BackupRowFixture.load(BackupRowFixture.dataset(guestOwner: profile.guestOwner), into: store)
        let (rows, raw) = try bothReadings(store, guestOwner: profile.guestOwner)
        #expect(rows.count > BackupTable.all.count)
        #expect(raw == rows)
    }

    /// SQLite's raw rows hand over the stored bytes; text that is not valid
    /// UTF-8, or holds a NUL, written by some other tool, must still come out
    /// as the rows give it (cut at the NUL, repaired), so exports do not change.
    @Test func sqliteTextThatIsNotCleanUTF8ComesOutAsTheRowsGiveIt() throws {
        let (store, profile) = try StoreBackend.sqlite.makeStore(profile: "subscriptions")
        try BackupRowFixture.load(BackupRowFixture.rows(of: "u1", base: 1), into: store)
        let sqlite = try #require(store as? SQLiteStore)
        try sqlite.write { db in
            // {"a":"b<FF>c"}, {"n":"<NUL>x"}, {"é":1} and a long ASCII run with one bad byte at its end.
            for (key, hex) in [
                ("bad", "7B2261223A2262FF63227D"), ("nul", "7B226E223A220078227D"), ("accent", "7B22C3A9223A317D"),
                ("tail", String(repeating: "61", count: 40) + "C3"),
            ] {
                try db.execute(
                    sql: """
                        INSERT INTO records (owner_id, collection, key, data, created_at, updated_at)
                        VALUES ('u1', 'subscriptions', ?, CAST(X'\(hex)' AS TEXT), '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')
                        """, arguments: [key])
            }
        }
        let (rows, raw) = try bothReadings(store, guestOwner: profile.guestOwner)
        #expect(raw == rows)
        let texts = raw.flatMap { $0 }.compactMap { cell -> [UInt8]? in
            if case .text(let bytes) = cell { bytes } else { nil }
        }
        #expect(texts.contains(Array("{\"a\":\"b\u{FFFD}c\"}".utf8)), "invalid UTF-8 repaired")
        #expect(texts.contains(Array("{\"n\":\"".utf8)), "cut at the NUL")
        #expect(texts.contains(Array("{\"é\":1}".utf8)))
    }
}

/// Texts COPY's text format must escape, or that look like its escapes, and
/// texts around them: each must come out of PostgreSQL's COPY stream as the
/// bytes it went in as.
private let copyTexts = [
    "tab\there", "new\nline", "cr\rlf\r\n", "back\\slash \\\\ two", "\\N", "\\", "ends with \\", "\\x41\\101\\t",
    "\u{8}\u{c}\u{b}\u{1}\u{1f}\u{7f}", "é ü 漢字 🎉 \u{2028}", "", " ", "NULL", "\t", "\n\\N\t", "\\.",
    String(repeating: "long \t\\ run ", count: 2_000),
]

/// Rows of one user whose values cross every rule of COPY's text format: the
/// texts above in records and events, NULLs, empty texts, integers at the
/// ends of 64 bits, reals at the ends of a double's range.
private func copyRows() -> [(BackupTable, BackupRowFixture.Row)] {
    let records = BackupTable.named("records")!
    let events = BackupTable.named("events")!
    let usage = BackupTable.named("meter_usage")!
    var rows: [(BackupTable, BackupRowFixture.Row)] = [(BackupTable.all[0], BackupRowFixture.user("u\t1\\é"))]
    let owner = CellValue.text("u\t1\\é")
    for (index, text) in copyTexts.enumerated() {
        // Keys in byte order, so PostgreSQL's key order is SQLite's insertion order.
        rows.append(
            (
                records,
                [
                    "owner_id": owner, "collection": .text("c\\\t"), "key": .text(String(format: "k%02d", index)),
                    "data": .text(text), "created_at": .text(text), "updated_at": .text(""),
                ]
            ))
        rows.append(
            (
                events,
                [
                    "id": .integer(Int64(index + 1)), "user_id": owner, "action": .text(text), "at": .text("t"),
                    "count": .integer(index % 2 == 0 ? Int64.max : Int64.min),
                    "idempotency_key": index % 3 == 0 ? .null : .text("key \(index) \(text)"),
                    "properties": index % 4 == 0 ? .null : .text(text),
                ]
            ))
    }
    for (index, amount) in [0.1, 1e300, -2.5e-300, Double.leastNonzeroMagnitude, 123_456_789.125, 1.5].enumerated() {
        rows.append(
            (
                usage,
                [
                    "id": .integer(Int64.max - 10 + Int64(index)), "user_id": owner, "meter": .text("m\n"),
                    "amount": .real(amount), "at": .text("\\N"), "idempotency_key": index == 0 ? .text("") : .null,
                ]
            ))
    }
    return rows
}

@Suite struct PostgresCopyRowTests {
    /// PostgreSQL's export reads COPY's text format and decodes it by hand:
    /// its cells are the cursor's (the query's text values), and its
    /// archives, whole-store and per-user, are SQLite's byte for byte.
    @Test func copyRowsAreTheQueryRowsAndTheArchivesAreSQLites() throws {
        let (postgres, profile) = try StoreBackend.postgres.makeStore(profile: "subscriptions")
        let (sqlite, _) = try StoreBackend.sqlite.makeStore(profile: "subscriptions")
        let rows = copyRows() + [BackupRowFixture.guestOwnerRecord(profile.guestOwner)]
        try BackupRowFixture.load(rows, into: postgres)
        try BackupRowFixture.load(rows, into: sqlite)

        let (pgRows, pgRaw) = try bothReadings(postgres, guestOwner: profile.guestOwner)
        #expect(pgRows.count == rows.count)
        #expect(pgRaw == pgRows)
        #expect(pgRaw == (try bothReadings(sqlite, guestOwner: profile.guestOwner)).raw)

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("guestmode-copy-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        for selection in [BackupSelection.all, .users(["u\t1\\é"])] {
            var archives: [Data] = []
            for (name, store) in [("postgres", postgres), ("sqlite", sqlite)] {
                let path = directory.appendingPathComponent("\(name).tar.zst").path
                let summary = try GuestMode(store: store, location: name).exportBackup(
                    selection, to: path, format: .tarZstd, now: day(3), toolVersion: "test")
                #expect(summary.tables["records"] == copyTexts.count + (selection == .all ? 1 : 0))
                archives.append(try Data(contentsOf: URL(fileURLWithPath: path)))
            }
            #expect(archives[0] == archives[1], "\(selection)")
        }
    }

    /// The server ending the session while the rows stream (here at the
    /// export's first progress report, 10,000 rows in, with 40 MB of records
    /// still to come) fails the export as a lost connection does today, and
    /// leaves no archive, finished or partial.
    @Test func aSessionEndedMidStreamFailsTheExportAndLeavesNoArchive() throws {
        let (store, _) = try StoreBackend.postgres.makeStore(profile: "subscriptions")
        let postgres = try #require(store as? PostgresStore)
        let owner = CellValue.text("u1")
        let events = BackupTable.named("events")!
        let records = BackupTable.named("records")!
        let big = String(repeating: "x\t", count: 50_000)
        try BackupRowFixture.load(
            [(BackupTable.all[0], BackupRowFixture.user("u1"))]
                + (1...10_500).map { _ in (events, ["user_id": owner, "action": .text("a"), "at": .text("t")]) }
                + (0..<400).map {
                    (
                        records,
                        [
                            "owner_id": owner, "collection": .text("c"), "key": .text("k\($0)"), "data": .text(big),
                            "created_at": .text("t"), "updated_at": .text("t"),
                        ]
                    )
                }, into: store)
        let uri = try #require(ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"])
        let other = try PostgresStore.open(uri: uri, schema: postgres.schema)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("guestmode-cut-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("all.tar.zst").path
        var ended = 0
        let failure = #expect(throws: GuestModeError.self) {
            try GuestMode(store: store, location: "postgres").exportBackup(
                .all, to: path, format: .tarZstd, now: day(3), toolVersion: "test",
                progress: { written, _ in
                    guard written > 0, ended == 0 else { return }
                    // The export's session: the one reading this schema's events (the test's own schema).
                    ended =
                        (try? other.read { connection in
                            try connection.execute(
                                """
                                SELECT pg_terminate_backend(pid) AS ended FROM pg_locks
                                WHERE relation = 'events'::regclass AND pid <> pg_backend_pid()
                                """
                            ).count
                        }) ?? 0
                })
        }
        #expect(ended == 1)
        #expect(failure?.code == .storeBusy, "\(String(describing: failure))")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
    }
}
