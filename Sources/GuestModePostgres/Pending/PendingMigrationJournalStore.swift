import Foundation
import GuestModeKit

// Pending: replaced by PostgresStore+MigrationJournalStore.swift when the area is ported; never shipped.
extension PostgresStore: MigrationJournalStore {
    public func unfinishedMigration(of guest: String, into account: String) throws -> Int64? {
        throw PostgresStore.pending("MigrationJournalStore")
    }

    public func startMigration(of guest: String, into account: String, steps: [String], backupPath: String, now: Date) throws -> Int64 {
        throw PostgresStore.pending("MigrationJournalStore")
    }

    public func runMigrationStep(_ step: TransferStep, position: Int, journalID: Int64, profile: Profile, now: Date) throws -> MigrationStepResult? {
        throw PostgresStore.pending("MigrationJournalStore")
    }

    public func failMigration(journalID: Int64, reason: String) throws {
        throw PostgresStore.pending("MigrationJournalStore")
    }

    public func migrationJournal(id: Int64) throws -> MigrationJournal? {
        throw PostgresStore.pending("MigrationJournalStore")
    }

    public func migrationJournals(involving user: String?) throws -> [MigrationJournal] {
        throw PostgresStore.pending("MigrationJournalStore")
    }
}
