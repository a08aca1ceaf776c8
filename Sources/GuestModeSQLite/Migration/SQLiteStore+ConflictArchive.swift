import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteStore {
    public func archivedConflicts(owner: String?) throws -> [ArchivedConflict] {
        try read { db in
            if let owner { _ = try requireUser(owner, db) }
            let rows =
                if let owner {
                    try Row.fetchAll(
                        db, sql: "SELECT * FROM conflict_archive WHERE owner_id = ? ORDER BY archived_at, id",
                        arguments: [owner])
                } else {
                    try Row.fetchAll(db, sql: "SELECT * FROM conflict_archive ORDER BY archived_at, id")
                }
            return try rows.map(archivedConflict)
        }
    }

    public func restoreArchivedConflict(
        id: Int64, key: String?, profile: Profile, now: Date
    ) throws -> RestoredConflict {
        try write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM conflict_archive WHERE id = ?", arguments: [id])
            else {
                throw GuestModeError.notFound("no archived conflict with id \(id)", code: .conflictNotFound)
            }
            let conflict = try archivedConflict(row)
            _ = try requireUser(conflict.userId, db)
            func isTaken(_ candidate: String) throws -> Bool {
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM records WHERE owner_id = ? AND collection = ? AND key = ?",
                    arguments: [conflict.userId, conflict.collection, candidate]) == true
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
            let nowText = Timestamp.format(now)
            try db.execute(
                sql: """
                    INSERT INTO records (owner_id, collection, key, data, created_at, updated_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [conflict.userId, conflict.collection, restoredKey, conflict.data, nowText, nowText])
            try db.execute(sql: "DELETE FROM conflict_archive WHERE id = ?", arguments: [id])
            try touch(conflict.userId, at: now, db)
            try noteChange(of: conflict.userId, profile: profile, now: now, db)
            return RestoredConflict(
                id: id, userId: conflict.userId, collection: conflict.collection, key: conflict.key,
                restoredKey: restoredKey)
        }
    }

    private func archivedConflict(_ row: Row) throws -> ArchivedConflict {
        ArchivedConflict(
            id: try row.decode(forColumn: "id"), userId: try row.decode(forColumn: "owner_id"),
            journalId: try row.decode(forColumn: "journal_id"), collection: try row.decode(forColumn: "collection"),
            key: try row.decode(forColumn: "key"), data: try row.decode(forColumn: "data"),
            updatedAt: try row.time("updated_at"), reason: try row.decode(forColumn: "reason"),
            archivedAt: try row.time("archived_at"))
    }
}
