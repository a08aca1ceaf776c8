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
            // Counted only when a cap applies, once: a put costs the same whatever the user holds.
            let level = try tier(of: user, profile: profile, now: now, db)
            let used: Int? =
                profile.tier(level).cap(for: collection) == nil
                ? nil
                : try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM records WHERE owner_id = ? AND collection = ?",
                    arguments: [userID, collection]) ?? 0
            let before = profile.collectionLimit(collection, tier: level, used: used)
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
                exists ? before : used.map { profile.collectionLimit(collection, tier: level, used: $0 + 1) } ?? before
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

    public func putRecords(
        profile: Profile, now: Date, onConflict: RecordConflictPolicy,
        _ feed: (_ put: (BulkRecord) throws -> BulkPutOutcome) throws -> Void
    ) throws {
        try write { db in
            try useBulkCache(db)
            let nowText = Timestamp.format(now)
            var tiers: [String: TierLevel] = [:]
            struct Pair: Hashable {
                var user: String
                var collection: String
            }
            // Records held per capped user and collection, counted once each.
            var used: [Pair: Int] = [:]
            let exists = try db.cachedStatement(
                sql: "SELECT 1 FROM records WHERE owner_id = ? AND collection = ? AND key = ?")
            let insert = try db.cachedStatement(
                sql: """
                    INSERT INTO records (owner_id, collection, key, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT(owner_id, collection, key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at
                    """)
            let count = try db.cachedStatement(
                sql: "SELECT COUNT(*) FROM records WHERE owner_id = ? AND collection = ?")
            try feed { record in
                let level: TierLevel
                if let known = tiers[record.user] {
                    level = known
                } else {
                    level = try tier(of: try requireUser(record.user, db), profile: profile, now: now, db)
                    tiers[record.user] = level
                }
                let isReplacement =
                    try Bool.fetchOne(exists, arguments: [record.user, record.collection, record.key]) ?? false
                if isReplacement {
                    switch onConflict {
                    case .fail: return .exists
                    case .skip: return .skipped
                    case .replace: break
                    }
                } else if profile.tier(level).cap(for: record.collection) != nil {
                    let pair = Pair(user: record.user, collection: record.collection)
                    let held: Int
                    if let known = used[pair] {
                        held = known
                    } else {
                        held = try Int.fetchOne(count, arguments: [record.user, record.collection]) ?? 0
                    }
                    let limit = profile.collectionLimit(record.collection, tier: level, used: held)
                    guard limit.admits(isReplacement: false) else { return .refused(limit) }
                    used[pair] = held + 1
                }
                try insert.execute(arguments: [
                    record.user, record.collection, record.key, record.data, nowText, nowText,
                ])
                return isReplacement ? .replaced : .added
            }
            for user in tiers.keys.sorted() {
                try touch(user, at: now, db)
                try noteChange(of: user, profile: profile, now: now, db)
            }
        }
    }

    private func storedRecord(_ row: Row) throws -> StoredRecord {
        StoredRecord(
            owner: try row.decode(forColumn: "owner_id"), collection: try row.decode(forColumn: "collection"),
            key: try row.decode(forColumn: "key"), data: try row.decode(forColumn: "data"),
            createdAt: try row.time("created_at"),
            updatedAt: try row.time("updated_at"))
    }
}
