import Crypto
import Foundation
import SwiftASN1
import X509

/// The tests' own App Store: a root, an intermediate and a leaf made at test time (never Apple's real
/// root), with Apple's marker extensions, and JWS signed the way the App Store signs them: ES256, the
/// x5c chain (leaf, intermediate, root) in the header, members named as Apple documents them.
struct AppStoreChain {
    let root: Certificate
    let intermediate: Certificate
    let leaf: Certificate
    let leafKey: P256.Signing.PrivateKey

    static let bundleID = "com.example.voice"
    static let product = "com.example.voice.premium.monthly"

    /// A chain valid from `from` to `until`; the leaf's validity may end sooner (an expired leaf).
    init(
        from: Date = date("2026-01-01T00:00:00Z"), until: Date = date("2030-01-01T00:00:00Z"), leafUntil: Date? = nil
    )
        throws
    {
        let rootKey = P256.Signing.PrivateKey()
        let intermediateKey = P256.Signing.PrivateKey()
        leafKey = P256.Signing.PrivateKey()
        let rootName = try DistinguishedName { CommonName("guestmode test root CA") }
        let intermediateName = try DistinguishedName { CommonName("guestmode test WWDR intermediate") }
        let leafName = try DistinguishedName { CommonName("guestmode test App Store signing") }
        root = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(rootKey.publicKey), notValidBefore: from,
            notValidAfter: until, issuer: rootName, subject: rootName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: nil))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
            }, issuerPrivateKey: .init(rootKey))
        intermediate = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(intermediateKey.publicKey), notValidBefore: from,
            notValidAfter: until, issuer: rootName, subject: intermediateName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 2, 1], critical: false, value: [0x05, 0x00])
            }, issuerPrivateKey: .init(rootKey))
        leaf = try Certificate(
            version: .v3, serialNumber: .init(), publicKey: .init(leafKey.publicKey), notValidBefore: from,
            notValidAfter: leafUntil ?? until, issuer: intermediateName, subject: leafName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                Certificate.Extension(oid: [1, 2, 840, 113635, 100, 6, 11, 1], critical: false, value: [0x05, 0x00])
            }, issuerPrivateKey: .init(intermediateKey))
    }

    /// The root as `--app-store-root-ca` takes it.
    func rootPEM() throws -> String { try root.serializeAsPEM().pemString }

    /// A compact JWS of `payload` signed by the leaf, with `alg` in the header (only ES256 verifies).
    func sign(_ payload: [String: Any], alg: String = "ES256") throws -> String {
        let chain = try [leaf, intermediate, root].map { Data(try $0.serializeAsPEM().derBytes).base64EncodedString() }
        let header = try JSONSerialization.data(withJSONObject: ["alg": alg, "x5c": chain], options: [.sortedKeys])
        let body = try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys])
        let input = Self.base64URL(header) + "." + Self.base64URL(body)
        let signature = try leafKey.signature(for: Data(input.utf8)).rawRepresentation
        return input + "." + Self.base64URL(signature)
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func date(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    /// Apple's milliseconds since 1970.
    static func milliseconds(_ text: String) -> Int64 { Int64(date(text).timeIntervalSince1970 * 1000) }

    /// A JWSTransactionDecodedPayload of the voice app's premium subscription.
    static func transaction(
        id: String = "2000000000000001", original: String = "2000000000000001", user: String?,
        purchased: String = "2026-11-01T10:00:00Z", expires: String = "2026-12-01T10:00:00Z",
        signed: String = "2026-11-01T10:00:00Z", freeTrial: Bool = false, revoked: String? = nil,
        bundle: String = bundleID, environment: String = "Production"
    ) -> [String: Any] {
        var payload: [String: Any] = [
            "transactionId": id, "originalTransactionId": original, "webOrderLineItemId": "2000000000000100",
            "bundleId": bundle, "productId": product, "subscriptionGroupIdentifier": "21000001",
            "purchaseDate": milliseconds(purchased), "originalPurchaseDate": milliseconds(purchased),
            "expiresDate": milliseconds(expires), "quantity": 1, "type": "Auto-Renewable Subscription",
            "inAppOwnershipType": "PURCHASED", "signedDate": milliseconds(signed), "environment": environment,
            "transactionReason": "PURCHASE", "storefront": "USA", "storefrontId": "143441", "price": 4990,
            "currency": "USD",
        ]
        if let user { payload["appAccountToken"] = user }
        if freeTrial {
            payload["offerType"] = 1
            payload["offerDiscountType"] = "FREE_TRIAL"
        }
        if let revoked {
            payload["revocationDate"] = milliseconds(revoked)
            payload["revocationReason"] = 0
        }
        return payload
    }

    /// A responseBodyV2DecodedPayload carrying `transaction` (and `renewal`), both signed by this chain.
    func notification(
        _ type: String, subtype: String? = nil, uuid: String = UUID().uuidString.lowercased(), signed: String,
        transaction: [String: Any], renewal: [String: Any]? = nil, bundle: String = bundleID
    ) throws -> String {
        var data: [String: Any] = [
            "appAppleId": 1_234_567_890, "bundleId": bundle, "bundleVersion": "42", "environment": "Production",
            "signedTransactionInfo": try sign(transaction), "status": 1,
        ]
        if let renewal { data["signedRenewalInfo"] = try sign(renewal) }
        var payload: [String: Any] = [
            "notificationType": type, "notificationUUID": uuid, "data": data, "version": "2.0",
            "signedDate": Self.milliseconds(signed),
        ]
        if let subtype { payload["subtype"] = subtype }
        return try sign(payload)
    }

    /// A JWSRenewalInfoDecodedPayload.
    static func renewal(
        original: String = "2000000000000001", signed: String, graceUntil: String? = nil
    )
        -> [String: Any]
    {
        var payload: [String: Any] = [
            "originalTransactionId": original, "autoRenewProductId": product, "productId": product,
            "autoRenewStatus": 1, "signedDate": milliseconds(signed), "environment": "Production",
            "recentSubscriptionStartDate": milliseconds("2026-11-01T10:00:00Z"),
        ]
        if let graceUntil {
            payload["gracePeriodExpiresDate"] = milliseconds(graceUntil)
            payload["isInBillingRetryPeriod"] = true
        }
        return payload
    }
}
