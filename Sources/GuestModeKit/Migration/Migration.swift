import Foundation

/// What a migration journal records: a guest moved into an account
/// (`guestmode migrate`, resumable step by step) or a merge (one step).
///
/// ```swift
/// let pending = try engine.journals(involving: guest).filter { $0.kind == .guestToAccount && $0.status != .done }
/// ```
public enum JournalKind: String, Codable, Sendable, CaseIterable, CustomStringConvertible {
    /// `guest-to-account`: a guest's data moved into an account, step by step.
    case guestToAccount = "guest-to-account"
    /// `merge`: two users merged in one transaction.
    case merge

    /// The stored and printed text, `guest-to-account` or `merge`.
    public var description: String { rawValue }
}

/// Where a migration journal stands.
///
/// ```swift
/// if try engine.journal(id).status == .failed { /* resume it */ }
/// ```
public enum JournalStatus: String, Codable, Sendable, CaseIterable, CustomStringConvertible {
    /// Started and not finished; a migration stopped part way stays here until resumed.
    case running
    /// A step failed; the journal's error says why, and a resume starts again.
    case failed
    /// Every step finished.
    case done

    /// The stored and printed text.
    public var description: String { rawValue }
}

/// Where one step of a migration journal stands.
///
/// ```swift
/// let left = try engine.journal(id).steps.filter { $0.status == .pending }
/// ```
public enum JournalStepStatus: String, Codable, Sendable, CaseIterable, CustomStringConvertible {
    /// Not finished yet.
    case pending
    /// Finished, with the rows it moved.
    case done

    /// The stored and printed text.
    public var description: String { rawValue }
}

/// One step of a migration journal.
public struct JournalStep: Codable, Sendable, Equatable {
    /// The step's place in the migration, from 1.
    public var position: Int
    /// The step's name, from the profile's migration steps.
    public var name: String
    /// Whether it has finished.
    public var status: JournalStepStatus
    /// Rows the step moved.
    public var rows: Int
    /// When the step finished; nil while pending.
    public var finishedAt: Date?

    package init(position: Int, name: String, status: JournalStepStatus, rows: Int, finishedAt: Date?) {
        self.position = position
        self.name = name
        self.status = status
        self.rows = rows
        self.finishedAt = finishedAt
    }
}

/// The journal of a migration or merge, which makes it resumable.
public struct MigrationJournal: Codable, Sendable, Equatable {
    /// The journal's id.
    public var id: Int64
    /// A guest moved into an account, or a merge.
    public var kind: JournalKind
    /// The guest moved.
    public var source: String
    /// The account moved into.
    public var target: String
    /// Where it stands.
    public var status: JournalStatus
    /// The backup taken before the first step, if any.
    public var backupPath: String?
    /// When the migration started.
    public var startedAt: Date
    /// When it finished; nil while running or after a failure.
    public var finishedAt: Date?
    /// Why it failed; nil unless it did.
    public var error: String?
    /// The steps, in order.
    public var steps: [JournalStep]

    package init(
        id: Int64, kind: JournalKind, source: String, target: String, status: JournalStatus, backupPath: String?,
        startedAt: Date,
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
    /// One step as planned.
    public struct Step: Codable, Sendable {
        /// The step's place, from 1.
        public var position: Int
        /// The step's name.
        public var name: String
        /// The collections the step moves.
        public var collections: [String]
        /// Rows the step would move.
        public var rows: Int
    }

    /// The guest to move.
    public var source: String
    /// The account to move into.
    public var target: String
    /// The steps, in order.
    public var steps: [Step]
    /// Records both users hold under one key, and how each would be settled.
    public var conflicts: [RecordConflict]
}

/// What a migration of a guest into an account did.
public struct MigrationReport: Codable, Sendable {
    /// The migration's journal, finished.
    public var journal: MigrationJournal
    /// Records both users held under one key, and how each was settled.
    public var conflicts: [RecordConflict]
    /// Capped collections the account is now over; nothing was dropped to fit.
    public var overCap: [CollectionLimit]
    /// True when this call finished a migration an earlier one started.
    public var isResumed: Bool
}

/// Points where a test can stop a migration the way a crash would, or make
/// a step fail by throwing.
public enum MigrationCheckpoint: Sendable, Equatable {
    /// The backup of both users is written; no journal exists yet.
    case backupTaken
    /// The step at `position` is about to run: a throw here fails it as an
    /// error inside the step would (the journal is marked failed, the
    /// failure counted against the step).
    case stepStarting(position: Int)
    /// The step at `position` is committed.
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

    /// What migrating the guest into the account would do, step by step; writes nothing.
    ///
    /// ```swift
    /// let plan = try engine.planMigration(guest: guest.id, to: account.id, now: now)
    /// // plan.steps, plan.conflicts
    /// ```
    public func planMigration(guest: String, to account: String, now: Date) throws -> MigrationPlan {
        try TextRule.check(["the guest's id": guest, "the account's id": account])
        let steps = migrationSteps
        let previews = try previewTransfer(of: guest, into: account, steps: transferSteps)
        let planned = zip(steps, previews).enumerated().map { index, pair in
            MigrationPlan.Step(
                position: index + 1, name: pair.0.name, collections: pair.0.collections, rows: pair.1.rows)
        }
        return MigrationPlan(source: guest, target: account, steps: planned, conflicts: previews.flatMap(\.conflicts))
    }

    /// Moves everything of a guest into an account, one journaled step per
    /// transaction after a backup of both. Interrupted, it resumes from the
    /// first unfinished step and never applies a step twice.
    ///
    /// ```swift
    /// let report = try engine.migrate(
    ///     guest: guest.id, to: account.id, resuming: false, now: now,
    ///     takeBackup: { users in try backUp(users) })  // returns the backup's path
    /// // report.conflicts, report.overCap
    /// ```
    public func migrate(
        guest: String, to account: String, resuming: Bool, now: Date,
        takeBackup: ([String]) throws -> String,
        progress: (JournalStep, Int) -> Void = { _, _ in },
        checkpoint: (MigrationCheckpoint) throws -> Void = { _ in }
    ) throws -> MigrationReport {
        try TextRule.check(["the guest's id": guest, "the account's id": account])
        let unfinished = try unfinishedMigration(of: guest, into: account)
        let steps = transferSteps
        let journalID: Int64
        switch (unfinished, resuming) {
        case (let id?, false):
            throw unfinishedMigrationConflict(id, guest: guest, account: account)
        case (nil, true):
            throw GuestModeError(
                .nothingToResume, "no unfinished migration of '\(guest)' into '\(account)' to resume")
        case (let id?, true):
            journalID = id
            try store.write { try $0.countJournalResume(id) }
        case (nil, false):
            do {
                try checkTransfer(of: guest, into: account)
                let backupPath = try takeBackup([guest, account])
                try checkpoint(.backupTaken)
                journalID = try startMigration(
                    of: guest, into: account, steps: steps.map(\.name), backupPath: backupPath, now: now)
            } catch let error as GuestModeError where error.code == .migrationUnfinished {
                // Another process started the same migration after our first look.
                if let id = try unfinishedMigration(of: guest, into: account) {
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
        for journalStep in try journal(journalID).steps where journalStep.status != .done {
            guard journalStep.position <= steps.count, steps[journalStep.position - 1].name == journalStep.name else {
                throw GuestModeError(
                    .journalMismatch,
                    "migration #\(journalID) was planned with other steps than the profile now declares; it cannot resume"
                )
            }
            let step = steps[journalStep.position - 1]
            do {
                try checkpoint(.stepStarting(position: journalStep.position))
                if let done = try runMigrationStep(
                    step, position: journalStep.position, journalID: journalID, now: now)
                {
                    conflicts += done.conflicts
                    progress(done.step, steps.count)
                    try checkpoint(.stepDone(position: done.step.position))
                }
            } catch {
                try? failMigration(
                    journalID: journalID, position: journalStep.position,
                    reason: "step \(journalStep.position) \(step.name): \(error)")
                // The journal and the steps before this one are committed:
                // "try again" would be refused as unfinished, so say what
                // is kept and that the journal resumes.
                if let failure = error as? GuestModeError, failure.kind == .tryAgainLater {
                    let done = journalStep.position - 1
                    throw GuestModeError(
                        .migrationInterrupted,
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
        GuestModeError(
            .migrationUnfinished,
            "migration #\(id) of '\(guest)' into '\(account)' is unfinished: another guestmode process may be running it now; if none is, resume it"
        )
    }

    /// Throws a conflict (14) when `guest` was already migrated into `account`.
    private func refuseFinishedMigration(of guest: String, into account: String) throws {
        let finished = try journals(involving: guest).last {
            $0.kind == .guestToAccount && $0.source == guest && $0.target == account && $0.status == .done
        }
        guard let finished else { return }
        throw GuestModeError(
            .alreadyMigrated,
            "'\(guest)' was already migrated into '\(account)' by migration #\(finished.id)\(finished.finishedAt.map { " at \(Timestamp.format($0))" } ?? ""); there is nothing left to move"
        )
    }

    /// The migration journal with this id.
    public func journal(_ id: Int64) throws -> MigrationJournal {
        guard let journal = try store.read({ try $0.migrationJournal(id: id, locking: false) }) else {
            throw journalNotFound(id)
        }
        return journal
    }

    /// Journals of every migration and merge, oldest first, or of those
    /// involving `user`.
    public func journals(involving user: String?) throws -> [MigrationJournal] {
        try store.read { try $0.migrationJournals(involving: user) }
    }

    private func journalNotFound(_ id: Int64) -> GuestModeError {
        GuestModeError(.journalNotFound, "no migration journal #\(id)")
    }

    // MARK: The journaled steps

    /// The newest guest → account journal of this pair that is not done.
    func unfinishedMigration(of guest: String, into account: String) throws -> Int64? {
        try store.read { try $0.unfinishedMigration(of: guest, into: account) }
    }

    /// Refuses a pair that cannot be moved: an unknown guest or account
    /// (`user_not_found`), the same user twice, or a guest that has a linked
    /// identity (`User.checkCanMove(into:)`). Changes nothing.
    func checkTransfer(of guest: String, into account: String) throws {
        try store.read { _ = try $0.transferPair(guest: guest, account: account, locking: false) }
    }

    /// What each of `steps` would move now, with the checks of
    /// `checkTransfer`; changes nothing. Conflicts are settled as a union
    /// merge under the profile's collection rules.
    func previewTransfer(
        of guest: String, into account: String, steps: [TransferStep]
    ) throws
        -> [TransferStepPreview]
    {
        try store.read { transaction in
            _ = try transaction.transferPair(guest: guest, account: account, locking: false)
            let transfer = Transfer(
                transaction: transaction, profile: profile, guest: guest, account: account, now: .distantPast)
            return try steps.map { step in
                var rows = 0
                if step.movesActivity { rows += try transfer.activityCount() }
                rows += try transfer.recordCount(step.collections)
                if step.removesGuest { rows += 1 }
                return TransferStepPreview(
                    rows: rows, conflicts: try transfer.conflicts(in: step.collections, policy: .union))
            }
        }
    }

    /// Starts a `running` journal with one `pending` entry per step name, in
    /// order (positions from 1). Refuses what `checkTransfer` refuses, and a
    /// pair that already has an unfinished migration
    /// (`migration_unfinished`), so two runs never interleave.
    func startMigration(
        of guest: String, into account: String, steps: [String], backupPath: String, now: Date
    ) throws -> Int64 {
        try store.write { transaction in
            // Both users locked first: two processes starting the same pair take turns, and the
            // second sees the first's journal below.
            _ = try transaction.transferPair(guest: guest, account: account, locking: true)
            if let id = try transaction.unfinishedMigration(of: guest, into: account) {
                throw GuestModeError(
                    .migrationUnfinished,
                    "migration #\(id) of '\(guest)' into '\(account)' is unfinished; resume it instead of starting another"
                )
            }
            return try transaction.createJournal(
                kind: .guestToAccount, source: guest, target: account, status: .running, backupPath: backupPath,
                startedAt: now, finishedAt: nil, steps: steps, stepStatus: .pending)
        }
    }

    /// Runs the journal's step at `position` and marks it done in the same
    /// durable transaction; the journal is done once no step is pending.
    /// Returns nil when the step was already done (by an earlier run or
    /// another process) and changes nothing then. Refuses an unknown journal
    /// (`journal_not_found`) and a position whose journaled name is not
    /// `step.name` (`journal_mismatch`). A failing step rolls back whole,
    /// its journal entry included.
    func runMigrationStep(
        _ step: TransferStep, position: Int, journalID: Int64, now: Date
    ) throws -> MigrationStepResult? {
        try store.write(durable: true) { transaction in
            guard let planned = try transaction.migrationJournal(id: journalID, locking: false) else {
                throw journalNotFound(journalID)
            }
            // Both users (those still there: cleanup removes the guest) in id order, then the journal:
            // another process running this journal waits here, and reads the step's status below only
            // once it has committed, so a step never runs twice.
            _ = try transaction.existingUsers([planned.source, planned.target], locking: true)
            guard let journal = try transaction.migrationJournal(id: journalID, locking: true) else {
                throw journalNotFound(journalID)
            }
            guard let entry = journal.steps.first(where: { $0.position == position }), entry.name == step.name else {
                throw GuestModeError(
                    .journalMismatch,
                    "migration #\(journalID) has no step \(position) named '\(step.name)'; it cannot run that step")
            }
            guard entry.status != .done else { return nil }
            try transaction.setJournalStatus(journalID, to: .running, error: nil)
            let transfer = Transfer(
                transaction: transaction, profile: profile, guest: journal.source, account: journal.target, now: now,
                journalID: journalID)
            var rows = 0
            var conflicts: [RecordConflict] = []
            if step.movesActivity { rows += try transfer.moveActivity() }
            if !step.collections.isEmpty {
                let moved = try transfer.moveRecords(step.collections, policy: .union)
                rows += moved.moved + moved.conflicts.count
                conflicts = moved.conflicts
            }
            if step.removesGuest { rows += try transfer.removeGuest() }
            try transaction.setJournalStep(journalID: journalID, position: position, to: .done, rows: rows, at: now)
            if journal.steps.allSatisfy({ $0.position == position || $0.status == .done }) {
                try transaction.setJournalStatus(journalID, to: .done, error: nil)
                try transaction.setJournalFinishTime(journalID, to: now)
                try transaction.raiseWebhook(
                    .userMigrated, user: journal.source,
                    data: ["account_user_id": .string(journal.target), "journal_id": .number(String(journalID))],
                    at: now, profile: profile)
            }
            return MigrationStepResult(
                step: JournalStep(position: position, name: step.name, status: .done, rows: rows, finishedAt: now),
                conflicts: conflicts)
        }
    }

    /// Marks the journal failed with `reason` and counts a failure of its
    /// step at `position` (none when nil); the next run resumes it.
    func failMigration(journalID: Int64, position: Int?, reason: String) throws {
        try store.write { transaction in
            try transaction.setJournalStatus(journalID, to: .failed, error: reason)
            if let position { try transaction.countStepFailure(journalID: journalID, position: position) }
        }
    }
}

/// What one journaled step did.
package struct MigrationStepResult: Codable, Sendable, Equatable {
    /// The journal entry as it was committed.
    package var step: JournalStep
    /// Keys both users held in the step's collections, each as it was settled.
    package var conflicts: [RecordConflict]

    package init(step: JournalStep, conflicts: [RecordConflict]) {
        self.step = step
        self.conflicts = conflicts
    }
}

extension CollectionLimit {
    /// True when the user holds more records than the cap allows (after a
    /// merge or migration: nothing is dropped to fit, new records are refused).
    public var isOverCap: Bool { cap.map { (used ?? 0) > $0 } ?? false }
}

extension MigrationRows {
    /// The newest guest → account journal of this pair that is not done.
    func unfinishedMigration(of guest: String, into account: String) throws -> Int64? {
        try newestJournal(kind: .guestToAccount, from: guest, into: account, statusOtherThan: .done)
    }
}
