import Foundation

/// The experiment assignment rows of one transaction (see `StoreTransaction`).
public protocol ExperimentRows {
    /// The user's stored assignment to `experiment`, or nil (`isNew` false).
    func assignment(of userID: String, to experiment: String) throws -> StoredAssignment?

    /// Stores the assignment unless the user has one to `experiment`; true
    /// when it was stored.
    func insertAssignment(of userID: String, to experiment: String, variant: String, at time: Date) throws -> Bool
}
