import Foundation
import GuestModeKit

// Pending: replaced by PostgresStore+ExperimentStore.swift when the area is ported; never shipped.
extension PostgresStore: ExperimentStore {
    public func storedAssignment(userID: String, experiment: String) throws -> StoredAssignment? {
        throw PostgresStore.pending("ExperimentStore")
    }

    public func storeAssignment(userID: String, experiment: String, variant: String, at: Date) throws -> StoredAssignment {
        throw PostgresStore.pending("ExperimentStore")
    }

    public func replaceAssignment(userID: String, experiment: String, variant: String, at: Date) throws -> StoredAssignment {
        throw PostgresStore.pending("ExperimentStore")
    }

    public func userExists(_ userID: String) throws -> Bool {
        throw PostgresStore.pending("ExperimentStore")
    }
}
