import Foundation
import JWTKit

/// A StoreKit 2 transaction as the App Store signs it (Apple's
/// JWSTransactionDecodedPayload): the members guestmode reads; the others are
/// left alone, so a member Apple adds later is no failure.
///
/// ```swift
/// let transaction = try await verifier.transaction(signedTransaction)
/// transaction.productId  // "com.example.voice.premium.monthly"
/// ```
public struct AppStoreTransaction: JWTPayload, Equatable {
    /// The transaction's id: one per purchase or renewal.
    public var transactionId: String
    /// The subscription's first transaction: the same for every renewal.
    public var originalTransactionId: String
    /// The product bought, mapped to a plan by `app_store_products`.
    public var productId: String
    /// The app the transaction belongs to.
    public var bundleId: String
    /// Milliseconds since 1970, as Apple writes every date.
    public var purchaseDate: Int64?
    /// When the subscription was first bought.
    public var originalPurchaseDate: Int64?
    /// When the period paid (or the trial) ends.
    public var expiresDate: Int64?
    /// 1 introductory, 2 promotional, 3 offer code, 4 win-back.
    public var offerType: Int?
    /// FREE_TRIAL, PAY_AS_YOU_GO or PAY_UP_FRONT.
    public var offerDiscountType: String?
    /// The UUID the app set at purchase: guestmode's user id.
    public var appAccountToken: String?
    /// When the App Store refunded or revoked the transaction; nil unless it did.
    public var revocationDate: Int64?
    /// 0 for another reason, 1 for an issue in the app.
    public var revocationReason: Int?
    /// When the App Store signed the payload: the chain is checked then.
    public var signedDate: Int64
    /// Production, Sandbox, Xcode or LocalTesting.
    public var environment: String
    /// "Auto-Renewable Subscription", "Non-Renewing Subscription", "Non-Consumable", "Consumable".
    public var type: String?
    /// PURCHASED or FAMILY_SHARED.
    public var inAppOwnershipType: String?
    /// PURCHASE or RENEWAL.
    public var transactionReason: String?

    /// Every member is checked by `AppStoreVerifier`, not here: the chain and the signature are jwt-kit's.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}

    /// A free trial: an introductory offer at no charge (older payloads name no discount type).
    public var isFreeTrial: Bool {
        offerDiscountType == "FREE_TRIAL" || (offerType == 1 && offerDiscountType == nil)
    }
}

/// The renewal state of a subscription as the App Store signs it (Apple's
/// JWSRenewalInfoDecodedPayload), the members guestmode reads.
public struct AppStoreRenewalInfo: JWTPayload, Equatable {
    /// The subscription's first transaction.
    public var originalTransactionId: String
    /// The product of the current period.
    public var productId: String?
    /// The product the next period renews to.
    public var autoRenewProductId: String?
    /// 1 when the subscription renews, 0 when the person turned renewal off.
    public var autoRenewStatus: Int?
    /// When the billing grace period ends: the plan stays in force until then.
    public var gracePeriodExpiresDate: Int64?
    /// True while the App Store retries the payment.
    public var isInBillingRetryPeriod: Bool?
    /// Why the subscription expired (1 cancelled, 2 billing error, ...).
    public var expirationIntent: Int?
    /// When the App Store signed the payload.
    public var signedDate: Int64
    /// Production or Sandbox.
    public var environment: String

    /// See `AppStoreTransaction.verify(using:)`.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// An App Store Server Notification V2 (Apple's responseBodyV2DecodedPayload)
/// with its inner transaction and renewal info as signed.
struct AppStoreNotificationPayload: JWTPayload {
    struct Data: Codable, Sendable {
        var bundleId: String?
        var environment: String?
        var signedTransactionInfo: String?
        var signedRenewalInfo: String?
        var status: Int?
    }

    var notificationType: String
    var subtype: String?
    var notificationUUID: String
    var data: Data?
    var version: String?
    var signedDate: Int64

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// A verified notification: what Apple said, and the transaction and renewal
/// info it carried, each verified as the notification was.
///
/// ```swift
/// let notification = try await verifier.notification(signedPayload)
/// notification.notificationType  // "DID_RENEW"
/// ```
public struct AppStoreNotification: Sendable, Equatable {
    /// SUBSCRIBED, DID_RENEW, EXPIRED, REFUND, ...
    public var notificationType: String
    /// INITIAL_BUY, GRACE_PERIOD, VOLUNTARY, ...; nil when Apple gives none.
    public var subtype: String?
    /// Apple's id of the notification: a retry carries the same.
    public var notificationUUID: String
    /// When Apple signed it.
    public var signedDate: Date
    /// Production or Sandbox.
    public var environment: String?
    /// The transaction, when the notification carries one.
    public var transaction: AppStoreTransaction?
    /// The renewal info, when the notification carries it.
    public var renewalInfo: AppStoreRenewalInfo?
}

/// The JWS header members the verifier reads before anything else.
struct JWSHeader: Decodable {
    var alg: String?
    var x5c: [String]?
}

extension Int64 {
    /// Apple's milliseconds since 1970 as a date.
    var appStoreDate: Date { Date(timeIntervalSince1970: TimeInterval(self) / 1000) }
}
