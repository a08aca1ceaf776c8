import Foundation
import GRDB

/// How a merge settles two records under one key.
public enum MergePolicy: String, Codable, Sendable, CaseIterable {
    /// The guest's record replaces the account's.
    case keepGuest = "keep-guest"
    /// The account's record stays; the guest's is archived.
    case keepAccount = "keep-account"
    /// Both where the collection allows (`on_merge_conflict: keep-both`),
    /// else the newest wins.
    case union
}

public struct RecordConflict: Codable, Sendable, Equatable {
    public enum Resolution: String, Codable, Sendable {
        case keptGuest = "kept-guest"
        case keptAccount = "kept-account"
        case keptBoth = "kept-both"
    }

    public var collection: String
    public var key: String
    public var guestUpdatedAt: Date
    public var accountUpdatedAt: Date
    public var resolution: Resolution
    /// With keptBoth, the key the guest's record moved to.
    public var guestKeyAfter: String?
    /// The losing record's JSON, also kept in the store's conflict archive.
    public var archivedData: String?
}

/// Moving one user's data into another's: the building blocks shared by
/// `migrate` (step by step, journaled) and `merge` (all at once).
struct Transfer {
    let profile: Profile
    let store: SQLiteStore
    let source: String
    let target: String
    let now: Date
    var journalID: Int64?

    /// Counters, events, usage, plans, prompt history, experiments: what a
    /// user did rather than what it stored. Returns the rows moved.
    func moveActivity(_ db: Database) throws -> Int {
        var moved = 0
        let suffix = "@" + source
        // Idempotency keys stay unique per user: a key both users used is
        // kept on the guest's row under a suffix, so nothing is dropped.
        try db.execute(
            sql: """
                UPDATE events SET idempotency_key = idempotency_key || ?
                WHERE user_id = ? AND idempotency_key IN (SELECT idempotency_key FROM events WHERE user_id = ?)
                """,
            arguments: [suffix, source, target])
        try db.execute(sql: "UPDATE events SET user_id = ? WHERE user_id = ?", arguments: [target, source])
        moved += db.changesCount
        try db.execute(
            sql: """
                INSERT INTO counters (user_id, action, total)
                SELECT ?, action, total FROM counters WHERE user_id = ?
                ON CONFLICT(user_id, action) DO UPDATE SET total = total + excluded.total
                """,
            arguments: [target, source])
        moved += db.changesCount
        try db.execute(sql: "DELETE FROM counters WHERE user_id = ?", arguments: [source])
        try db.execute(
            sql: """
                UPDATE meter_usage SET idempotency_key = idempotency_key || ?
                WHERE user_id = ? AND idempotency_key IN
                    (SELECT idempotency_key FROM meter_usage m WHERE m.user_id = ? AND m.meter = meter_usage.meter)
                """,
            arguments: [suffix, source, target])
        try db.execute(sql: "UPDATE meter_usage SET user_id = ? WHERE user_id = ?", arguments: [target, source])
        moved += db.changesCount
        try db.execute(
            sql: """
                INSERT INTO meter_warnings (user_id, meter, period_start, percent, level, fired_at)
                SELECT ?, meter, period_start, percent, level, fired_at FROM meter_warnings WHERE user_id = ?
                ON CONFLICT DO NOTHING
                """,
            arguments: [target, source])
        moved += db.changesCount
        try db.execute(sql: "DELETE FROM meter_warnings WHERE user_id = ?", arguments: [source])
        for table in ["plans", "prompt_outcomes"] {
            try db.execute(sql: "UPDATE \(table) SET user_id = ? WHERE user_id = ?", arguments: [target, source])
            moved += db.changesCount
        }
        // The account's own assignment and flags win: they are what it has seen.
        for (table, columns) in [("experiment_assignments", "experiment, variant, assigned_at"), ("user_flags", "flag, set_at")] {
            try db.execute(
                sql: "INSERT INTO \(table) (user_id, \(columns)) SELECT ?, \(columns) FROM \(table) WHERE user_id = ? ON CONFLICT DO NOTHING",
                arguments: [target, source])
            moved += db.changesCount
            try db.execute(sql: "DELETE FROM \(table) WHERE user_id = ?", arguments: [source])
        }
        // The person was first seen as the guest.
        try db.execute(
            sql: """
                UPDATE users SET
                    created_at = min(created_at, (SELECT created_at FROM users WHERE id = ?)),
                    last_seen_at = max(last_seen_at, (SELECT last_seen_at FROM users WHERE id = ?))
                WHERE id = ?
                """,
            arguments: [source, source, target])
        return moved
    }

    /// The guest's records of `collections` (all when nil) that share a key
    /// with the account's, and how `policy` settles each.
    func conflicts(in collections: [String]?, policy: MergePolicy, _ db: Database) throws -> [RecordConflict] {
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT g.collection, g.key, g.updated_at AS guest_updated, g.data AS guest_data,
                    a.updated_at AS account_updated, a.data AS account_data
                FROM records g JOIN records a ON a.owner_id = ? AND a.collection = g.collection AND a.key = g.key
                WHERE g.owner_id = ? \(collectionFilter(collections, alias: "g"))
                ORDER BY g.collection, g.key
                """,
            arguments: StatementArguments([target, source] + (collections ?? [])))
        return try rows.map { row in
            let collection: String = row["collection"]
            let key: String = row["key"]
            let guestUpdated = Timestamp.parse(row["guest_updated"]) ?? .distantPast
            let accountUpdated = Timestamp.parse(row["account_updated"]) ?? .distantPast
            var conflict = RecordConflict(
                collection: collection, key: key, guestUpdatedAt: guestUpdated, accountUpdatedAt: accountUpdated,
                resolution: .keptAccount, guestKeyAfter: nil, archivedData: nil)
            switch policy {
            case .keepGuest:
                conflict.resolution = .keptGuest
                conflict.archivedData = row["account_data"]
            case .keepAccount:
                conflict.archivedData = row["guest_data"]
            case .union:
                if profile.collection(named: collection)?.onMergeConflict == .keepBoth {
                    conflict.resolution = .keptBoth
                    conflict.guestKeyAfter = try freeKey(for: key, collection: collection, db)
                } else if guestUpdated > accountUpdated {
                    conflict.resolution = .keptGuest
                    conflict.archivedData = row["account_data"]
                } else {
                    conflict.archivedData = row["guest_data"]
                }
            }
            return conflict
        }
    }

    /// Moves the guest's records of `collections` (all when nil), settling
    /// conflicts by `policy`; losers go to the conflict archive.
    func moveRecords(_ collections: [String]?, policy: MergePolicy, _ db: Database) throws -> (moved: Int, conflicts: [RecordConflict]) {
        let conflicts = try self.conflicts(in: collections, policy: policy, db)
        for conflict in conflicts {
            switch conflict.resolution {
            case .keptGuest:
                try archive(owner: target, collection: conflict.collection, key: conflict.key, reason: "lost to the guest's record", db)
                try db.execute(
                    sql: "DELETE FROM records WHERE owner_id = ? AND collection = ? AND key = ?",
                    arguments: [target, conflict.collection, conflict.key])
            case .keptAccount:
                try archive(owner: source, collection: conflict.collection, key: conflict.key, reason: "lost to the account's record", db)
                try db.execute(
                    sql: "DELETE FROM records WHERE owner_id = ? AND collection = ? AND key = ?",
                    arguments: [source, conflict.collection, conflict.key])
            case .keptBoth:
                try db.execute(
                    sql: "UPDATE records SET key = ? WHERE owner_id = ? AND collection = ? AND key = ?",
                    arguments: [conflict.guestKeyAfter, source, conflict.collection, conflict.key])
            }
        }
        try db.execute(
            sql: "UPDATE records SET owner_id = ? WHERE owner_id = ? \(collectionFilter(collections, alias: nil))",
            arguments: StatementArguments([target, source] + (collections ?? [])))
        return (db.changesCount, conflicts)
    }

    /// What is left of the guest once everything has moved: credentials,
    /// queued backups, and the user itself.
    func removeSource(_ db: Database) throws -> Int {
        let leftovers = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM records WHERE owner_id = ?", arguments: [source]) ?? 0
        guard leftovers == 0 else {
            throw GuestModeError(
                .internalFailure, code: "records_left_behind",
                "\(leftovers) records of '\(source)' were not moved; the guest was kept")
        }
        try store.deleteEverything(of: source, db)
        try store.noteChange(of: target, profile: profile, now: now, db)
        return 1
    }

    func recordCounts(_ collections: [String]?, _ db: Database) throws -> Int {
        try Int.fetchOne(
            db, sql: "SELECT COUNT(*) FROM records WHERE owner_id = ? \(collectionFilter(collections, alias: nil))",
            arguments: StatementArguments([source] + (collections ?? []))) ?? 0
    }

    func activityCount(_ db: Database) throws -> Int {
        try ["events", "counters", "meter_usage", "meter_warnings", "plans", "prompt_outcomes", "experiment_assignments", "user_flags"]
            .reduce(0) { total, table in
                total + (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table) WHERE user_id = ?", arguments: [source]) ?? 0)
            }
    }

    /// Keeps a losing record in the account's conflict archive, whichever
    /// side it came from, so it stays with the person and their backups.
    private func archive(owner: String, collection: String, key: String, reason: String, _ db: Database) throws {
        try db.execute(
            sql: """
                INSERT INTO conflict_archive (journal_id, owner_id, collection, key, data, updated_at, reason, archived_at)
                SELECT ?, ?, collection, key, data, updated_at, ?, ? FROM records
                WHERE owner_id = ? AND collection = ? AND key = ?
                """,
            arguments: [journalID, target, "\(reason) (was owned by \(owner))", Timestamp.format(now), owner, collection, key])
    }

    private func freeKey(for key: String, collection: String, _ db: Database) throws -> String {
        var candidate = "\(key)~guest"
        var attempt = 1
        while try Bool.fetchOne(
            db, sql: "SELECT 1 FROM records WHERE owner_id IN (?, ?) AND collection = ? AND key = ?",
            arguments: [source, target, collection, candidate]) == true
        {
            attempt += 1
            candidate = "\(key)~guest\(attempt)"
        }
        return candidate
    }

    private func collectionFilter(_ collections: [String]?, alias: String?) -> String {
        guard let collections else { return "" }
        let column = alias.map { "\($0).collection" } ?? "collection"
        if collections.isEmpty { return "AND 0" }
        return "AND \(column) IN (\(Array(repeating: "?", count: collections.count).joined(separator: ", ")))"
    }
}
