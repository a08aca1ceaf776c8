import Foundation
import GuestModeKit

extension PostgresStore: MigrationJournalStore {
    public func unfinishedMigration(of guest: String, into account: String) throws -> Int64? {
        try read { connection in try unfinishedMigration(of: guest, into: account, connection) }
    }

    public func startMigration(
        of guest: String, into account: String, steps: [String], backupPath: String, now: Date
    ) throws
        -> Int64
    {
        try write { connection in
            // Locking both users first makes two processes starting the same pair take turns: the
            // second sees the first's journal below and is refused (migration_unfinished).
            try checkTransfer(of: guest, into: account, locking: true, connection)
            if let id = try unfinishedMigration(of: guest, into: account, connection) {
                throw GuestModeError(
                    .conflict, code: .migrationUnfinished,
                    "migration #\(id) of '\(guest)' into '\(account)' is unfinished; resume it instead of starting another"
                )
            }
            guard
                let id = try connection.execute(
                    """
                    INSERT INTO migration_journals (kind, source_id, target_id, status, backup_path, started_at)
                    VALUES ('guest-to-account', $1, $2, 'running', $3, $4) RETURNING id
                    """,
                    [PostgresValue(guest), PostgresValue(account), PostgresValue(backupPath), PostgresValue(now)]
                ).first?.int64("id")
            else {
                throw GuestModeError(.internalFailure, code: .databaseError, "the new migration journal has no id")
            }
            for (index, name) in steps.enumerated() {
                try connection.execute(
                    "INSERT INTO migration_steps (journal_id, position, name, status) VALUES ($1, $2, $3, 'pending')",
                    [PostgresValue(id), PostgresValue(index + 1), PostgresValue(name)])
            }
            return id
        }
    }

    public func runMigrationStep(
        _ step: TransferStep, position: Int, journalID: Int64, profile: Profile, now: Date
    ) throws
        -> MigrationStepResult?
    {
        try writeMovingData { connection in
            guard
                let journal = try connection.execute(
                    "SELECT source_id, target_id FROM migration_journals WHERE id = $1", [PostgresValue(journalID)]
                ).first
            else {
                throw GuestModeError(.notFound, code: .journalNotFound, "no migration journal #\(journalID)")
            }
            let source = try journal.string("source_id")
            let target = try journal.string("target_id")
            // Both users (those still there: cleanup removes the guest) in id order, then the journal:
            // another process running this journal waits here, and reads the step's status below only
            // once it has committed, so a step never runs twice.
            _ = try users([source, target], locking: true, connection)
            try connection.execute(
                "SELECT id FROM migration_journals WHERE id = $1 FOR UPDATE", [PostgresValue(journalID)])
            guard
                let entry = try connection.execute(
                    "SELECT name, status FROM migration_steps WHERE journal_id = $1 AND position = $2",
                    [PostgresValue(journalID), PostgresValue(position)]
                ).first, try entry.string("name") == step.name
            else {
                throw GuestModeError(
                    .badData, code: .journalMismatch,
                    "migration #\(journalID) has no step \(position) named '\(step.name)'; it cannot run that step")
            }
            guard try entry.string("status") != "done" else { return nil }
            try connection.execute(
                "UPDATE migration_journals SET status = 'running', error = NULL WHERE id = $1",
                [PostgresValue(journalID)])
            let transfer = PostgresTransfer(
                store: self, profile: profile, source: source, target: target, now: now, journalID: journalID)
            var rows = 0
            var conflicts: [RecordConflict] = []
            if step.movesActivity { rows += try transfer.moveActivity(connection) }
            if !step.collections.isEmpty {
                let moved = try transfer.moveRecords(step.collections, policy: .union, connection)
                rows += moved.moved + moved.conflicts.count
                conflicts = moved.conflicts
            }
            if step.removesGuest { rows += try transfer.removeSource(connection) }
            try connection.execute(
                """
                UPDATE migration_steps SET status = 'done', rows = $1, finished_at = $2
                WHERE journal_id = $3 AND position = $4
                """,
                [PostgresValue(rows), PostgresValue(now), PostgresValue(journalID), PostgresValue(position)])
            let pending =
                try connection.execute(
                    "SELECT count(*) AS n FROM migration_steps WHERE journal_id = $1 AND status <> 'done'",
                    [PostgresValue(journalID)]
                ).first?.int("n") ?? 0
            if pending == 0 {
                try connection.execute(
                    "UPDATE migration_journals SET status = 'done', finished_at = $1 WHERE id = $2",
                    [PostgresValue(now), PostgresValue(journalID)])
            }
            return MigrationStepResult(
                step: JournalStep(position: position, name: step.name, status: "done", rows: rows, finishedAt: now),
                conflicts: conflicts)
        }
    }

    public func failMigration(journalID: Int64, reason: String) throws {
        _ = try write { connection in
            try connection.execute(
                "UPDATE migration_journals SET status = 'failed', error = $1 WHERE id = $2",
                [PostgresValue(reason), PostgresValue(journalID)])
        }
    }

    public func migrationJournal(id: Int64) throws -> MigrationJournal? {
        try read { connection in try journals(where: "id = $1", [PostgresValue(id)], connection).first }
    }

    public func migrationJournals(involving user: String?) throws -> [MigrationJournal] {
        try read { connection in
            guard let user else { return try journals(where: "true", [], connection) }
            return try journals(where: "source_id = $1 OR target_id = $1", [PostgresValue(user)], connection)
        }
    }

    private func unfinishedMigration(
        of guest: String, into account: String, _ connection: PostgresConnection
    ) throws
        -> Int64?
    {
        try connection.execute(
            """
            SELECT id FROM migration_journals WHERE kind = 'guest-to-account' AND source_id = $1 AND target_id = $2
            AND status <> 'done' ORDER BY id DESC LIMIT 1
            """,
            [PostgresValue(guest), PostgresValue(account)]
        ).first?.int64("id")
    }

    private func journals(
        where clause: String, _ parameters: [PostgresValue?], _ connection: PostgresConnection
    ) throws
        -> [MigrationJournal]
    {
        let journals = try connection.execute(
            "SELECT * FROM migration_journals WHERE \(clause) ORDER BY id", parameters)
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
                    status: try step.string("status"),
                    rows: try step.int("rows"), finishedAt: try step.optionalDate("finished_at")))
        }
        return try journals.map { row in
            let id = try row.int64("id")
            return MigrationJournal(
                id: id, kind: try row.string("kind"), source: try row.string("source_id"),
                target: try row.string("target_id"), status: try row.string("status"),
                backupPath: try row.optionalString("backup_path"), startedAt: try row.date("started_at"),
                finishedAt: try row.optionalDate("finished_at"), error: try row.optionalString("error"),
                steps: steps[id] ?? [])
        }
    }
}
