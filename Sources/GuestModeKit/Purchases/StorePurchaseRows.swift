import Foundation

/// One subscription a store reported, as the store keeps it: whose it is,
/// its plan, and the newest signed date applied to it, so an older
/// notification is told from a newer one.
package struct StorePurchase: Sendable, Equatable {
    package var source: StorePlanChange.Source
    package var originalTransactionID: String
    package var userID: String
    package var plan: String
    /// The signed or event date of the newest change applied.
    package var signedAt: Date
    /// The transaction or event that made that change (what `plan status` shows).
    package var transactionID: String
    package var environment: StorePlanChange.Environment
    /// When the plan grant that change made was stored; nil when it made none
    /// (an expiry, a revocation).
    package var grantedAt: Date?

    package init(
        source: StorePlanChange.Source, originalTransactionID: String, userID: String, plan: String, signedAt: Date,
        transactionID: String, environment: StorePlanChange.Environment, grantedAt: Date?
    ) {
        self.source = source
        self.originalTransactionID = originalTransactionID
        self.userID = userID
        self.plan = plan
        self.signedAt = signedAt
        self.transactionID = transactionID
        self.environment = environment
        self.grantedAt = grantedAt
    }
}

/// The store-purchase rows of one transaction (see `StoreTransaction`).
package protocol StorePurchaseRows {
    /// Notes that the store event was applied; false when it already was
    /// (the pair is unique), and then nothing is written.
    func claimStoreEvent(
        source: StorePlanChange.Source, eventID: String, originalTransactionID: String, outcome: String, at time: Date
    ) throws -> Bool

    /// The subscription as last applied, if any.
    func storePurchase(source: StorePlanChange.Source, originalTransactionID: String) throws -> StorePurchase?

    /// Every subscription a user holds, of every source, oldest first.
    func storePurchases(of userID: String) throws -> [StorePurchase]

    /// Inserts or replaces the subscription's row.
    func putStorePurchase(_ purchase: StorePurchase) throws

    /// Ends every grant of `plan` the user holds that is in force at `time`
    /// and not revoked: its trial end or end becomes `time`. Returns how many
    /// it ended.
    func endPlanGrants(of userID: String, plan: String, at time: Date) throws -> Int
}
