import Foundation
internal import GRDB
import GuestModeKit

extension ActivityTable {
    /// The table's name and its columns but the user's.
    fileprivate var table: (name: String, columns: String) {
        switch self {
        case .events: ("events", "action, at, count, idempotency_key, properties")
        case .counters: ("counters", "action, total")
        case .meterUsage: ("meter_usage", "meter, amount, at, idempotency_key")
        case .meterWarnings: ("meter_warnings", "meter, period_start, percent, level, fired_at")
        case .meterGrants:
            ("meter_grants", "meter, amount, granted_at, expires_at, revoked_at, reason, idempotency_key")
        case .plans: ("plans", "plan, granted_at, trial_ends_at, ends_at, revoked_at")
        case .promptOutcomes: ("prompt_outcomes", "context, outcome, at")
        case .experimentAssignments: ("experiment_assignments", "experiment, variant, assigned_at")
        case .flags: ("user_flags", "flag, set_at")
        case .storePurchases:
            (
                "store_purchases",
                "source, original_transaction_id, plan, signed_at, transaction_id, environment, granted_at"
            )
        }
    }
}

// MARK: Activity

extension SQLiteTransaction {
    func countActivity(in table: ActivityTable, of userID: String) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table.table.name) WHERE user_id = ?", arguments: [userID])
            ?? 0
    }

    func reassignActivity(in table: ActivityTable, from source: String, to target: String) throws -> Int {
        try db.execute(
            sql: "UPDATE \(table.table.name) SET user_id = ? WHERE user_id = ?", arguments: [target, source])
        return db.changesCount
    }

    func copyActivity(in table: ActivityTable, from source: String, to target: String) throws -> Int {
        let (name, columns) = table.table
        try db.execute(
            sql: """
                INSERT INTO \(name) (user_id, \(columns)) SELECT ?, \(columns) FROM \(name) WHERE user_id = ?
                ON CONFLICT DO NOTHING
                """,
            arguments: [target, source])
        return db.changesCount
    }

    func deleteActivity(in table: ActivityTable, of userID: String) throws {
        try db.execute(sql: "DELETE FROM \(table.table.name) WHERE user_id = ?", arguments: [userID])
    }

    func suffixSharedIdempotencyKeys(
        in table: ActivityTable, of source: String, sharedWith target: String, suffix: String
    ) throws {
        switch table {
        case .events:
            try db.execute(
                sql: """
                    UPDATE events SET idempotency_key = idempotency_key || ?
                    WHERE user_id = ? AND idempotency_key IN (SELECT idempotency_key FROM events WHERE user_id = ?)
                    """,
                arguments: [suffix, source, target])
        case .meterUsage:
            try db.execute(
                sql: """
                    UPDATE meter_usage SET idempotency_key = idempotency_key || ?
                    WHERE user_id = ? AND idempotency_key IN
                        (SELECT idempotency_key FROM meter_usage m WHERE m.user_id = ? AND m.meter = meter_usage.meter)
                    """,
                arguments: [suffix, source, target])
        case .meterGrants:
            try db.execute(
                sql: """
                    UPDATE meter_grants SET idempotency_key = idempotency_key || ?
                    WHERE user_id = ? AND idempotency_key IN (SELECT idempotency_key FROM meter_grants WHERE user_id = ?)
                    """,
                arguments: [suffix, source, target])
        case .counters, .meterWarnings, .plans, .promptOutcomes, .experimentAssignments, .flags, .storePurchases:
            return
        }
    }

    func addCounters(of source: String, to target: String) throws -> Int {
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
        return db.changesCount
    }

    func backdateCreation(of userID: String, to time: Date) throws {
        try db.execute(
            sql: "UPDATE users SET created_at = min(created_at, ?) WHERE id = ?",
            arguments: [Timestamp.format(time), userID])
    }

    func removeUser(_ userID: String) throws {
        try store.deleteEverything(of: userID, db)
    }
}

// MARK: Records

extension SQLiteTransaction {
    func countRecords(owner: String, in collections: [String]?) throws -> Int {
        try Int.fetchOne(
            db, sql: "SELECT COUNT(*) FROM records WHERE owner_id = ? \(collectionFilter(collections, alias: nil))",
            arguments: StatementArguments([owner] + (collections ?? []))) ?? 0
    }

    func sharedRecordKeys(guest: String, account: String, in collections: [String]?) throws -> [SharedRecordKey] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT g.collection, g.key, g.updated_at AS guest_updated, g.data AS guest_data,
                    a.updated_at AS account_updated, a.data AS account_data
                FROM records g JOIN records a ON a.owner_id = ? AND a.collection = g.collection AND a.key = g.key
                WHERE g.owner_id = ? \(collectionFilter(collections, alias: "g"))
                ORDER BY g.collection, g.key
                """,
            arguments: StatementArguments([account, guest] + (collections ?? []))
        ).map { row in
            SharedRecordKey(
                collection: try row.decode(forColumn: "collection"), key: try row.decode(forColumn: "key"),
                guest: RecordVersion(
                    data: try row.decode(forColumn: "guest_data"), updatedAt: try row.time("guest_updated")),
                account: RecordVersion(
                    data: try row.decode(forColumn: "account_data"), updatedAt: try row.time("account_updated")))
        }
    }

    func reassignRecords(from source: String, to target: String, in collections: [String]?) throws -> Int {
        try db.execute(
            sql: "UPDATE records SET owner_id = ? WHERE owner_id = ? \(collectionFilter(collections, alias: nil))",
            arguments: StatementArguments([target, source] + (collections ?? [])))
        return db.changesCount
    }

    func moveRecord(
        owner: String, collection: String, key: String, to newOwner: String, key newKey: String
    ) throws -> Bool {
        try db.execute(
            sql: "UPDATE records SET owner_id = ?, key = ? WHERE owner_id = ? AND collection = ? AND key = ?",
            arguments: [newOwner, newKey, owner, collection, key])
        return db.changesCount == 1
    }

    func recordKeys(owner: String, locking: Bool) throws -> [RecordKey] {
        try Row.fetchAll(
            db, sql: "SELECT collection, key FROM records WHERE owner_id = ? ORDER BY collection, key",
            arguments: [owner]
        ).map { row in
            RecordKey(collection: try row.decode(forColumn: "collection"), key: try row.decode(forColumn: "key"))
        }
    }

    func hasFlag(_ flag: UserFlag, of userID: String) throws -> Bool {
        try Bool.fetchOne(
            db, sql: "SELECT 1 FROM user_flags WHERE user_id = ? AND flag = ?", arguments: [userID, flag.rawValue])
            ?? false
    }

    func setFlag(_ flag: UserFlag, of userID: String, at time: Date) throws {
        try db.execute(
            sql: "INSERT INTO user_flags (user_id, flag, set_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            arguments: [userID, flag.rawValue, Timestamp.format(time)])
    }

    /// The condition on `collections` (none when nil, nothing when empty),
    /// one `?` per collection.
    private func collectionFilter(_ collections: [String]?, alias: String?) -> String {
        guard let collections else { return "" }
        let column = alias.map { "\($0).collection" } ?? "collection"
        if collections.isEmpty { return "AND 0" }
        return "AND \(column) IN (\(Array(repeating: "?", count: collections.count).joined(separator: ", ")))"
    }
}

// MARK: Conflict archive

extension SQLiteTransaction {
    func archiveRecord(
        owner: String, collection: String, key: String, for archiveOwner: String, journalID: Int64?, reason: String,
        at time: Date
    ) throws {
        try db.execute(
            sql: """
                INSERT INTO conflict_archive (journal_id, owner_id, collection, key, data, updated_at, reason, archived_at)
                SELECT ?, ?, collection, key, data, updated_at, ?, ? FROM records
                WHERE owner_id = ? AND collection = ? AND key = ?
                """,
            arguments: [journalID, archiveOwner, reason, Timestamp.format(time), owner, collection, key])
    }

    func archivedConflicts(owner: String?) throws -> [ArchivedConflict] {
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

    func archivedConflict(id: Int64, locking: Bool) throws -> ArchivedConflict? {
        try Row.fetchOne(db, sql: "SELECT * FROM conflict_archive WHERE id = ?", arguments: [id]).map(archivedConflict)
    }

    func deleteArchivedConflict(id: Int64) throws {
        try db.execute(sql: "DELETE FROM conflict_archive WHERE id = ?", arguments: [id])
    }

    private func archivedConflict(_ row: Row) throws -> ArchivedConflict {
        ArchivedConflict(
            id: try row.decode(forColumn: "id"), userID: try row.decode(forColumn: "owner_id"),
            journalID: try row.decode(forColumn: "journal_id"), collection: try row.decode(forColumn: "collection"),
            key: try row.decode(forColumn: "key"), data: try row.decode(forColumn: "data"),
            updatedAt: try row.time("updated_at"), reason: try row.decode(forColumn: "reason"),
            archivedAt: try row.time("archived_at"))
    }
}

// MARK: Journals

extension SQLiteTransaction {
    func newestJournal(
        kind: JournalKind, from source: String, into target: String, statusOtherThan status: JournalStatus
    ) throws -> Int64? {
        try Int64.fetchOne(
            db,
            sql: """
                SELECT id FROM migration_journals WHERE kind = ? AND source_id = ? AND target_id = ?
                AND status != ? ORDER BY id DESC LIMIT 1
                """,
            arguments: [kind.rawValue, source, target, status.rawValue])
    }

    func createJournal(
        kind: JournalKind, source: String, target: String, status: JournalStatus, backupPath: String?,
        startedAt: Date, finishedAt: Date?, steps: [String], stepStatus: JournalStepStatus
    ) throws -> Int64 {
        try db.execute(
            sql: """
                INSERT INTO migration_journals (kind, source_id, target_id, status, backup_path, started_at, finished_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                kind.rawValue, source, target, status.rawValue, backupPath, Timestamp.format(startedAt),
                finishedAt.map(Timestamp.format),
            ])
        let id = db.lastInsertedRowID
        for (index, name) in steps.enumerated() {
            try db.execute(
                sql: "INSERT INTO migration_steps (journal_id, position, name, status) VALUES (?, ?, ?, ?)",
                arguments: [id, index + 1, name, stepStatus.rawValue])
        }
        return id
    }

    func migrationJournal(id: Int64, locking: Bool) throws -> MigrationJournal? {
        try journals(where: "id = ?", arguments: [id]).first
    }

    func migrationJournals(involving user: String?) throws -> [MigrationJournal] {
        guard let user else { return try journals(where: "1", arguments: []) }
        return try journals(where: "source_id = ? OR target_id = ?", arguments: [user, user])
    }

    func setJournalStatus(_ id: Int64, to status: JournalStatus, error: String?) throws {
        try db.execute(
            sql: "UPDATE migration_journals SET status = ?, error = ? WHERE id = ?",
            arguments: [status.rawValue, error, id])
    }

    func setJournalFinishTime(_ id: Int64, to time: Date) throws {
        try db.execute(
            sql: "UPDATE migration_journals SET finished_at = ? WHERE id = ?", arguments: [Timestamp.format(time), id])
    }

    func setJournalStep(
        journalID: Int64, position: Int, to status: JournalStepStatus, rows: Int, at time: Date
    ) throws {
        try db.execute(
            sql: """
                UPDATE migration_steps SET status = ?, rows = ?, finished_at = ?
                WHERE journal_id = ? AND position = ?
                """,
            arguments: [status.rawValue, rows, Timestamp.format(time), journalID, position])
    }

    func countJournalResume(_ id: Int64) throws {
        try db.execute(sql: "UPDATE migration_journals SET resumes = resumes + 1 WHERE id = ?", arguments: [id])
    }

    func countStepFailure(journalID: Int64, position: Int) throws {
        try db.execute(
            sql: "UPDATE migration_steps SET failures = failures + 1 WHERE journal_id = ? AND position = ?",
            arguments: [journalID, position])
    }

    private func journals(where clause: String, arguments: StatementArguments) throws -> [MigrationJournal] {
        try Row.fetchAll(db, sql: "SELECT * FROM migration_journals WHERE \(clause) ORDER BY id", arguments: arguments)
            .map { row in
                let id: Int64 = try row.decode(forColumn: "id")
                let steps = try Row.fetchAll(
                    db, sql: "SELECT * FROM migration_steps WHERE journal_id = ? ORDER BY position", arguments: [id]
                ).map { step in
                    JournalStep(
                        position: try step.decode(forColumn: "position"), name: try step.decode(forColumn: "name"),
                        status: try step.decode("status", as: JournalStepStatus.self),
                        rows: try step.decode(forColumn: "rows"),
                        finishedAt: try step.optionalTime("finished_at"))
                }
                return MigrationJournal(
                    id: id, kind: try row.decode("kind", as: JournalKind.self),
                    source: try row.decode(forColumn: "source_id"),
                    target: try row.decode(forColumn: "target_id"),
                    status: try row.decode("status", as: JournalStatus.self),
                    backupPath: try row.decode(forColumn: "backup_path"), startedAt: try row.time("started_at"),
                    finishedAt: try row.optionalTime("finished_at"), error: try row.decode(forColumn: "error"),
                    steps: steps)
            }
    }
}
