import Foundation
import GuestModeKit

// Pending: replaced by PostgresStore+BackupRowStore.swift when the area is ported; never shipped.
extension PostgresStore: BackupRowStore {
    public func readBackupRows<T>(_ selection: BackupSelection, guestOwner: String, _ body: (any BackupRowSnapshot) throws -> T) throws -> T {
        throw PostgresStore.pending("BackupRowStore")
    }

    public func importBackupRows<T>(dryRun: Bool, _ body: (any BackupRowImport) throws -> T) throws -> T {
        throw PostgresStore.pending("BackupRowStore")
    }
}
