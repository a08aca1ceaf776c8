import Foundation
import Synchronization

@testable import GuestModeKit

/// A store that counts the transactions the engine opens on it, so a test
/// can say what a call costs ("a refused use is one write").
final class CountingStore: GuestStore, Sendable {
    /// Transactions opened so far, by kind.
    struct Counts: Equatable, CustomStringConvertible {
        var writes = 0
        var reads = 0
        var description: String { "\(writes) writes, \(reads) reads" }
    }

    let base: any GuestStore
    private let counts = Mutex(Counts())

    init(_ base: any GuestStore) { self.base = base }

    /// The transactions `body` opened.
    func counting(_ body: () throws -> Void) throws -> Counts {
        let before = counts.withLock { $0 }
        try body()
        let after = counts.withLock { $0 }
        return Counts(writes: after.writes - before.writes, reads: after.reads - before.reads)
    }

    func write<T>(durable: Bool, _ body: (any StoreTransaction) throws -> T) throws -> T {
        counts.withLock { $0.writes += 1 }
        return try base.write(durable: durable, body)
    }

    func rehearse<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        counts.withLock { $0.writes += 1 }
        return try base.rehearse(body)
    }

    func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        counts.withLock { $0.reads += 1 }
        return try base.read(body)
    }

    func bindProfile(text: String, origin: String, now: Date) throws {
        try base.bindProfile(text: text, origin: origin, now: now)
    }
    func boundProfile() throws -> (text: String, origin: String)? { try base.boundProfile() }
    func boundProfileWithCache() throws -> BoundProfile? {
        try base.boundProfileWithCache()
    }
    func saveProfileCache(_ entry: ProfileCacheEntry) throws { try base.saveProfileCache(entry) }
    func schemaStatus() throws -> SchemaStatus { try base.schemaStatus() }
    func applyPendingMigrations(progress: (String) -> Void) throws -> [String] {
        try base.applyPendingMigrations(progress: progress)
    }
    func integrityProblems() throws -> [String] { try base.integrityProblems() }
    func tableCounts() throws -> [String: Int] { try base.tableCounts() }
    func readBackupRows<T>(_ body: (any BackupRowSource) throws -> T) throws -> T { try base.readBackupRows(body) }
    func importBackupRows<T>(dryRun: Bool, _ body: (any BackupRowImport) throws -> T) throws -> T {
        try base.importBackupRows(dryRun: dryRun, body)
    }
    func readStoreTables<T>(_ body: (any StoreTableSnapshot) throws -> T) throws -> T {
        try base.readStoreTables(body)
    }
    func replaceOwnTableRows(_ body: (any StoreTableWriter) throws -> Void) throws {
        try base.replaceOwnTableRows(body)
    }
}
