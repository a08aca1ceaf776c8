import Foundation

/// The experiment assignment rows of one transaction (see
/// `StoreTransaction`).
package protocol ExperimentRows {
    /// The user's stored assignment to `experiment`, or nil; `isNew` is false.
    func assignment(of userID: String, experiment: String) throws -> StoredAssignment?

    /// Stores the assignment unless the user has one to `experiment`: then
    /// nothing changes and the result is false. A concurrent first
    /// assignment makes this wait for it and then change nothing.
    func addAssignment(of userID: String, experiment: String, variant: String, at time: Date) throws -> Bool

    /// Stores the assignment, replacing the user's assignment to
    /// `experiment` if there is one.
    func upsertAssignment(of userID: String, experiment: String, variant: String, at time: Date) throws
}
