import Foundation
import GuestModeKit

extension PostgresTransaction {
    func recordExists(owner: String, collection: String, key: String) throws -> Bool {
        try connection.execute(
            "SELECT 1 FROM records WHERE owner_id = $1 AND collection = $2 AND key = $3",
            [PostgresValue(owner), PostgresValue(collection), PostgresValue(key)]
        ).count > 0
    }

    func countRecords(owner: String, collection: String) throws -> Int {
        let statement = Self.recordCount(of: owner, in: collection)
        return try Self.count(in: connection.execute(statement.sql, statement.parameters))
    }

    /// The statement counting `owner`'s records in `collection`; `count(in:)` reads its answer.
    static func recordCount(of owner: String, in collection: String) -> (sql: String, parameters: [PostgresValue?]) {
        (
            "SELECT count(*) AS n FROM records WHERE owner_id = $1 AND collection = $2",
            [PostgresValue(owner), PostgresValue(collection)]
        )
    }

    static func count(in rows: PostgresRows) throws -> Int { try rows.first?.int("n") ?? 0 }

    func recordCounts(owner: String) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for row in try connection.execute(
            "SELECT collection, count(*) AS n FROM records WHERE owner_id = $1 GROUP BY collection",
            [PostgresValue(owner)])
        {
            counts[try row.string("collection")] = try row.int("n")
        }
        return counts
    }

    func upsertRecord(owner: String, collection: String, key: String, data: String, at time: Date) throws {
        try connection.execute(
            """
            INSERT INTO records (owner_id, collection, key, data, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
            ON CONFLICT (owner_id, collection, key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at
            """,
            [
                PostgresValue(owner), PostgresValue(collection), PostgresValue(key), PostgresValue(data),
                PostgresValue(time),
            ])
    }

    func record(owner: String, collection: String, key: String) throws -> StoredRecord? {
        try connection.execute(
            "SELECT * FROM records WHERE owner_id = $1 AND collection = $2 AND key = $3",
            [PostgresValue(owner), PostgresValue(collection), PostgresValue(key)]
        ).first.map(storedRecord)
    }

    /// No row when there is no such user; a row of nulls when the user has no such record.
    func record(
        ofUser userID: String, collection: String, key: String
    ) throws -> (userExists: Bool, record: StoredRecord?) {
        guard
            let row = try connection.execute(
                """
                SELECT records.* FROM users
                LEFT JOIN records ON records.owner_id = users.id AND records.collection = $1 AND records.key = $2
                WHERE users.id = $3
                """,
                [PostgresValue(collection), PostgresValue(key), PostgresValue(userID)]
            ).first
        else { return (false, nil) }
        return (true, try row.optionalString("owner_id") == nil ? nil : storedRecord(row))
    }

    func records(owner: String, collection: String, after: String?, limit: Int?) throws -> [StoredRecord] {
        // A key is never empty, so after '' is every key; a limit of Int.max is none. Keys sort in byte
        // order (`COLLATE "C"`), as SQLite's do.
        try connection.execute(
            "SELECT * FROM records WHERE owner_id = $1 AND collection = $2 AND key > $3 ORDER BY key LIMIT $4",
            [
                PostgresValue(owner), PostgresValue(collection), PostgresValue(after ?? ""),
                PostgresValue(limit ?? Int.max),
            ]
        ).map(storedRecord)
    }

    func deleteRecord(owner: String, collection: String, key: String) throws -> Bool {
        try connection.execute(
            "DELETE FROM records WHERE owner_id = $1 AND collection = $2 AND key = $3",
            [PostgresValue(owner), PostgresValue(collection), PostgresValue(key)]
        ).changes > 0
    }

    /// Shared with the profile upgrade's pages of records.
    func storedRecord(_ row: PostgresRow) throws -> StoredRecord {
        StoredRecord(
            owner: try row.string("owner_id"), collection: try row.string("collection"), key: try row.string("key"),
            data: try row.string("data"), createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"))
    }
}
