import Foundation

/// Guest → account migrations, journaled step by step so that a migration
/// killed at any point resumes from its first unfinished step and never
/// applies a step twice. Each method is one whole use case in one
/// transaction; a step's data move and its journal entry commit together.
public protocol MigrationJournalStore: Sendable {
    /// The newest guest → account journal of this pair that is not done.
    func unfinishedMigration(of guest: String, into account: String) throws -> Int64?

    /// Starts a `running` journal with one `pending` entry per step name,
    /// in order (positions from 1). Refuses what `checkTransfer` refuses,
    /// and a pair that already has an unfinished migration
    /// (`migration_unfinished`), so two runs never interleave.
    func startMigration(
        of guest: String, into account: String, steps: [String], backupPath: String, now: Date
    ) throws
        -> Int64

    /// Runs the journal's step at `position` and marks it done in the same
    /// transaction; the journal is done once no step is pending. Returns nil
    /// when the step was already done (by an earlier run or another
    /// process) and changes nothing then. Refuses an unknown journal
    /// (`journal_not_found`) and a position whose journaled name is not
    /// `step.name` (`journal_mismatch`). A failing step rolls back whole,
    /// its journal entry included.
    func runMigrationStep(
        _ step: TransferStep, position: Int, journalID: Int64, profile: Profile, now: Date
    ) throws
        -> MigrationStepResult?

    /// Marks the journal failed with `reason`; the next run resumes it.
    func failMigration(journalID: Int64, reason: String) throws

    /// One journal with its steps, or nil.
    func migrationJournal(id: Int64) throws -> MigrationJournal?

    /// Journals of every migration and merge, oldest first, or of those
    /// where `user` is the source or the target.
    func migrationJournals(involving user: String?) throws -> [MigrationJournal]
}

/// What one journaled step did.
public struct MigrationStepResult: Codable, Sendable, Equatable {
    /// The journal entry as it was committed.
    public var step: JournalStep
    public var conflicts: [RecordConflict]

    public init(step: JournalStep, conflicts: [RecordConflict]) {
        self.step = step
        self.conflicts = conflicts
    }
}
