import Foundation
import GuestModeKit

extension PostgresTransaction {
    /// A transaction-scoped advisory lock on this schema's profile binding.
    func lockProfileBinding() throws {
        try connection.execute(
            "SELECT pg_advisory_xact_lock(hashtext($1))", [PostgresValue("guestmode-profile-upgrade:\(store.schema)")])
    }

    func countRecords(in collection: String) throws -> Int {
        try connection.execute(
            "SELECT count(*) AS n FROM records WHERE collection = $1", [PostgresValue(collection)]
        ).first?.int("n") ?? 0
    }

    func renameCollection(_ collection: String, to newName: String) throws {
        try connection.execute(
            "UPDATE records SET collection = $1 WHERE collection = $2",
            [PostgresValue(newName), PostgresValue(collection)])
    }

    /// The page's bytes counted by the server, which sends only the records
    /// within them: a result arrives whole, so a limit kept here would come
    /// after the memory it bounds.
    func recordPage(
        in collection: String, after position: RecordPosition?, limit: Int, maximumBytes: Int
    ) throws -> [StoredRecord] {
        let after = position == nil ? "" : "AND (owner_id, key) > ($4, $5)"
        var parameters = [PostgresValue(collection), PostgresValue(limit), PostgresValue(maximumBytes)]
        if let position { parameters += [PostgresValue(position.owner), PostgresValue(position.key)] }
        return try connection.execute(
            """
            SELECT owner_id, collection, key, data, created_at, updated_at FROM (
                SELECT *, row_number() OVER running AS place, sum(octet_length(data)) OVER running AS through
                FROM (
                    SELECT * FROM records WHERE collection = $1 \(after) ORDER BY owner_id, key LIMIT $2
                ) page
                WINDOW running AS (ORDER BY owner_id, key ROWS UNBOUNDED PRECEDING)
            ) sized
            WHERE place = 1 OR through <= $3
            ORDER BY owner_id, key
            """, parameters
        ).map(storedRecord)
    }

    /// One statement for the whole page: a round trip per record would be
    /// most of renaming a large collection.
    func replaceRecordData(_ records: [StoredRecord]) throws {
        guard !records.isEmpty else { return }
        try connection.execute(
            """
            UPDATE records r SET data = v.data
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS v (owner_id, collection, key, data)
            WHERE r.owner_id = v.owner_id AND r.collection = v.collection AND r.key = v.key
            """,
            [
                PostgresValue.textArray(records.map(\.owner)), PostgresValue.textArray(records.map(\.collection)),
                PostgresValue.textArray(records.map(\.key)), PostgresValue.textArray(records.map(\.data)),
            ])
    }

    func setBoundProfile(text: String, origin: String, at time: Date) throws {
        for (key, value) in [("profile_text", text), ("profile_origin", origin), ("bound_at", Timestamp.format(time))] {
            try connection.execute(
                "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [PostgresValue(key), PostgresValue(value)])
        }
    }
}
