import Foundation
import GuestModeKit

extension PostgresStore {
    public func archivedConflicts(owner: String?) throws -> [ArchivedConflict] {
        try read { connection in
            if let owner { _ = try requireUser(owner, connection) }
            let rows =
                if let owner {
                    try connection.execute(
                        """
                        SELECT * FROM conflict_archive WHERE owner_id = $1 ORDER BY archived_at COLLATE "C", id
                        """, [PostgresValue(owner)])
                } else {
                    try connection.execute(#"SELECT * FROM conflict_archive ORDER BY archived_at COLLATE "C", id"#)
                }
            return try rows.map(archivedConflict)
        }
    }

    public func restoreArchivedConflict(
        id: Int64, key: String?, profile: Profile, now: Date
    ) throws -> RestoredConflict {
        try write { connection in
            guard
                let row = try connection.execute(
                    "SELECT * FROM conflict_archive WHERE id = $1 FOR UPDATE", [PostgresValue(id)]
                ).first
            else {
                throw GuestModeError.notFound("no archived conflict with id \(id)", code: .conflictNotFound)
            }
            let conflict = try archivedConflict(row)
            _ = try requireUser(conflict.userId, locking: true, connection)
            func isTaken(_ candidate: String) throws -> Bool {
                try connection.execute(
                    "SELECT 1 AS present FROM records WHERE owner_id = $1 AND collection = $2 AND key = $3",
                    [PostgresValue(conflict.userId), PostgresValue(conflict.collection), PostgresValue(candidate)]
                ).first != nil
            }
            let restoredKey: String
            if let key {
                if try isTaken(key) {
                    throw GuestModeError.conflict(
                        "user '\(conflict.userId)' already has a record '\(key)' in \(conflict.collection); choose another key",
                        code: .recordKeyTaken)
                }
                restoredKey = key
            } else {
                var found: String?
                for candidate in ArchivedConflict.restoredKeys(for: conflict.key) where try !isTaken(candidate) {
                    found = candidate
                    break
                }
                guard let found else {
                    throw GuestModeError(.internalFailure, code: .internalFailure, "no free key to restore under")
                }
                restoredKey = found
            }
            try connection.execute(
                """
                INSERT INTO records (owner_id, collection, key, data, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
                """,
                [
                    PostgresValue(conflict.userId), PostgresValue(conflict.collection), PostgresValue(restoredKey),
                    PostgresValue(conflict.data), PostgresValue(now),
                ])
            try connection.execute("DELETE FROM conflict_archive WHERE id = $1", [PostgresValue(id)])
            try touch(conflict.userId, at: now, connection)
            try noteChange(of: conflict.userId, profile: profile, now: now, connection)
            return RestoredConflict(
                id: id, userId: conflict.userId, collection: conflict.collection, key: conflict.key,
                restoredKey: restoredKey)
        }
    }

    private func archivedConflict(_ row: PostgresRow) throws -> ArchivedConflict {
        ArchivedConflict(
            id: try row.int64("id"), userId: try row.string("owner_id"), journalId: try row.optionalInt64("journal_id"),
            collection: try row.string("collection"), key: try row.string("key"), data: try row.string("data"),
            updatedAt: try row.date("updated_at"), reason: try row.string("reason"),
            archivedAt: try row.date("archived_at"))
    }
}
