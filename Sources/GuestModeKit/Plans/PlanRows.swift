import Foundation

/// The plan rows of one transaction (see `StoreTransaction`).
package protocol PlanRows {
    /// Every plan grant the user ever held, oldest first (by grant time,
    /// then by insertion).
    func planGrants(of userID: String) throws -> [PlanGrant]

    /// Stores one more grant of the user, as given.
    func addPlanGrant(_ grant: PlanGrant, to userID: String) throws

    /// Marks every grant of `plan` the user holds that is not revoked yet as
    /// revoked at `time`, and returns how many it marked.
    func revokePlanGrants(of userID: String, plan: String, at time: Date) throws -> Int
}
