import Foundation

/// The plan rows of one transaction (see `StoreTransaction`).
public protocol PlanRows {
    /// Every plan grant the user ever held, oldest first (by grant time,
    /// then by insertion).
    func planGrants(of userID: String) throws -> [PlanGrant]
}
