import Foundation
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

extension PostgresTransaction {
    func countActivity(in table: ActivityTable, of userID: String) throws -> Int {
        try connection.execute(
            "SELECT count(*) AS n FROM \(table.table.name) WHERE user_id = $1", [PostgresValue(userID)]
        ).first?.int("n") ?? 0
    }

    func reassignActivity(in table: ActivityTable, from source: String, to target: String) throws -> Int {
        try connection.execute(
            "UPDATE \(table.table.name) SET user_id = $1 WHERE user_id = $2",
            [PostgresValue(target), PostgresValue(source)]
        ).changes
    }

    func copyActivity(in table: ActivityTable, from source: String, to target: String) throws -> Int {
        let (name, columns) = table.table
        return try connection.execute(
            """
            INSERT INTO \(name) (user_id, \(columns)) SELECT $1, \(columns) FROM \(name) WHERE user_id = $2
            ON CONFLICT DO NOTHING
            """,
            [PostgresValue(target), PostgresValue(source)]
        ).changes
    }

    func deleteActivity(in table: ActivityTable, of userID: String) throws {
        try connection.execute("DELETE FROM \(table.table.name) WHERE user_id = $1", [PostgresValue(userID)])
    }

    func suffixSharedIdempotencyKeys(
        in table: ActivityTable, of source: String, sharedWith target: String, suffix: String
    ) throws {
        let parameters = [PostgresValue(suffix), PostgresValue(source), PostgresValue(target)]
        switch table {
        case .events:
            try connection.execute(
                """
                UPDATE events SET idempotency_key = idempotency_key || $1
                WHERE user_id = $2 AND idempotency_key IN (SELECT idempotency_key FROM events WHERE user_id = $3)
                """,
                parameters)
        case .meterUsage:
            try connection.execute(
                """
                UPDATE meter_usage SET idempotency_key = idempotency_key || $1
                WHERE user_id = $2 AND idempotency_key IN
                    (SELECT idempotency_key FROM meter_usage m WHERE m.user_id = $3 AND m.meter = meter_usage.meter)
                """,
                parameters)
        case .meterGrants:
            try connection.execute(
                """
                UPDATE meter_grants SET idempotency_key = idempotency_key || $1
                WHERE user_id = $2 AND idempotency_key IN (SELECT idempotency_key FROM meter_grants WHERE user_id = $3)
                """,
                parameters)
        case .counters, .meterWarnings, .plans, .promptOutcomes, .experimentAssignments, .flags, .storePurchases:
            return
        }
    }

    func addCounters(of source: String, to target: String) throws -> Int {
        // A sum past BIGINT's bound fails the statement (22003), which the connection reports as
        // count_overflow: the counters' bound is BIGINT's.
        try connection.execute(
            """
            INSERT INTO counters (user_id, action, total)
            SELECT $1, action, total FROM counters WHERE user_id = $2
            ON CONFLICT (user_id, action) DO UPDATE SET total = counters.total + excluded.total
            """,
            [PostgresValue(target), PostgresValue(source)]
        ).changes
    }

    func backdateCreation(of userID: String, to time: Date) throws {
        // Times compare as text in byte order, as in SQLite.
        try connection.execute(
            #"UPDATE users SET created_at = least(created_at COLLATE "C", $1) WHERE id = $2"#,
            [PostgresValue(time), PostgresValue(userID)])
    }

    func removeUser(_ userID: String) throws {
        try store.deleteEverything(of: userID, connection)
    }
}

// MARK: Records

extension PostgresTransaction {
    func countRecords(owner: String, in collections: [String]?) throws -> Int {
        let filter = collectionFilter(collections, alias: nil, parameter: 2)
        return try connection.execute(
            "SELECT count(*) AS n FROM records WHERE owner_id = $1 \(filter.sql)",
            [PostgresValue(owner)] + filter.parameters
        ).first?.int("n") ?? 0
    }

    func sharedRecordKeys(guest: String, account: String, in collections: [String]?) throws -> [SharedRecordKey] {
        let filter = collectionFilter(collections, alias: "g", parameter: 3)
        return try connection.execute(
            """
            SELECT g.collection, g.key, g.updated_at AS guest_updated, g.data AS guest_data,
                a.updated_at AS account_updated, a.data AS account_data
            FROM records g JOIN records a ON a.owner_id = $1 AND a.collection = g.collection AND a.key = g.key
            WHERE g.owner_id = $2 \(filter.sql)
            ORDER BY g.collection COLLATE "C", g.key COLLATE "C"
            """,
            [PostgresValue(account), PostgresValue(guest)] + filter.parameters
        ).map { row in
            SharedRecordKey(
                collection: try row.string("collection"), key: try row.string("key"),
                guest: RecordVersion(data: try row.string("guest_data"), updatedAt: try row.date("guest_updated")),
                account: RecordVersion(data: try row.string("account_data"), updatedAt: try row.date("account_updated"))
            )
        }
    }

    func reassignRecords(from source: String, to target: String, in collections: [String]?) throws -> Int {
        let filter = collectionFilter(collections, alias: nil, parameter: 3)
        return try connection.execute(
            "UPDATE records SET owner_id = $1 WHERE owner_id = $2 \(filter.sql)",
            [PostgresValue(target), PostgresValue(source)] + filter.parameters
        ).changes
    }

    func moveRecord(
        owner: String, collection: String, key: String, to newOwner: String, key newKey: String
    ) throws -> Bool {
        try connection.execute(
            "UPDATE records SET owner_id = $1, key = $2 WHERE owner_id = $3 AND collection = $4 AND key = $5",
            [
                PostgresValue(newOwner), PostgresValue(newKey), PostgresValue(owner), PostgresValue(collection),
                PostgresValue(key),
            ]
        ).changes == 1
    }

    func recordKeys(owner: String, locking: Bool) throws -> [RecordKey] {
        try connection.execute(
            """
            SELECT collection, key FROM records WHERE owner_id = $1
            ORDER BY collection COLLATE "C", key COLLATE "C"\(locking ? " FOR UPDATE" : "")
            """,
            [PostgresValue(owner)]
        ).map { row in RecordKey(collection: try row.string("collection"), key: try row.string("key")) }
    }

    func hasFlag(_ flag: UserFlag, of userID: String) throws -> Bool {
        try connection.execute(
            "SELECT 1 AS present FROM user_flags WHERE user_id = $1 AND flag = $2",
            [PostgresValue(userID), PostgresValue(flag.rawValue)]
        ).first != nil
    }

    func setFlag(_ flag: UserFlag, of userID: String, at time: Date) throws {
        try connection.execute(
            "INSERT INTO user_flags (user_id, flag, set_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            [PostgresValue(userID), PostgresValue(flag.rawValue), PostgresValue(time)])
    }

    /// The condition on `collections` (none when nil, nothing when empty),
    /// as one array parameter numbered `parameter`.
    private func collectionFilter(
        _ collections: [String]?, alias: String?, parameter: Int
    ) -> (sql: String, parameters: [PostgresValue?]) {
        guard let collections else { return ("", []) }
        if collections.isEmpty { return ("AND false", []) }
        let column = alias.map { "\($0).collection" } ?? "collection"
        return ("AND \(column) = ANY($\(parameter)::text[])", [PostgresValue.textArray(collections)])
    }
}

// MARK: Conflict archive

extension PostgresTransaction {
    func archiveRecord(
        owner: String, collection: String, key: String, for archiveOwner: String, journalID: Int64?, reason: String,
        at time: Date
    ) throws {
        try connection.execute(
            """
            INSERT INTO conflict_archive (journal_id, owner_id, collection, key, data, updated_at, reason, archived_at)
            SELECT $1::bigint, $2, collection, key, data, updated_at, $3, $4 FROM records
            WHERE owner_id = $5 AND collection = $6 AND key = $7
            """,
            [
                journalID.map { PostgresValue($0) }, PostgresValue(archiveOwner), PostgresValue(reason),
                PostgresValue(time), PostgresValue(owner), PostgresValue(collection), PostgresValue(key),
            ])
    }

    func archivedConflicts(owner: String?) throws -> [ArchivedConflict] {
        let rows =
            if let owner {
                try connection.execute(
                    #"SELECT * FROM conflict_archive WHERE owner_id = $1 ORDER BY archived_at COLLATE "C", id"#,
                    [PostgresValue(owner)])
            } else {
                try connection.execute(#"SELECT * FROM conflict_archive ORDER BY archived_at COLLATE "C", id"#)
            }
        return try rows.map(archivedConflict)
    }

    func archivedConflict(id: Int64, locking: Bool) throws -> ArchivedConflict? {
        try connection.execute(
            "SELECT * FROM conflict_archive WHERE id = $1\(locking ? " FOR UPDATE" : "")", [PostgresValue(id)]
        ).first.map(archivedConflict)
    }

    func deleteArchivedConflict(id: Int64) throws {
        try connection.execute("DELETE FROM conflict_archive WHERE id = $1", [PostgresValue(id)])
    }

    private func archivedConflict(_ row: PostgresRow) throws -> ArchivedConflict {
        ArchivedConflict(
            id: try row.int64("id"), userID: try row.string("owner_id"), journalID: try row.optionalInt64("journal_id"),
            collection: try row.string("collection"), key: try row.string("key"), data: try row.string("data"),
            updatedAt: try row.date("updated_at"), reason: try row.string("reason"),
            archivedAt: try row.date("archived_at"))
    }
}

// MARK: Journals

extension PostgresTransaction {
    func newestJournal(
        kind: JournalKind, from source: String, into target: String, statusOtherThan status: JournalStatus
    ) throws -> Int64? {
        try connection.execute(
            """
            SELECT id FROM migration_journals WHERE kind = $1 AND source_id = $2 AND target_id = $3
            AND status <> $4 ORDER BY id DESC LIMIT 1
            """,
            [
                PostgresValue(kind.rawValue), PostgresValue(source), PostgresValue(target),
                PostgresValue(status.rawValue),
            ]
        ).first?.int64("id")
    }

    func createJournal(
        kind: JournalKind, source: String, target: String, status: JournalStatus, backupPath: String?,
        startedAt: Date, finishedAt: Date?, steps: [String], stepStatus: JournalStepStatus
    ) throws -> Int64 {
        guard
            let id = try connection.execute(
                """
                INSERT INTO migration_journals (kind, source_id, target_id, status, backup_path, started_at, finished_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id
                """,
                [
                    PostgresValue(kind.rawValue), PostgresValue(source), PostgresValue(target),
                    PostgresValue(status.rawValue),
                    backupPath.map { PostgresValue($0) }, PostgresValue(startedAt),
                    finishedAt.map { PostgresValue($0) },
                ]
            ).first?.int64("id")
        else {
            throw GuestModeError(.databaseError, "the new migration journal has no id")
        }
        for (index, name) in steps.enumerated() {
            try connection.execute(
                "INSERT INTO migration_steps (journal_id, position, name, status) VALUES ($1, $2, $3, $4)",
                [PostgresValue(id), PostgresValue(index + 1), PostgresValue(name), PostgresValue(stepStatus.rawValue)])
        }
        return id
    }

    func migrationJournal(id: Int64, locking: Bool) throws -> MigrationJournal? {
        try journals(where: "id = $1", [PostgresValue(id)], locking: locking).first
    }

    func migrationJournals(involving user: String?) throws -> [MigrationJournal] {
        guard let user else { return try journals(where: "true", [], locking: false) }
        return try journals(where: "source_id = $1 OR target_id = $1", [PostgresValue(user)], locking: false)
    }

    func setJournalStatus(_ id: Int64, to status: JournalStatus, error: String?) throws {
        try connection.execute(
            "UPDATE migration_journals SET status = $1, error = $2 WHERE id = $3",
            [PostgresValue(status.rawValue), error.map { PostgresValue($0) }, PostgresValue(id)])
    }

    func setJournalFinishTime(_ id: Int64, to time: Date) throws {
        try connection.execute(
            "UPDATE migration_journals SET finished_at = $1 WHERE id = $2", [PostgresValue(time), PostgresValue(id)])
    }

    func setJournalStep(
        journalID: Int64, position: Int, to status: JournalStepStatus, rows: Int, at time: Date
    ) throws {
        try connection.execute(
            """
            UPDATE migration_steps SET status = $1, rows = $2, finished_at = $3
            WHERE journal_id = $4 AND position = $5
            """,
            [
                PostgresValue(status.rawValue), PostgresValue(rows), PostgresValue(time), PostgresValue(journalID),
                PostgresValue(position),
            ])
    }

    func countJournalResume(_ id: Int64) throws {
        try connection.execute(
            "UPDATE migration_journals SET resumes = resumes + 1 WHERE id = $1", [PostgresValue(id)])
    }

    func countStepFailure(journalID: Int64, position: Int) throws {
        try connection.execute(
            "UPDATE migration_steps SET failures = failures + 1 WHERE journal_id = $1 AND position = $2",
            [PostgresValue(journalID), PostgresValue(position)])
    }

    /// The journals `clause` selects with their steps, the steps read by a
    /// statement of their own after the journals (and their locks) are held.
    private func journals(
        where clause: String, _ parameters: [PostgresValue?], locking: Bool
    ) throws -> [MigrationJournal] {
        let journals = try connection.execute(
            "SELECT * FROM migration_journals WHERE \(clause) ORDER BY id\(locking ? " FOR UPDATE" : "")", parameters)
        guard journals.count > 0 else { return [] }
        // Every step of these journals in one query rather than one per journal.
        var steps: [Int64: [JournalStep]] = [:]
        for step in try connection.execute(
            """
            SELECT * FROM migration_steps
            WHERE journal_id IN (SELECT id FROM migration_journals WHERE \(clause))
            ORDER BY journal_id, position
            """,
            parameters)
        {
            steps[try step.int64("journal_id"), default: []].append(
                JournalStep(
                    position: try step.int("position"), name: try step.string("name"),
                    status: try step.decode("status", as: JournalStepStatus.self), rows: try step.int("rows"),
                    finishedAt: try step.optionalDate("finished_at")))
        }
        return try journals.map { row in
            let id = try row.int64("id")
            return MigrationJournal(
                id: id, kind: try row.decode("kind", as: JournalKind.self), source: try row.string("source_id"),
                target: try row.string("target_id"), status: try row.decode("status", as: JournalStatus.self),
                backupPath: try row.optionalString("backup_path"), startedAt: try row.date("started_at"),
                finishedAt: try row.optionalDate("finished_at"), error: try row.optionalString("error"),
                steps: steps[id] ?? [])
        }
    }
}
