import Foundation

/// The plan rows of one transaction (see `StoreTransaction`).
package protocol PlanRows {
    /// Every plan grant the user ever held, oldest first (by grant time,
    /// then by insertion).
    func planGrants(of userID: String) throws -> [PlanGrant]

    /// The user's plan grants that may be in force at `now`, oldest first:
    /// every grant `PlanGrant.status` finds in force then, and any other the
    /// store cannot rule out without decoding it. A grant is left out, not
    /// decoded, only when the time that ends it (its revocation, its trial's
    /// end, else its term's end) is one the store reads as a time at or
    /// before `now`, so a subscriber's past renewals cost little; a time it
    /// cannot read keeps its grant, whose strict decoding then names it.
    func planGrants(of userID: String, mayBeInForceAt now: Date) throws -> [PlanGrant]

    /// Stores one more grant of the user, as given.
    func addPlanGrant(_ grant: PlanGrant, to userID: String) throws

    /// Marks every grant of `plan` the user holds that is not revoked yet as
    /// revoked at `time`, and returns how many it marked.
    func revokePlanGrants(of userID: String, plan: String, at time: Date) throws -> Int
}
