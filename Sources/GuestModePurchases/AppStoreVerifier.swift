import Foundation
import GuestModeKit
import JWTKit
import SwiftASN1
import X509

/// Verifies what the App Store signs, as Apple specifies it: a compact JWS
/// whose header says `ES256` and carries the `x5c` chain (leaf, intermediate,
/// root), the chain leading to the configured root certificate (Apple Root CA
/// - G3 in production; the operator provides it) and valid at the payload's
/// `signedDate`, the leaf's and the intermediate's Apple marker extensions,
/// the signature by the leaf, then the bundle id and the environment.
/// Anything else is `purchase_invalid` (401 over HTTP).
///
/// ```swift
/// let verifier = try AppStoreVerifier(
///     rootCertificate: try Data(contentsOf: rootURL), bundleID: "com.example.voice", acceptsSandbox: false)
/// let transaction = try await verifier.transaction(signedTransaction)
/// ```
public struct AppStoreVerifier: Sendable {
    /// The app's bundle id: a payload of another app is refused.
    public let bundleID: String
    /// Whether Sandbox (and Xcode, LocalTesting) purchases are taken.
    public let acceptsSandbox: Bool
    private let verifier: X5CVerifier

    /// The longest signed text taken: Apple's are a few kilobytes.
    public static let maximumLength = 64 * 1024

    /// A verifier trusting `rootCertificate` (PEM or DER) alone.
    ///
    /// ```swift
    /// let verifier = try AppStoreVerifier(rootCertificate: pem, bundleID: "com.example.voice", acceptsSandbox: true)
    /// ```
    public init(rootCertificate bytes: Data, bundleID: String, acceptsSandbox: Bool) throws {
        let certificate: Certificate
        do {
            if let text = String(data: bytes, encoding: .utf8), text.contains("-----BEGIN CERTIFICATE-----") {
                certificate = try Certificate(pemEncoded: text)
            } else {
                certificate = try Certificate(derEncoded: [UInt8](bytes))
            }
        } catch {
            throw GuestModeError(
                .invalidImportFile,
                "the App Store root certificate is neither a PEM nor a DER X.509 certificate; give Apple Root CA - G3 (AppleRootCA-G3.cer)"
            )
        }
        guard !bundleID.isEmpty else {
            throw GuestModeError(.usage, "the App Store bundle id is empty; give the app's, e.g. com.example.voice")
        }
        self.verifier = try X5CVerifier(rootCertificates: [certificate])
        self.bundleID = bundleID
        self.acceptsSandbox = acceptsSandbox
    }

    /// A signed transaction (StoreKit's `jwsRepresentation`), verified.
    ///
    /// ```swift
    /// let transaction = try await verifier.transaction(jws)  // throws purchase_invalid when forged
    /// ```
    public func transaction(_ jws: String) async throws -> AppStoreTransaction {
        let transaction = try await verified(jws, as: AppStoreTransaction.self, what: "the signed transaction")
        try check(bundleID: transaction.bundleId, environment: transaction.environment, what: "the transaction")
        return transaction
    }

    /// A signed notification (the `signedPayload` Apple posts), verified
    /// with the transaction and renewal info inside it.
    ///
    /// ```swift
    /// let notification = try await verifier.notification(signedPayload)
    /// ```
    public func notification(_ jws: String) async throws -> AppStoreNotification {
        let payload = try await verified(jws, as: AppStoreNotificationPayload.self, what: "the notification")
        if let data = payload.data {
            try check(
                bundleID: data.bundleId ?? bundleID, environment: data.environment ?? "Production",
                what: "the notification")
        }
        var transaction: AppStoreTransaction?
        if let signed = payload.data?.signedTransactionInfo {
            transaction = try await self.transaction(signed)
        }
        var renewal: AppStoreRenewalInfo?
        if let signed = payload.data?.signedRenewalInfo {
            let info = try await verified(signed, as: AppStoreRenewalInfo.self, what: "the signed renewal info")
            try check(bundleID: nil, environment: info.environment, what: "the renewal info")
            if let transaction, info.originalTransactionId != transaction.originalTransactionId {
                throw invalid("the notification's renewal info and transaction name different subscriptions")
            }
            renewal = info
        }
        return AppStoreNotification(
            notificationType: payload.notificationType, subtype: payload.subtype,
            notificationUUID: payload.notificationUUID, signedDate: payload.signedDate.appStoreDate,
            environment: payload.data?.environment, transaction: transaction, renewalInfo: renewal)
    }

    /// The environment a verified payload names, as the engine records it.
    static func environment(_ name: String) -> StorePlanChange.Environment {
        name == "Production" ? .production : .sandbox
    }

    private func check(bundleID: String?, environment: String, what: String) throws {
        if let bundleID, bundleID != self.bundleID {
            throw invalid("\(what) is for another app: its bundleId is not the one this server takes")
        }
        guard ["Production", "Sandbox", "Xcode", "LocalTesting"].contains(environment) else {
            throw invalid("\(what) names no known environment")
        }
        if environment != "Production" && !acceptsSandbox {
            throw GuestModeError(
                .storeEnvironmentRefused,
                "\(what) was made in the App Store's \(environment) environment, which this server does not take; start it with --app-store-sandbox to take test purchases"
            )
        }
    }

    /// Verifies the JWS and decodes its payload; every failure is `purchase_invalid`.
    private func verified<Payload: JWTPayload>(
        _ jws: String, as _: Payload.Type, what: String
    ) async throws
        -> Payload
    {
        guard jws.utf8.count <= Self.maximumLength else {
            throw invalid("\(what) is longer than \(Self.maximumLength) bytes")
        }
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Data(base64URL: parts[0]),
            let header = try? JSONDecoder().decode(JWSHeader.self, from: headerBytes),
            let payloadBytes = Data(base64URL: parts[1])
        else {
            throw invalid("\(what) is not a compact JWS (header.payload.signature, base64url)")
        }
        guard header.alg == "ES256" else {
            throw invalid("\(what) is signed with \(header.alg.map { "'\($0)'" } ?? "no algorithm"), not ES256")
        }
        guard let chain = header.x5c, (2...3).contains(chain.count) else {
            throw invalid("\(what) carries no x5c chain of a leaf and an intermediate certificate")
        }
        // The chain is checked at the time Apple signed the payload, as Apple's own library does.
        do {
            _ = try JSONDecoder().decode(Payload.self, from: payloadBytes)
        } catch {
            throw invalid("\(what) does not hold the members Apple documents")
        }
        guard let signed = (try? JSONDecoder().decode(SignedDate.self, from: payloadBytes))?.signedDate else {
            throw invalid("\(what) has no signedDate")
        }
        do {
            return try await verifier.verifyJWS(
                Array(jws.utf8), as: Payload.self, jsonDecoder: JSONDecoder(),
                validationTime: .fixed(signed.appStoreDate), policy: { AppleMarkerPolicy() })
        } catch let error as JWTError where error.errorType == .invalidX5CChain {
            throw invalid(
                "\(what)'s certificate chain does not lead to the configured App Store root at its signedDate")
        } catch {
            throw invalid("\(what)'s signature does not verify")
        }
    }

    private func invalid(_ message: String) -> GuestModeError {
        GuestModeError(.purchaseInvalid, message)
    }
}

private struct SignedDate: Decodable {
    var signedDate: Int64
}

/// Apple's marker extensions: the leaf is a Mac App Store receipt signing
/// certificate (1.2.840.113635.100.6.11.1) and the intermediate an Apple
/// Worldwide Developer Relations one (1.2.840.113635.100.6.2.1), as Apple's
/// App Store Server Library checks.
struct AppleMarkerPolicy: VerifierPolicy {
    static let leafMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
    static let intermediateMarker: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]

    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) async -> PolicyEvaluationResult {
        let certificates = Array(chain)
        guard certificates.count >= 3 else {
            return .failsToMeetPolicy(reason: "the chain is not a leaf, an intermediate and a root")
        }
        guard certificates[0].extensions[oid: Self.leafMarker] != nil else {
            return .failsToMeetPolicy(reason: "the leaf lacks Apple's receipt signing marker")
        }
        guard certificates[1].extensions[oid: Self.intermediateMarker] != nil else {
            return .failsToMeetPolicy(reason: "the intermediate lacks Apple's marker")
        }
        return .meetsPolicy
    }
}

extension Data {
    /// base64url without padding, as a JWS writes its parts.
    init?(base64URL text: Substring) {
        guard !text.contains(where: { "+/=".contains($0) }) else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.count % 4 != 0 { base64.append("=") }
        self.init(base64Encoded: base64)
    }
}
