import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteTransaction {
    /// Nothing to take: SQLite's one writer already holds the whole store.
    func lockProfileBinding() throws {}

    func countRecords(in collection: String) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM records WHERE collection = ?", arguments: [collection]) ?? 0
    }

    func renameCollection(_ collection: String, to newName: String) throws {
        try db.execute(sql: "UPDATE records SET collection = ? WHERE collection = ?", arguments: [newName, collection])
    }

    /// Read a row at a time, and stopped at the first that would pass `maximumBytes`.
    func recordPage(
        in collection: String, after position: RecordPosition?, limit: Int, maximumBytes: Int
    ) throws -> [StoredRecord] {
        let rows: RowCursor
        if let position {
            rows = try Row.fetchCursor(
                db,
                sql: """
                    SELECT * FROM records WHERE collection = ? AND (owner_id, key) > (?, ?)
                    ORDER BY owner_id, key LIMIT ?
                    """,
                arguments: [collection, position.owner, position.key, limit])
        } else {
            rows = try Row.fetchCursor(
                db, sql: "SELECT * FROM records WHERE collection = ? ORDER BY owner_id, key LIMIT ?",
                arguments: [collection, limit])
        }
        var page: [StoredRecord] = []
        var bytes = 0
        while let row = try rows.next() {
            let record = try storedRecord(row)
            bytes += record.data.utf8.count
            if !page.isEmpty, bytes > maximumBytes { break }
            page.append(record)
        }
        return page
    }

    func replaceRecordData(_ records: [StoredRecord]) throws {
        let statement = try db.statement(
            "UPDATE records SET data = ? WHERE owner_id = ? AND collection = ? AND key = ?")
        for record in records {
            try statement.execute(arguments: [record.data, record.owner, record.collection, record.key])
        }
    }

    func setBoundProfile(text: String, origin: String, at time: Date) throws {
        for (key, value) in [("profile_text", text), ("profile_origin", origin), ("bound_at", Timestamp.format(time))] {
            try db.execute(
                sql:
                    "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                arguments: [key, value])
        }
    }
}
