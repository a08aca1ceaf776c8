import Foundation
internal import GRDB
import GuestModeKit

// Cached statements: a bulk load runs these once per record.
extension SQLiteTransaction {
    func recordExists(owner: String, collection: String, key: String) throws -> Bool {
        try Bool.fetchOne(
            db.statement("SELECT 1 FROM records WHERE owner_id = ? AND collection = ? AND key = ?"),
            arguments: [owner, collection, key]) ?? false
    }

    func countRecords(owner: String, collection: String) throws -> Int {
        try remembered("countRecords", owner, collection) {
            try readOne(
                db.statement("SELECT COUNT(*) AS n FROM records WHERE owner_id = ? AND collection = ?"),
                arguments: [owner, collection], { row in try row.decode(Int.self, forColumn: "n") }) ?? 0
        }
    }

    func recordCounts(owner: String) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try Row.fetchAll(
            db.statement(
                "SELECT collection, COUNT(*) AS n FROM records WHERE owner_id = ? GROUP BY collection"),
            arguments: [owner])
        {
            counts[try row.decode(forColumn: "collection")] = try row.decode(forColumn: "n")
        }
        return counts
    }

    func upsertRecord(owner: String, collection: String, key: String, data: String, at time: Date) throws {
        let timeText = Timestamp.format(time)
        try db.statement(
            """
            INSERT INTO records (owner_id, collection, key, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT(owner_id, collection, key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at
            """
        ).execute(arguments: [owner, collection, key, data, timeText, timeText])
    }

    func record(owner: String, collection: String, key: String) throws -> StoredRecord? {
        try readOne(
            db.statement("SELECT * FROM records WHERE owner_id = ? AND collection = ? AND key = ?"),
            arguments: [owner, collection, key], storedRecord)
    }

    /// No row when there is no such user; a row of nulls when the user has no such record.
    func record(
        ofUser userID: String, collection: String, key: String
    ) throws -> (userExists: Bool, record: StoredRecord?) {
        try remembered("recordOfUser", userID, collection, key, cost: { 128 + ($0.record?.data.utf8.count ?? 0) }) {
            try readRecord(ofUser: userID, collection: collection, key: key)
        }
    }

    private func readRecord(
        ofUser userID: String, collection: String, key: String
    ) throws -> (userExists: Bool, record: StoredRecord?) {
        let found = try readOne(
            db.statement(
                """
                SELECT records.* FROM users
                LEFT JOIN records ON records.owner_id = users.id AND records.collection = ? AND records.key = ?
                WHERE users.id = ?
                """),
            arguments: [collection, key, userID]
        ) { row in try (row.decode(forColumn: "owner_id") as String?) == nil ? nil : storedRecord(row) }
        guard let found else { return (false, nil) }
        return (true, found)
    }

    func records(owner: String, collection: String, after: String?, limit: Int?) throws -> [StoredRecord] {
        // A key is never empty, so after '' is every key; a limit of Int.max is none.
        try Row.fetchAll(
            db.statement(
                "SELECT * FROM records WHERE owner_id = ? AND collection = ? AND key > ? ORDER BY key LIMIT ?"),
            arguments: [owner, collection, after ?? "", limit ?? Int.max]
        ).map(storedRecord)
    }

    func deleteRecord(owner: String, collection: String, key: String) throws -> Bool {
        try db.execute(
            sql: "DELETE FROM records WHERE owner_id = ? AND collection = ? AND key = ?",
            arguments: [owner, collection, key])
        return db.changesCount > 0
    }

    /// Shared with the profile upgrade's pages of records.
    func storedRecord(_ row: any StoredRow) throws -> StoredRecord {
        StoredRecord(
            owner: try row.decode(forColumn: "owner_id"), collection: try row.decode(forColumn: "collection"),
            key: try row.decode(forColumn: "key"), data: try row.decode(forColumn: "data"),
            createdAt: try row.time("created_at"),
            updatedAt: try row.time("updated_at"))
    }
}
