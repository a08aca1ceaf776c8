import Foundation
import GuestModeKit

/// What a verified App Store payload means for a plan: the engine's
/// `StorePlanChange`, or nothing to change.
///
/// ```swift
/// switch try AppStorePlanChanges.change(for: notification, profile: engine.profile) {
/// case .change(let change): _ = try engine.applyStorePlanChange(change, now: now)
/// case .acknowledged(let reason): logger.info("\(reason)")
/// }
/// ```
public enum AppStorePlanChanges {
    /// A change to apply, or why there is none.
    public enum Decision: Sendable, Equatable {
        /// Apply it.
        case change(StorePlanChange)
        /// Nothing changes (a notification type guestmode does not act on, a product no plan is mapped to).
        case acknowledged(String)
    }

    /// A transaction the device sent (`POST /v1/users/{user}/purchases`):
    /// applied once per transaction and signing, for `userID`, which the
    /// transaction's appAccountToken, when it has one, must name.
    ///
    /// ```swift
    /// let change = try AppStorePlanChanges.change(for: transaction, user: userID, profile: engine.profile)
    /// ```
    public static func change(
        for transaction: AppStoreTransaction, user userID: String, profile: Profile
    ) throws
        -> StorePlanChange
    {
        if let token = transaction.appAccountToken, token.lowercased() != userID.lowercased() {
            throw GuestModeError(
                .purchaseUserMismatch,
                "the transaction was bought for another user (its appAccountToken is not '\(userID)'); send it as that user, or buy with appAccountToken set to this user's id"
            )
        }
        guard let plan = profile.plan(appStoreProduct: transaction.productId) else {
            throw GuestModeError(
                .unknownProduct,
                "no plan of profile \(profile.name) lists the App Store product '\(transaction.productId)'; add it to a plan's app_store_products"
            )
        }
        return StorePlanChange(
            source: .appStore, eventID: "\(transaction.transactionId)@\(transaction.signedDate)",
            originalTransactionID: transaction.originalTransactionId, transactionID: transaction.transactionId,
            signedAt: transaction.signedDate.appStoreDate,
            environment: AppStoreVerifier.environment(transaction.environment), users: [userID],
            kind: kind(of: transaction, plan: plan.name))
    }

    /// A notification Apple posted (`POST /v1/integrations/app-store`),
    /// applied once per notificationUUID, for the user its transaction's
    /// appAccountToken names, else the subscription's recorded owner.
    ///
    /// ```swift
    /// let decision = AppStorePlanChanges.change(for: notification, profile: engine.profile)
    /// ```
    public static func change(for notification: AppStoreNotification, profile: Profile) -> Decision {
        let type = notification.notificationType
        guard let transaction = notification.transaction else {
            return .acknowledged("\(type) carries no transaction")
        }
        guard let plan = profile.plan(appStoreProduct: transaction.productId)?.name else {
            return .acknowledged("\(type) is for the product '\(transaction.productId)', which no plan lists")
        }
        let kind: StorePlanChange.Kind
        switch type {
        case "SUBSCRIBED", "DID_RENEW", "RENEWAL_EXTENDED", "DID_CHANGE_RENEWAL_STATUS", "OFFER_REDEEMED":
            // Turning renewal off keeps the plan until the period ends, as the transaction says.
            kind = self.kind(of: transaction, plan: plan)
        case "DID_FAIL_TO_RENEW":
            if let grace = notification.renewalInfo?.gracePeriodExpiresDate {
                kind = .gracePeriod(plan: plan, until: grace.appStoreDate)
            } else {
                // Billing retry without a grace period: no service until a renewal succeeds.
                kind = .expire(plan: plan)
            }
        case "GRACE_PERIOD_EXPIRED", "EXPIRED":
            kind = .expire(plan: plan)
        case "REFUND", "REVOKE":
            kind = .revoke(plan: plan)
        default:
            return .acknowledged("\(type) changes no plan")
        }
        var users: [String] = []
        if let token = transaction.appAccountToken { users.append(token.lowercased()) }
        return .change(
            StorePlanChange(
                source: .appStore, eventID: notification.notificationUUID.lowercased(),
                originalTransactionID: transaction.originalTransactionId, transactionID: transaction.transactionId,
                signedAt: notification.signedDate,
                environment: AppStoreVerifier.environment(notification.environment ?? transaction.environment),
                users: users, kind: kind))
    }

    /// A transaction's own word: revoked, or in force until it expires (a free trial as a trial).
    private static func kind(of transaction: AppStoreTransaction, plan: String) -> StorePlanChange.Kind {
        if transaction.revocationDate != nil { return .revoke(plan: plan) }
        return .activate(
            plan: plan, expiresAt: transaction.expiresDate?.appStoreDate,
            trial: transaction.isFreeTrial && transaction.expiresDate != nil)
    }
}
