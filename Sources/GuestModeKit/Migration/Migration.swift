import Foundation

public struct JournalStep: Codable, Sendable, Equatable {
    public var position: Int
    public var name: String
    /// `pending` or `done`.
    public var status: String
    public var rows: Int
    public var finishedAt: Date?

    public init(position: Int, name: String, status: String, rows: Int, finishedAt: Date?) {
        self.position = position
        self.name = name
        self.status = status
        self.rows = rows
        self.finishedAt = finishedAt
    }
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

    public init(
        id: Int64, kind: String, source: String, target: String, status: String, backupPath: String?, startedAt: Date,
        finishedAt: Date?, error: String?, steps: [JournalStep]
    ) {
        self.id = id
        self.kind = kind
        self.source = source
        self.target = target
        self.status = status
        self.backupPath = backupPath
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.error = error
        self.steps = steps
    }
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

    /// What each migration step moves: `profile` the activity, each step its
    /// collections, and `cleanup` the collections no step declares (so
    /// nothing of the guest is ever left behind) and then the guest itself.
    var transferSteps: [TransferStep] {
        let steps = migrationSteps
        let covered = Set(steps.flatMap(\.collections))
        let uncovered = profile.collections.map(\.name).filter { !covered.contains($0) }
        return steps.map { step in
            let isCleanup = step.name == "cleanup"
            return TransferStep(
                name: step.name, movesActivity: step.name == "profile",
                collections: step.collections + (isCleanup ? uncovered : []), removesGuest: isCleanup)
        }
    }

    public func planMigration(guest: String, to account: String, now: Date) throws -> MigrationPlan {
        try TextRule.check(["the guest's id": guest, "the account's id": account])
        let steps = migrationSteps
        let previews = try store.previewTransfer(of: guest, into: account, steps: transferSteps, profile: profile)
        let planned = zip(steps, previews).enumerated().map { index, pair in
            MigrationPlan.Step(
                position: index + 1, name: pair.0.name, collections: pair.0.collections, rows: pair.1.rows)
        }
        return MigrationPlan(source: guest, target: account, steps: planned, conflicts: previews.flatMap(\.conflicts))
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
        try TextRule.check(["the guest's id": guest, "the account's id": account])
        let unfinished = try store.unfinishedMigration(of: guest, into: account)
        let steps = transferSteps
        let journalID: Int64
        switch (unfinished, resuming) {
        case (let id?, false):
            throw unfinishedMigrationConflict(id, guest: guest, account: account)
        case (nil, true):
            throw GuestModeError.notFound(
                "no unfinished migration of '\(guest)' into '\(account)' to resume", code: .nothingToResume)
        case (let id?, true):
            journalID = id
        case (nil, false):
            do {
                try store.checkTransfer(of: guest, into: account)
                let backupPath = try takeBackup([guest, account])
                checkpoint(.backupTaken)
                journalID = try store.startMigration(
                    of: guest, into: account, steps: steps.map(\.name), backupPath: backupPath, now: now)
            } catch let error as GuestModeError where error.code == .migrationUnfinished {
                // Another process started the same migration after our first look.
                if let id = try store.unfinishedMigration(of: guest, into: account) {
                    throw unfinishedMigrationConflict(id, guest: guest, account: account)
                }
                throw error
            } catch let error as GuestModeError where error.kind == .notFound {
                // Another process may have finished the same migration meanwhile: the guest is gone because it moved.
                try refuseFinishedMigration(of: guest, into: account)
                throw error
            }
        }

        var conflicts: [RecordConflict] = []
        for journalStep in try journal(journalID).steps where journalStep.status != "done" {
            guard journalStep.position <= steps.count, steps[journalStep.position - 1].name == journalStep.name else {
                throw GuestModeError.badData(
                    "migration #\(journalID) was planned with other steps than the profile now declares; it cannot resume",
                    code: .journalMismatch)
            }
            let step = steps[journalStep.position - 1]
            do {
                if let done = try store.runMigrationStep(
                    step, position: journalStep.position, journalID: journalID, profile: profile, now: now)
                {
                    conflicts += done.conflicts
                    progress(done.step, steps.count)
                    checkpoint(.stepDone(position: done.step.position))
                }
            } catch {
                try? store.failMigration(
                    journalID: journalID, reason: "step \(journalStep.position) \(step.name): \(error)")
                // The journal and the steps before this one are committed:
                // "try again" would be refused as unfinished, so say what
                // is kept and that the journal resumes.
                if let failure = error as? GuestModeError, failure.kind == .tryAgainLater {
                    let done = journalStep.position - 1
                    throw GuestModeError(
                        .tryAgainLater, code: .migrationInterrupted,
                        "migration #\(journalID) of '\(guest)' into '\(account)' stopped at step \(journalStep.position)/\(steps.count) (\(step.name)): \(failure.message); \(done == 0 ? "no step is" : done == 1 ? "step 1 is" : "steps 1–\(done) are") done and kept, and the journal resumes from step \(journalStep.position)"
                    )
                }
                throw error
            }
        }
        let overCap = try limits(user: account, collection: nil, now: now).filter(\.isOverCap)
        return MigrationReport(
            journal: try journal(journalID), conflicts: conflicts, overCap: overCap, isResumed: resuming)
    }

    /// The answer to a second `migrate` of a guest whose migration another
    /// run started: a conflict (14), like a second concurrent `link`.
    private func unfinishedMigrationConflict(_ id: Int64, guest: String, account: String) -> GuestModeError {
        GuestModeError.conflict(
            "migration #\(id) of '\(guest)' into '\(account)' is unfinished: another guestmode process may be running it now; if none is, resume it",
            code: .migrationUnfinished)
    }

    /// Throws a conflict (14) when `guest` was already migrated into `account`.
    private func refuseFinishedMigration(of guest: String, into account: String) throws {
        let finished = try store.migrationJournals(involving: guest).last {
            $0.kind == "guest-to-account" && $0.source == guest && $0.target == account && $0.status == "done"
        }
        guard let finished else { return }
        throw GuestModeError.conflict(
            "'\(guest)' was already migrated into '\(account)' by migration #\(finished.id)\(finished.finishedAt.map { " at \(Timestamp.format($0))" } ?? ""); there is nothing left to move",
            code: .alreadyMigrated)
    }

    public func journal(_ id: Int64) throws -> MigrationJournal {
        guard let journal = try store.migrationJournal(id: id) else {
            throw GuestModeError.notFound("no migration journal #\(id)", code: .journalNotFound)
        }
        return journal
    }

    /// Journals of every migration and merge, or of those involving `user`.
    public func journals(involving user: String?) throws -> [MigrationJournal] {
        try store.migrationJournals(involving: user)
    }
}

extension CollectionLimit {
    /// True when the user holds more records than the cap allows (after a
    /// merge or migration: nothing is dropped to fit, new records are refused).
    public var isOverCap: Bool { cap.map { (used ?? 0) > $0 } ?? false }
}
