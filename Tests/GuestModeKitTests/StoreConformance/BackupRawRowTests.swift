import Foundation
import GRDB
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
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
