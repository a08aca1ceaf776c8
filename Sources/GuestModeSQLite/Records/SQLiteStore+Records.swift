import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteStore: RecordStore {
    public func putRecord(
        owner userID: String, collection: String, key: String, data: String, profile: Profile, now: Date
    ) throws -> PutResult {
        try write { db in
            let user = try requireUser(userID, db)
            let exists =
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM records WHERE owner_id = ? AND collection = ? AND key = ?",
                    arguments: [userID, collection, key]) ?? false
            let before = try collectionLimit(of: user, collection: collection, profile: profile, now: now, db)
            guard before.admits(isReplacement: exists) else {
                return PutResult(outcome: before.outcome, isReplacement: false, limit: before)
            }
            let nowText = Timestamp.format(now)
            try db.execute(
                sql: """
                    INSERT INTO records (owner_id, collection, key, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT(owner_id, collection, key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at
                    """,
                arguments: [userID, collection, key, data, nowText, nowText])
            try touch(userID, at: now, db)
            try noteChange(of: userID, profile: profile, now: now, db)
            let after =
                exists ? before : try collectionLimit(of: user, collection: collection, profile: profile, now: now, db)
            return PutResult(outcome: .allowed, isReplacement: exists, limit: after)
        }
    }

    public func putOwnerlessRecord(
        collection: String, key: String, data: String, profile: Profile, now: Date
    ) throws -> Bool {
        try write { db in
            let owner = profile.guestOwner
            let exists =
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM records WHERE owner_id = ? AND collection = ? AND key = ?",
                    arguments: [owner, collection, key]) ?? false
            let nowText = Timestamp.format(now)
            try db.execute(
                sql: """
                    INSERT INTO records (owner_id, collection, key, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT(owner_id, collection, key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at
                    """,
                arguments: [owner, collection, key, data, nowText, nowText])
            return exists
        }
    }

    public func record(owner userID: String, collection: String, key: String) throws -> StoredRecord? {
        try read { db in
            _ = try requireUser(userID, db)
            return try Row.fetchOne(
                db, sql: "SELECT * FROM records WHERE owner_id = ? AND collection = ? AND key = ?",
                arguments: [userID, collection, key]
            ).map(storedRecord)
        }
    }

    public func records(owner userID: String, collection: String) throws -> [StoredRecord] {
        try read { db in
            _ = try requireUser(userID, db)
            return try Row.fetchAll(
                db, sql: "SELECT * FROM records WHERE owner_id = ? AND collection = ? ORDER BY key",
                arguments: [userID, collection]
            ).map(storedRecord)
        }
    }

    public func deleteRecord(
        owner userID: String, collection: String, key: String, profile: Profile, now: Date
    ) throws
        -> Bool
    {
        try write { db in
            _ = try requireUser(userID, db)
            try db.execute(
                sql: "DELETE FROM records WHERE owner_id = ? AND collection = ? AND key = ?",
                arguments: [userID, collection, key])
            guard db.changesCount > 0 else { return false }
            try touch(userID, at: now, db)
            try noteChange(of: userID, profile: profile, now: now, db)
            return true
        }
    }

    public func collectionLimits(
        of userID: String, collections: [String], profile: Profile, now: Date
    ) throws
        -> [CollectionLimit]
    {
        try read { db in
            let user = try requireUser(userID, db)
            return try collections.map { try collectionLimit(of: user, collection: $0, profile: profile, now: now, db) }
        }
    }

    private func storedRecord(_ row: Row) throws -> StoredRecord {
        StoredRecord(
            owner: try row.decode(forColumn: "owner_id"), collection: try row.decode(forColumn: "collection"),
            key: try row.decode(forColumn: "key"), data: try row.decode(forColumn: "data"),
            createdAt: Timestamp.parse(try row.decode(forColumn: "created_at")) ?? .distantPast,
            updatedAt: Timestamp.parse(try row.decode(forColumn: "updated_at")) ?? .distantPast)
    }
}
