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

    /// Thrown by a write inside a read-only scope: the caller runs
    /// everything again in a write transaction.
    struct NeedsWrite: Error {}

    /// Thrown when a write of a scope without savepoints failed and the
    /// answer went on: what it half wrote cannot be undone alone, so the
    /// caller rolls everything back and runs it again with savepoints.
    struct NeedsSavepoints: Error {}

    /// How a write inside the scope runs.
    enum Writes {
        /// In a savepoint: a throw undoes only that write.
        case savepoints
        /// Straight in the transaction, whose caller rolls it all back on a
        /// throw (a failed write that the answer survived is `NeedsSavepoints`).
        case direct
        /// Not at all: the transaction is a read (`NeedsWrite`).
        case refused
    }

    /// What the scope saw that its transaction could not give; read by the
    /// caller once the answer returned, in case the answer caught the throw.
    final class Misses: @unchecked Sendable {
        var durable = false
        var write = false
        var savepoint = false

        func clear() {
            durable = false
            write = false
            savepoint = false
        }

        /// The error to run everything again for, if any.
        var retry: (any Error)? {
            if write { return NeedsWrite() }
            if durable { return NeedsDurableCommit() }
            if savepoint { return NeedsSavepoints() }
            return nil
        }
    }

    let base: any GuestStore
    let transaction: any StoreTransaction
    let isDurable: Bool
    var writes = Writes.savepoints
    var misses = Misses()

    func write<T>(durable: Bool, _ body: (any StoreTransaction) throws -> T) throws -> T {
        switch writes {
        case .refused:
            misses.write = true
            throw NeedsWrite()
        case _ where durable && !isDurable:
            misses.durable = true
            throw NeedsDurableCommit()
        case .savepoints:
            return try transaction.savepoint { try body(transaction) }
        case .direct:
            do {
                return try body(transaction)
            } catch {
                misses.savepoint = true
                throw error
            }
        }
    }

    func rehearse<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        if writes == .refused {
            misses.write = true
            throw NeedsWrite()
        }
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
    func boundProfileWithCache() throws -> BoundProfile? {
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
