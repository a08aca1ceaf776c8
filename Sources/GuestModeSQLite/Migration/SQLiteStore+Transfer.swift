import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteStore: TransferStore {
    public func checkTransfer(of guest: String, into account: String) throws {
        try read { db in _ = try checkTransfer(of: guest, into: account, db) }
    }

    public func previewTransfer(
        of guest: String, into account: String, steps: [TransferStep], profile: Profile
    ) throws
        -> [TransferStepPreview]
    {
        try read { db in
            _ = try checkTransfer(of: guest, into: account, db)
            let transfer = SQLiteTransfer(
                store: self, profile: profile, source: guest, target: account, now: .distantPast)
            return try steps.map { step in
                var rows = 0
                if step.movesActivity { rows += try transfer.activityCount(db) }
                rows += try transfer.recordCount(step.collections, db)
                if step.removesGuest { rows += 1 }
                return TransferStepPreview(
                    rows: rows, conflicts: try transfer.conflicts(in: step.collections, policy: .union, db))
            }
        }
    }

    public func mergeGuest(
        _ guest: String, into account: String, policy: MergePolicy, dryRun: Bool, profile: Profile, now: Date
    ) throws -> MergeReport {
        let work = { (db: Database) throws -> MergeReport in
            let target = try self.checkTransfer(of: guest, into: account, db)
            var transfer = SQLiteTransfer(store: self, profile: profile, source: guest, target: account, now: now)
            if dryRun {
                let conflicts = try transfer.conflicts(in: nil, policy: policy, db)
                var overCap: [CollectionLimit] = []
                for collection in profile.collections {
                    var limit = try self.collectionLimit(
                        of: target, collection: collection.name, profile: profile, now: now, db)
                    let incoming = try transfer.recordCount([collection.name], db)
                    let merged = conflicts.filter { $0.collection == collection.name && $0.resolution != .keptBoth }
                        .count
                    limit.used = (limit.used ?? 0) + incoming - merged
                    if limit.isOverCap { overCap.append(limit) }
                }
                return MergeReport(
                    guest: guest, account: account, policy: policy,
                    // As the merge counts them: a guest record that loses to the account's is archived, not moved.
                    recordsMoved: try transfer.recordCount(nil, db)
                        - conflicts.filter { $0.resolution == .keptAccount }.count,
                    activityMoved: try transfer.activityCount(db), conflicts: conflicts, overCap: overCap,
                    isDryRun: true,
                    journalID: nil)
            }
            try db.execute(
                sql: """
                    INSERT INTO migration_journals (kind, source_id, target_id, status, started_at, finished_at)
                    VALUES ('merge', ?, ?, 'done', ?, ?)
                    """,
                arguments: [guest, account, Timestamp.format(now), Timestamp.format(now)])
            transfer.journalID = db.lastInsertedRowID
            let activity = try transfer.moveActivity(db)
            let records = try transfer.moveRecords(nil, policy: policy, db)
            _ = try transfer.removeSource(db)
            let overCap = try self.overCapLimits(of: try self.requireUser(account, db), profile: profile, now: now, db)
            return MergeReport(
                guest: guest, account: account, policy: policy, recordsMoved: records.moved, activityMoved: activity,
                conflicts: records.conflicts, overCap: overCap, isDryRun: false, journalID: transfer.journalID)
        }
        return try dryRun ? read(work) : writeDurably(work)
    }

    public func adoptOwnerlessRecords(user userID: String, profile: Profile, now: Date) throws -> AdoptReport {
        let owner = profile.guestOwner
        return try writeDurably { db in
            _ = try requireUser(userID, db)
            // Idempotent per record: an adopted record is no longer the guest owner's, so a later run
            // adopts only what appeared since. The flag only says the user adopted before.
            let adoptedBefore =
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM user_flags WHERE user_id = ? AND flag = 'adopted'", arguments: [userID])
                == true
            var moved: [String: Int] = [:]
            var collisions: [AdoptReport.Collision] = []
            let rows = try Row.fetchAll(
                db, sql: "SELECT collection, key FROM records WHERE owner_id = ? ORDER BY collection, key",
                arguments: [owner])
            for row in rows {
                let collection: String = try row.decode(forColumn: "collection")
                let key: String = try row.decode(forColumn: "key")
                let keyAfter = profile.adoptedKey(key, collection: collection, user: userID)
                if try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM records WHERE owner_id = ? AND collection = ? AND key = ?",
                    arguments: [userID, collection, keyAfter]) == true
                {
                    collisions.append(AdoptReport.Collision(collection: collection, key: key, keyAfter: keyAfter))
                    continue
                }
                try db.execute(
                    sql: "UPDATE records SET owner_id = ?, key = ? WHERE owner_id = ? AND collection = ? AND key = ?",
                    arguments: [userID, keyAfter, owner, collection, key])
                if db.changesCount == 1 { moved[collection, default: 0] += 1 }
            }
            if !moved.isEmpty {
                if !adoptedBefore {
                    try db.execute(
                        sql: "INSERT INTO user_flags (user_id, flag, set_at) VALUES (?, 'adopted', ?)",
                        arguments: [userID, Timestamp.format(now)])
                }
                try noteChange(of: userID, profile: profile, now: now, db)
            }
            // A run that adopts nothing writes nothing: the store is left byte for byte as it was.
            return (
                AdoptReport(user: userID, moved: moved, collisions: collisions, wasAlreadyAdopted: adoptedBefore),
                !moved.isEmpty
            )
        }
    }

    /// Both users as they are in this transaction, the pair refused unless
    /// the engine's rule allows it. Returns the account.
    @discardableResult
    func checkTransfer(of guest: String, into account: String, _ db: Database) throws -> User {
        let source = try requireUser(guest, db)
        let target = try requireUser(account, db)
        try source.checkCanMove(into: target)
        return target
    }

    func overCapLimits(of user: User, profile: Profile, now: Date, _ db: Database) throws -> [CollectionLimit] {
        try profile.collections.map {
            try collectionLimit(of: user, collection: $0.name, profile: profile, now: now, db)
        }
        .filter(\.isOverCap)
    }
}

/// Moving one user's data into another's inside a transaction: the steps
/// shared by a journaled migration step and a merge.
struct SQLiteTransfer {
    let store: SQLiteStore
    let profile: Profile
    let source: String
    let target: String
    let now: Date
    var journalID: Int64?

    /// Counters, events, usage, plans, prompt history, experiments: what a
    /// user did rather than what it stored. Returns the rows moved.
    func moveActivity(_ db: Database) throws -> Int {
        // The guest must still be there: a concurrent run that already moved it is a conflict, and a
        // missing row must never null the account's times.
        guard
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM users WHERE id = ?)", arguments: [source]) == true
        else {
            throw GuestModeError(
                .conflict, code: .guestAlreadyMoved,
                "the guest '\(source)' is no longer in the store: another run has already moved or removed it")
        }
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
        // The sums are checked first: SQLite would turn an overflowing one into a REAL.
        if let overflowing = try Row.fetchOne(
            db,
            sql: """
                SELECT t.action, CAST(t.total AS TEXT) AS total, s.total AS adding FROM counters t
                JOIN counters s ON s.user_id = ? AND s.action = t.action
                WHERE t.user_id = ? AND NOT (typeof(t.total) = 'integer' AND typeof(s.total) = 'integer'
                    AND t.total >= 0 AND s.total >= 0 AND t.total <= \(Bounds.maximumCounterTotal) - s.total)
                ORDER BY t.action LIMIT 1
                """,
            arguments: [source, target])
        {
            throw Bounds.counterOverflow(
                action: try overflowing.decode(forColumn: "action"), user: target,
                total: try overflowing.decode(forColumn: "total") as String? ?? "?",
                adding: (try? overflowing.decode(forColumn: "adding") as Int64?) ?? 0)
        }
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
        for (table, columns) in [
            ("experiment_assignments", "experiment, variant, assigned_at"), ("user_flags", "flag, set_at"),
        ] {
            try db.execute(
                sql:
                    "INSERT INTO \(table) (user_id, \(columns)) SELECT ?, \(columns) FROM \(table) WHERE user_id = ? ON CONFLICT DO NOTHING",
                arguments: [target, source])
            moved += db.changesCount
            try db.execute(sql: "DELETE FROM \(table) WHERE user_id = ?", arguments: [source])
        }
        // The person was first seen as the guest.
        try db.execute(
            sql: """
                UPDATE users SET
                    created_at = min(created_at, coalesce((SELECT created_at FROM users WHERE id = ?), created_at)),
                    last_seen_at = max(last_seen_at, coalesce((SELECT last_seen_at FROM users WHERE id = ?), last_seen_at))
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
            let collection: String = try row.decode(forColumn: "collection")
            let key: String = try row.decode(forColumn: "key")
            return try RecordConflict.settling(
                collection: collection, key: key,
                guest: RecordVersion(
                    data: try row.decode(forColumn: "guest_data"),
                    updatedAt: try row.time("guest_updated")),
                account: RecordVersion(
                    data: try row.decode(forColumn: "account_data"),
                    updatedAt: try row.time("account_updated")),
                policy: policy, rule: profile.collection(named: collection)?.onMergeConflict ?? .newestWins,
                freeKey: { try freeKey(for: key, collection: collection, db) })
        }
    }

    /// Moves the guest's records of `collections` (all when nil), settling
    /// conflicts by `policy`; losers go to the conflict archive.
    func moveRecords(
        _ collections: [String]?, policy: MergePolicy, _ db: Database
    ) throws -> (moved: Int, conflicts: [RecordConflict]) {
        let conflicts = try self.conflicts(in: collections, policy: policy, db)
        try settle(conflicts, db)
        try db.execute(
            sql: "UPDATE records SET owner_id = ? WHERE owner_id = ? \(collectionFilter(collections, alias: nil))",
            arguments: StatementArguments([target, source] + (collections ?? [])))
        return (db.changesCount, conflicts)
    }

    /// Archives each conflict's loser, or moves the guest's record aside
    /// when both are kept; a conflict that keeps both without a key for the
    /// guest's record is refused before anything is written.
    func settle(_ conflicts: [RecordConflict], _ db: Database) throws {
        for conflict in conflicts where conflict.resolution == .keptBoth && conflict.guestKeyAfter == nil {
            throw GuestModeError(
                .internalFailure, code: .noFreeKey,
                "no key was chosen for the guest's '\(conflict.key)' in \(conflict.collection)")
        }
        for conflict in conflicts {
            switch conflict.resolution {
            case .keptGuest:
                try archive(
                    owner: target, collection: conflict.collection, key: conflict.key,
                    reason: "lost to the guest's record", db)
                try db.execute(
                    sql: "DELETE FROM records WHERE owner_id = ? AND collection = ? AND key = ?",
                    arguments: [target, conflict.collection, conflict.key])
            case .keptAccount:
                try archive(
                    owner: source, collection: conflict.collection, key: conflict.key,
                    reason: "lost to the account's record", db)
                try db.execute(
                    sql: "DELETE FROM records WHERE owner_id = ? AND collection = ? AND key = ?",
                    arguments: [source, conflict.collection, conflict.key])
            case .keptBoth:
                try db.execute(
                    sql: "UPDATE records SET key = ? WHERE owner_id = ? AND collection = ? AND key = ?",
                    arguments: [conflict.guestKeyAfter, source, conflict.collection, conflict.key])
            }
        }
    }

    /// What is left of the guest once everything has moved: credentials,
    /// queued backups, and the user itself.
    func removeSource(_ db: Database) throws -> Int {
        let leftovers =
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM records WHERE owner_id = ?", arguments: [source]) ?? 0
        guard leftovers == 0 else {
            throw GuestModeError(
                .internalFailure, code: .recordsLeftBehind,
                "\(leftovers) records of '\(source)' were not moved; the guest was kept")
        }
        try store.deleteEverything(of: source, db)
        try store.noteChange(of: target, profile: profile, now: now, db)
        return 1
    }

    /// The guest's records of `collections` (all when nil).
    func recordCount(_ collections: [String]?, _ db: Database) throws -> Int {
        try Int.fetchOne(
            db, sql: "SELECT COUNT(*) FROM records WHERE owner_id = ? \(collectionFilter(collections, alias: nil))",
            arguments: StatementArguments([source] + (collections ?? []))) ?? 0
    }

    func activityCount(_ db: Database) throws -> Int {
        try [
            "events", "counters", "meter_usage", "meter_warnings", "plans", "prompt_outcomes", "experiment_assignments",
            "user_flags",
        ]
        .reduce(0) { total, table in
            total
                + (try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table) WHERE user_id = ?", arguments: [source])
                    ?? 0)
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
            arguments: [
                journalID, target, "\(reason) (was owned by \(owner))", Timestamp.format(now), owner, collection, key,
            ])
    }

    /// The first of the engine's candidate keys that neither user holds.
    private func freeKey(for key: String, collection: String, _ db: Database) throws -> String {
        for candidate in RecordConflict.keptBothKeys(for: key) {
            let isTaken =
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM records WHERE owner_id IN (?, ?) AND collection = ? AND key = ?",
                    arguments: [source, target, collection, candidate]) == true
            if !isTaken { return candidate }
        }
        // The candidates never run out; this only satisfies the compiler.
        throw GuestModeError(.internalFailure, code: .noFreeKey, "no free key for '\(key)' in \(collection)")
    }

    private func collectionFilter(_ collections: [String]?, alias: String?) -> String {
        guard let collections else { return "" }
        let column = alias.map { "\($0).collection" } ?? "collection"
        if collections.isEmpty { return "AND 0" }
        return "AND \(column) IN (\(Array(repeating: "?", count: collections.count).joined(separator: ", ")))"
    }
}
