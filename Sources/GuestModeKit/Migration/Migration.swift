import Foundation
import GRDB

public struct JournalStep: Codable, Sendable, Equatable {
    public var position: Int
    public var name: String
    /// `pending` or `done`.
    public var status: String
    public var rows: Int
    public var finishedAt: Date?
}

public struct MigrationJournal: Codable, Sendable, Equatable {
    public var id: Int64
    /// `guest-to-account` or `merge`.
    public var kind: String
    public var source: String
    public var target: String
    /// `running`, `failed` or `done`.
    public var status: String
    public var backupPath: String?
    public var startedAt: Date
    public var finishedAt: Date?
    public var error: String?
    public var steps: [JournalStep]

    public var isFinished: Bool { status == "done" }
}

/// What a migration would do, step by step, before it does anything.
public struct MigrationPlan: Codable, Sendable {
    public struct Step: Codable, Sendable {
        public var position: Int
        public var name: String
        public var collections: [String]
        public var rows: Int
    }

    public var source: String
    public var target: String
    public var steps: [Step]
    public var conflicts: [RecordConflict]
}

public struct MigrationReport: Codable, Sendable {
    public var journal: MigrationJournal
    public var conflicts: [RecordConflict]
    /// Capped collections the account is now over; nothing was dropped to fit.
    public var overCap: [CollectionLimit]
    public var isResumed: Bool
}

/// Points where a test can stop a migration the way a crash would.
public enum MigrationCheckpoint: Sendable, Equatable {
    case backupTaken
    case stepDone(position: Int)
}

extension GuestMode {
    /// The steps of a guest → account migration: the profile's, with the
    /// activity step first and the cleanup step last whatever it declares.
    var migrationSteps: [MigrationStep] {
        var steps = profile.migration.steps
        if !steps.contains(where: { $0.name == "profile" }) {
            steps.insert(MigrationStep(name: "profile", collections: []), at: 0)
        }
        if !steps.contains(where: { $0.name == "cleanup" }) {
            steps.append(MigrationStep(name: "cleanup", collections: []))
        }
        return steps
    }

    public func planMigration(guest: String, to account: String, now: Date) throws -> MigrationPlan {
        try store.read { db in
            try checkMigration(guest: guest, account: account, db)
            let transfer = Transfer(profile: profile, store: store, source: guest, target: account, now: now)
            var planned: [MigrationPlan.Step] = []
            var conflicts: [RecordConflict] = []
            for (index, step) in migrationSteps.enumerated() {
                var rows = 0
                if step.name == "profile" { rows += try transfer.activityCount(db) }
                if step.name == "cleanup" {
                    rows += try transfer.recordCounts(uncoveredCollections, db) + 1
                    conflicts += try transfer.conflicts(in: uncoveredCollections, policy: .union, db)
                }
                if !step.collections.isEmpty {
                    rows += try transfer.recordCounts(step.collections, db)
                    conflicts += try transfer.conflicts(in: step.collections, policy: .union, db)
                }
                planned.append(MigrationPlan.Step(position: index + 1, name: step.name, collections: step.collections, rows: rows))
            }
            return MigrationPlan(source: guest, target: account, steps: planned, conflicts: conflicts)
        }
    }

    /// Collections no declared step moves; the cleanup step moves them so
    /// nothing of the guest is ever left behind.
    private var uncoveredCollections: [String] {
        let covered = Set(migrationSteps.flatMap(\.collections))
        return profile.collections.map(\.name).filter { !covered.contains($0) }
    }

    /// Moves everything of a guest into an account, one journaled step per
    /// transaction after a backup of both. Interrupted, it resumes from the
    /// first unfinished step and never applies a step twice.
    public func migrate(
        guest: String, to account: String, resuming: Bool, now: Date,
        takeBackup: ([String]) throws -> String,
        progress: (JournalStep, Int) -> Void = { _, _ in },
        checkpoint: (MigrationCheckpoint) -> Void = { _ in }
    ) throws -> MigrationReport {
        let unfinished = try store.read { db in
            try Int64.fetchOne(
                db,
                sql: """
                    SELECT id FROM migration_journals WHERE kind = 'guest-to-account' AND source_id = ? AND target_id = ?
                    AND status != 'done' ORDER BY id DESC LIMIT 1
                    """,
                arguments: [guest, account])
        }
        let journalID: Int64
        switch (unfinished, resuming) {
        case (let id?, false):
            throw GuestModeError.conflict(
                "migration #\(id) of '\(guest)' into '\(account)' is unfinished; continue it with --resume",
                code: "migration_unfinished")
        case (nil, true):
            throw GuestModeError.notFound(
                "no unfinished migration of '\(guest)' into '\(account)' to resume", code: "nothing_to_resume")
        case (let id?, true):
            journalID = id
        case (nil, false):
            try store.read { db in try checkMigration(guest: guest, account: account, db) }
            let backupPath = try takeBackup([guest, account])
            checkpoint(.backupTaken)
            journalID = try store.write { db in
                try db.execute(
                    sql: """
                        INSERT INTO migration_journals (kind, source_id, target_id, status, backup_path, started_at)
                        VALUES ('guest-to-account', ?, ?, 'running', ?, ?)
                        """,
                    arguments: [guest, account, backupPath, Timestamp.format(now)])
                let id = db.lastInsertedRowID
                for (index, step) in migrationSteps.enumerated() {
                    try db.execute(
                        sql: "INSERT INTO migration_steps (journal_id, position, name, status) VALUES (?, ?, ?, 'pending')",
                        arguments: [id, index + 1, step.name])
                }
                return id
            }
        }

        var transfer = Transfer(profile: profile, store: store, source: guest, target: account, now: now)
        transfer.journalID = journalID
        var conflicts: [RecordConflict] = []
        let steps = migrationSteps
        for journalStep in try journal(journalID).steps where journalStep.status != "done" {
            guard journalStep.position <= steps.count, steps[journalStep.position - 1].name == journalStep.name else {
                throw GuestModeError.badData(
                    "migration #\(journalID) was planned with other steps than the profile now declares; it cannot resume",
                    code: "journal_mismatch")
            }
            let step = steps[journalStep.position - 1]
            do {
                let done: JournalStep? = try store.write { db in
                    // Re-read inside the transaction: another process may have done it.
                    let status = try String.fetchOne(
                        db, sql: "SELECT status FROM migration_steps WHERE journal_id = ? AND position = ?",
                        arguments: [journalID, journalStep.position])
                    guard status != "done" else { return nil }
                    try db.execute(sql: "UPDATE migration_journals SET status = 'running', error = NULL WHERE id = ?", arguments: [journalID])
                    var rows = 0
                    if step.name == "profile" { rows += try transfer.moveActivity(db) }
                    if !step.collections.isEmpty {
                        let moved = try transfer.moveRecords(step.collections, policy: .union, db)
                        rows += moved.moved + moved.conflicts.count
                        conflicts += moved.conflicts
                    }
                    if step.name == "cleanup" {
                        let moved = try transfer.moveRecords(uncoveredCollections, policy: .union, db)
                        conflicts += moved.conflicts
                        rows += moved.moved + moved.conflicts.count + (try transfer.removeSource(db))
                    }
                    try db.execute(
                        sql: "UPDATE migration_steps SET status = 'done', rows = ?, finished_at = ? WHERE journal_id = ? AND position = ?",
                        arguments: [rows, Timestamp.format(now), journalID, journalStep.position])
                    if journalStep.position == steps.count {
                        try db.execute(
                            sql: "UPDATE migration_journals SET status = 'done', finished_at = ? WHERE id = ?",
                            arguments: [Timestamp.format(now), journalID])
                    }
                    return JournalStep(
                        position: journalStep.position, name: step.name, status: "done", rows: rows, finishedAt: now)
                }
                if let done {
                    progress(done, steps.count)
                    checkpoint(.stepDone(position: done.position))
                }
            } catch {
                try? store.write { db in
                    try db.execute(
                        sql: "UPDATE migration_journals SET status = 'failed', error = ? WHERE id = ?",
                        arguments: ["step \(journalStep.position) \(step.name): \(error)", journalID])
                }
                throw error
            }
        }
        let overCap = try store.read { db in
            try overCapLimits(of: try store.requireUser(account, db), now: now, db)
        }
        return MigrationReport(journal: try journal(journalID), conflicts: conflicts, overCap: overCap, isResumed: resuming)
    }

    public func journal(_ id: Int64) throws -> MigrationJournal {
        try store.read { db in
            guard let journal = try journals(where: "id = ?", arguments: [id], db).first else {
                throw GuestModeError.notFound("no migration journal #\(id)", code: "journal_not_found")
            }
            return journal
        }
    }

    /// Journals of every migration and merge, or of those involving `user`.
    public func journals(involving user: String?) throws -> [MigrationJournal] {
        try store.read { db in
            guard let user else { return try journals(where: "1", arguments: [], db) }
            return try journals(where: "source_id = ? OR target_id = ?", arguments: [user, user], db)
        }
    }

    private func journals(where clause: String, arguments: StatementArguments, _ db: Database) throws -> [MigrationJournal] {
        try Row.fetchAll(db, sql: "SELECT * FROM migration_journals WHERE \(clause) ORDER BY id", arguments: arguments).map { row in
            let id: Int64 = row["id"]
            let steps = try Row.fetchAll(
                db, sql: "SELECT * FROM migration_steps WHERE journal_id = ? ORDER BY position", arguments: [id]
            ).map { step in
                JournalStep(
                    position: step["position"], name: step["name"], status: step["status"], rows: step["rows"],
                    finishedAt: (step["finished_at"] as String?).flatMap(Timestamp.parse))
            }
            return MigrationJournal(
                id: id, kind: row["kind"], source: row["source_id"], target: row["target_id"], status: row["status"],
                backupPath: row["backup_path"], startedAt: Timestamp.parse(row["started_at"]) ?? .distantPast,
                finishedAt: (row["finished_at"] as String?).flatMap(Timestamp.parse), error: row["error"], steps: steps)
        }
    }

    func checkMigration(guest: String, account: String, _ db: Database) throws {
        let source = try store.requireUser(guest, db)
        _ = try store.requireUser(account, db)
        if guest == account {
            throw GuestModeError.usage("cannot move a user into itself", code: "same_user")
        }
        if source.state != .anonymous {
            throw GuestModeError.conflict(
                "'\(guest)' is not a guest (it has a linked identity); only guests are migrated or merged into accounts",
                code: "not_a_guest")
        }
    }

    func overCapLimits(of user: User, now: Date, _ db: Database) throws -> [CollectionLimit] {
        try profile.collections.map { try store.collectionLimit(of: user, collection: $0.name, profile: profile, now: now, db) }
            .filter { limit in limit.cap.map { limit.used > $0 } ?? false }
    }
}
