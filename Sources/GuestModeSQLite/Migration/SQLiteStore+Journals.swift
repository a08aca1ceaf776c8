import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteStore: MigrationJournalStore {
    public func unfinishedMigration(of guest: String, into account: String) throws -> Int64? {
        try read { db in try unfinishedMigration(of: guest, into: account, db) }
    }

    public func startMigration(
        of guest: String, into account: String, steps: [String], backupPath: String, now: Date
    ) throws
        -> Int64
    {
        try write { db in
            try checkTransfer(of: guest, into: account, db)
            if let id = try unfinishedMigration(of: guest, into: account, db) {
                throw GuestModeError(
                    .conflict, code: .migrationUnfinished,
                    "migration #\(id) of '\(guest)' into '\(account)' is unfinished; resume it instead of starting another"
                )
            }
            try db.execute(
                sql: """
                    INSERT INTO migration_journals (kind, source_id, target_id, status, backup_path, started_at)
                    VALUES ('guest-to-account', ?, ?, 'running', ?, ?)
                    """,
                arguments: [guest, account, backupPath, Timestamp.format(now)])
            let id = db.lastInsertedRowID
            for (index, name) in steps.enumerated() {
                try db.execute(
                    sql: "INSERT INTO migration_steps (journal_id, position, name, status) VALUES (?, ?, ?, 'pending')",
                    arguments: [id, index + 1, name])
            }
            return id
        }
    }

    public func runMigrationStep(
        _ step: TransferStep, position: Int, journalID: Int64, profile: Profile, now: Date
    ) throws
        -> MigrationStepResult?
    {
        try writeDurably { db in
            guard
                let journal = try Row.fetchOne(
                    db, sql: "SELECT source_id, target_id FROM migration_journals WHERE id = ?", arguments: [journalID])
            else {
                throw GuestModeError(.notFound, code: .journalNotFound, "no migration journal #\(journalID)")
            }
            // Read inside the transaction: another process may have done the step.
            guard
                let entry = try Row.fetchOne(
                    db, sql: "SELECT name, status FROM migration_steps WHERE journal_id = ? AND position = ?",
                    arguments: [journalID, position]), (try entry.decode(forColumn: "name") as String?) == step.name
            else {
                throw GuestModeError(
                    .badData, code: .journalMismatch,
                    "migration #\(journalID) has no step \(position) named '\(step.name)'; it cannot run that step")
            }
            guard (try entry.decode(forColumn: "status") as String?) != "done" else { return nil }
            try db.execute(
                sql: "UPDATE migration_journals SET status = 'running', error = NULL WHERE id = ?",
                arguments: [journalID])
            let transfer = SQLiteTransfer(
                store: self, profile: profile, source: try journal.decode(forColumn: "source_id"),
                target: try journal.decode(forColumn: "target_id"), now: now,
                journalID: journalID)
            var rows = 0
            var conflicts: [RecordConflict] = []
            if step.movesActivity { rows += try transfer.moveActivity(db) }
            if !step.collections.isEmpty {
                let moved = try transfer.moveRecords(step.collections, policy: .union, db)
                rows += moved.moved + moved.conflicts.count
                conflicts = moved.conflicts
            }
            if step.removesGuest { rows += try transfer.removeSource(db) }
            try db.execute(
                sql:
                    "UPDATE migration_steps SET status = 'done', rows = ?, finished_at = ? WHERE journal_id = ? AND position = ?",
                arguments: [rows, Timestamp.format(now), journalID, position])
            let pending =
                try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM migration_steps WHERE journal_id = ? AND status != 'done'",
                    arguments: [journalID]) ?? 0
            if pending == 0 {
                try db.execute(
                    sql: "UPDATE migration_journals SET status = 'done', finished_at = ? WHERE id = ?",
                    arguments: [Timestamp.format(now), journalID])
            }
            return MigrationStepResult(
                step: JournalStep(position: position, name: step.name, status: "done", rows: rows, finishedAt: now),
                conflicts: conflicts)
        }
    }

    public func failMigration(journalID: Int64, reason: String) throws {
        try write { db in
            try db.execute(
                sql: "UPDATE migration_journals SET status = 'failed', error = ? WHERE id = ?",
                arguments: [reason, journalID])
        }
    }

    public func migrationJournal(id: Int64) throws -> MigrationJournal? {
        try read { db in try journals(where: "id = ?", arguments: [id], db).first }
    }

    public func migrationJournals(involving user: String?) throws -> [MigrationJournal] {
        try read { db in
            guard let user else { return try journals(where: "1", arguments: [], db) }
            return try journals(where: "source_id = ? OR target_id = ?", arguments: [user, user], db)
        }
    }

    private func unfinishedMigration(of guest: String, into account: String, _ db: Database) throws -> Int64? {
        try Int64.fetchOne(
            db,
            sql: """
                SELECT id FROM migration_journals WHERE kind = 'guest-to-account' AND source_id = ? AND target_id = ?
                AND status != 'done' ORDER BY id DESC LIMIT 1
                """,
            arguments: [guest, account])
    }

    private func journals(
        where clause: String, arguments: StatementArguments, _ db: Database
    ) throws -> [MigrationJournal] {
        try Row.fetchAll(db, sql: "SELECT * FROM migration_journals WHERE \(clause) ORDER BY id", arguments: arguments)
            .map { row in
                let id: Int64 = try row.decode(forColumn: "id")
                let steps = try Row.fetchAll(
                    db, sql: "SELECT * FROM migration_steps WHERE journal_id = ? ORDER BY position", arguments: [id]
                ).map { step in
                    JournalStep(
                        position: try step.decode(forColumn: "position"), name: try step.decode(forColumn: "name"),
                        status: try step.decode(forColumn: "status"), rows: try step.decode(forColumn: "rows"),
                        finishedAt: try step.optionalTime("finished_at"))
                }
                return MigrationJournal(
                    id: id, kind: try row.decode(forColumn: "kind"), source: try row.decode(forColumn: "source_id"),
                    target: try row.decode(forColumn: "target_id"), status: try row.decode(forColumn: "status"),
                    backupPath: try row.decode(forColumn: "backup_path"),
                    startedAt: try row.time("started_at"),
                    finishedAt: try row.optionalTime("finished_at"),
                    error: try row.decode(forColumn: "error"), steps: steps)
            }
    }
}
