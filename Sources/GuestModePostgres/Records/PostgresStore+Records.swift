import Foundation
import GuestModeKit

/// Records on PostgreSQL, with the behaviour of SQLiteStore's.
///
/// Concurrency: `putRecord` locks the owner's row before counting, so the
/// cap is decided by one writer at a time: at READ COMMITTED each statement
/// after the lock sees every record committed by the writer before, and a
/// guest at its cap never holds more, however many processes race.
extension PostgresStore: RecordStore {
    public func putRecord(
        owner userID: String, collection: String, key: String, data: String, profile: Profile, now: Date
    ) throws -> PutResult {
        try write { connection in
            let user = try requireUser(userID, locking: true, connection)
            let exists =
                try connection.execute(
                    "SELECT 1 FROM records WHERE owner_id = $1 AND collection = $2 AND key = $3",
                    [PostgresValue(userID), PostgresValue(collection), PostgresValue(key)]
                ).count > 0
            // Counted only when a cap applies, once: a put costs the same whatever the user holds.
            let level = try tier(of: user, profile: profile, now: now, connection)
            let used: Int? =
                profile.tier(level).cap(for: collection) == nil
                ? nil
                : try connection.execute(
                    "SELECT count(*) AS n FROM records WHERE owner_id = $1 AND collection = $2",
                    [PostgresValue(userID), PostgresValue(collection)]
                ).first?.int("n") ?? 0
            let before = profile.collectionLimit(collection, tier: level, used: used)
            guard before.admits(isReplacement: exists) else {
                return PutResult(outcome: before.outcome, isReplacement: false, limit: before)
            }
            try connection.execute(
                """
                INSERT INTO records (owner_id, collection, key, data, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
                ON CONFLICT (owner_id, collection, key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at
                """,
                [
                    PostgresValue(userID), PostgresValue(collection), PostgresValue(key), PostgresValue(data),
                    PostgresValue(now),
                ])
            try touch(userID, at: now, connection)
            try noteChange(of: userID, profile: profile, now: now, connection)
            let after =
                exists ? before : used.map { profile.collectionLimit(collection, tier: level, used: $0 + 1) } ?? before
            return PutResult(outcome: .allowed, isReplacement: exists, limit: after)
        }
    }

    public func putOwnerlessRecord(
        collection: String, key: String, data: String, profile: Profile, now: Date
    ) throws -> Bool {
        try write { connection in
            let owner = profile.guestOwner
            let exists =
                try connection.execute(
                    "SELECT 1 FROM records WHERE owner_id = $1 AND collection = $2 AND key = $3",
                    [PostgresValue(owner), PostgresValue(collection), PostgresValue(key)]
                ).count > 0
            try connection.execute(
                """
                INSERT INTO records (owner_id, collection, key, data, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
                ON CONFLICT (owner_id, collection, key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at
                """,
                [
                    PostgresValue(owner), PostgresValue(collection), PostgresValue(key), PostgresValue(data),
                    PostgresValue(now),
                ])
            return exists
        }
    }

    public func record(owner userID: String, collection: String, key: String) throws -> StoredRecord? {
        try read { connection in
            _ = try requireUser(userID, connection)
            return try connection.execute(
                "SELECT * FROM records WHERE owner_id = $1 AND collection = $2 AND key = $3",
                [PostgresValue(userID), PostgresValue(collection), PostgresValue(key)]
            ).first.map(storedRecord)
        }
    }

    public func records(owner userID: String, collection: String) throws -> [StoredRecord] {
        try read { connection in
            _ = try requireUser(userID, connection)
            // COLLATE "C": byte order, as SQLite sorts, whatever the database's collation.
            return try connection.execute(
                "SELECT * FROM records WHERE owner_id = $1 AND collection = $2 ORDER BY key COLLATE \"C\"",
                [PostgresValue(userID), PostgresValue(collection)]
            ).map(storedRecord)
        }
    }

    public func deleteRecord(
        owner userID: String, collection: String, key: String, profile: Profile, now: Date
    ) throws
        -> Bool
    {
        try write { connection in
            _ = try requireUser(userID, connection)
            let deleted = try connection.execute(
                "DELETE FROM records WHERE owner_id = $1 AND collection = $2 AND key = $3",
                [PostgresValue(userID), PostgresValue(collection), PostgresValue(key)]
            ).changes
            guard deleted > 0 else { return false }
            try touch(userID, at: now, connection)
            try noteChange(of: userID, profile: profile, now: now, connection)
            return true
        }
    }

    public func collectionLimits(
        of userID: String, collections: [String], profile: Profile, now: Date
    ) throws
        -> [CollectionLimit]
    {
        try read { connection in
            let user = try requireUser(userID, connection)
            return try collections.map {
                try collectionLimit(of: user, collection: $0, profile: profile, now: now, connection)
            }
        }
    }

    public func putRecords(
        profile: Profile, now: Date, onConflict: RecordConflictPolicy,
        _ feed: (_ put: (BulkRecord) throws -> BulkPutOutcome) throws -> Void
    ) throws {
        try write { connection in
            var tiers: [String: TierLevel] = [:]
            struct Pair: Hashable {
                var user: String
                var collection: String
            }
            // Records held per capped user and collection, counted once each.
            var used: [Pair: Int] = [:]
            try feed { record in
                let level: TierLevel
                if let known = tiers[record.user] {
                    level = known
                } else {
                    // The user's row is locked, as `putRecord` locks it, before its records are counted.
                    let user = try requireUser(record.user, locking: true, connection)
                    level = try tier(of: user, profile: profile, now: now, connection)
                    tiers[record.user] = level
                }
                let isReplacement =
                    try connection.execute(
                        "SELECT 1 FROM records WHERE owner_id = $1 AND collection = $2 AND key = $3",
                        [PostgresValue(record.user), PostgresValue(record.collection), PostgresValue(record.key)]
                    ).count > 0
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
                        held =
                            try connection.execute(
                                "SELECT count(*) AS n FROM records WHERE owner_id = $1 AND collection = $2",
                                [PostgresValue(record.user), PostgresValue(record.collection)]
                            ).first?.int("n") ?? 0
                    }
                    let limit = profile.collectionLimit(record.collection, tier: level, used: held)
                    guard limit.admits(isReplacement: false) else { return .refused(limit) }
                    used[pair] = held + 1
                }
                try connection.execute(
                    """
                    INSERT INTO records (owner_id, collection, key, data, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
                    ON CONFLICT (owner_id, collection, key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at
                    """,
                    [
                        PostgresValue(record.user), PostgresValue(record.collection), PostgresValue(record.key),
                        PostgresValue(record.data), PostgresValue(now),
                    ])
                return isReplacement ? .replaced : .added
            }
            for user in tiers.keys.sorted() {
                try touch(user, at: now, connection)
                try noteChange(of: user, profile: profile, now: now, connection)
            }
        }
    }

    private func storedRecord(_ row: PostgresRow) throws -> StoredRecord {
        StoredRecord(
            owner: try row.string("owner_id"), collection: try row.string("collection"), key: try row.string("key"),
            data: try row.string("data"), createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"))
    }
}
