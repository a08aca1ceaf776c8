import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteTransaction {
    /// Nothing to take: SQLite's one writer already holds the whole store.
    func lockProfileBinding() throws {}

    func countRecords(in collection: String) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM records WHERE collection = ?", arguments: [collection]) ?? 0
    }

    func countRecords(in collection: String, havingFields fields: [String]) throws -> Int {
        let conditions = fields.map { _ in " AND json_type(data, ?) IS NOT NULL" }.joined()
        return try Int.fetchOne(
            db, sql: "SELECT COUNT(*) FROM records WHERE collection = ?\(conditions)",
            arguments: StatementArguments([collection] + fields.map { "$.\($0)" })) ?? 0
    }

    func renameCollection(_ collection: String, to newName: String) throws {
        try db.execute(sql: "UPDATE records SET collection = ? WHERE collection = ?", arguments: [newName, collection])
    }

    func renameField(_ field: String, to newName: String, in collection: String) throws {
        try db.execute(
            sql: """
                UPDATE records SET data = json_remove(json_set(data, ?, json(data -> ?)), ?)
                WHERE collection = ? AND json_type(data, ?) IS NOT NULL
                """,
            arguments: ["$.\(newName)", "$.\(field)", "$.\(field)", collection, "$.\(field)"])
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
