import Foundation

/// A store whose every transaction is part of one already open
/// (`GuestMode.answerOnce`): a write or a rehearsal runs in a savepoint of
/// it, so a throw undoes only what that call wrote, and a read reads it.
/// Whatever is not a transaction (the profile binding, schema work, backup
/// and copy streams) is refused: it would need a transaction of its own.
/// Used only on the thread that runs the open transaction.
struct TransactionScope: GuestStore, @unchecked Sendable {
    /// Thrown by a durable write inside a scope whose transaction is not:
    /// the caller runs everything again in a durable one.
    struct NeedsDurableCommit: Error {}

    let base: any GuestStore
    let transaction: any StoreTransaction
    let isDurable: Bool

    func write<T>(durable: Bool, _ body: (any StoreTransaction) throws -> T) throws -> T {
        if durable && !isDurable { throw NeedsDurableCommit() }
        return try transaction.savepoint { try body(transaction) }
    }

    func rehearse<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        var result: T?
        do {
            try transaction.savepoint {
                result = try body(transaction)
                throw Rehearsal()
            }
        } catch is Rehearsal {}
        guard let result else {
            throw GuestModeError(.internalFailure, "a rehearsed transaction lost its result")
        }
        return result
    }

    func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try body(transaction)
    }

    func bindProfile(text: String, origin: String, now: Date) throws { throw outside("binding a profile") }
    func boundProfile() throws -> (text: String, origin: String)? { throw outside("reading the bound profile") }
    func boundProfileWithCache() throws -> (text: String, origin: String, cache: ProfileCacheEntry?)? {
        throw outside("reading the bound profile")
    }
    func saveProfileCache(_ entry: ProfileCacheEntry) throws { throw outside("keeping the profile's cache") }
    func schemaStatus() throws -> SchemaStatus { throw outside("reading the schema") }
    func applyPendingMigrations(progress: (String) -> Void) throws -> [String] { throw outside("migrating the schema") }
    func integrityProblems() throws -> [String] { throw outside("checking the store") }
    func tableCounts() throws -> [String: Int] { throw outside("counting tables") }

    func readBackupRows<T>(_ body: (any BackupRowSource) throws -> T) throws -> T {
        throw outside("exporting a backup")
    }

    func importBackupRows<T>(dryRun: Bool, _ body: (any BackupRowImport) throws -> T) throws -> T {
        throw outside("importing a backup")
    }

    func readStoreTables<T>(_ body: (any StoreTableSnapshot) throws -> T) throws -> T {
        throw outside("copying the store")
    }

    func replaceOwnTableRows(_ body: (any StoreTableWriter) throws -> Void) throws {
        throw outside("copying the store")
    }

    private func outside(_ work: String) -> GuestModeError {
        GuestModeError(
            .internalFailure,
            "\(work) needs a transaction of its own and cannot be part of an answer kept for an idempotency key")
    }
}

/// Ends a rehearsal's savepoint with a rollback.
private struct Rehearsal: Error {}
