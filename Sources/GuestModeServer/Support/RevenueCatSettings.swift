import Crypto
import Foundation
import GuestModeKit

/// How the server takes RevenueCat's webhooks (`POST /v1/integrations/revenuecat`): the Authorization
/// header value set in RevenueCat's dashboard, and whether sandbox purchases change plans.
package struct RevenueCatSettings: Sendable {
    /// The header value's SHA-256: what a request's header is compared with.
    private let expected: [UInt8]
    /// True to apply `environment: SANDBOX` events (a test deployment); false acknowledges them unapplied.
    package var acceptsSandbox: Bool

    /// The longest header value taken, as HTTP servers commonly bound one header line.
    package static let maximumLength = 4096

    /// `authorization` is the value exactly as RevenueCat sends it (`Bearer …` or anything else):
    /// 1 to 4096 visible ASCII characters or spaces.
    ///
    /// ```swift
    /// let settings = try RevenueCatSettings(authorization: "Bearer 7c1f…", acceptsSandbox: false)
    /// ```
    package init(authorization: String, acceptsSandbox: Bool) throws {
        let bytes = Array(authorization.utf8)
        guard (1...Self.maximumLength).contains(bytes.count),
            bytes.allSatisfy({ (0x20...0x7e).contains($0) }), bytes.first != 0x20, bytes.last != 0x20
        else {
            throw GuestModeError(
                .usage,
                "the RevenueCat Authorization value must be 1 to \(Self.maximumLength) visible ASCII characters (spaces only inside), as typed in RevenueCat's dashboard"
            )
        }
        expected = Array(SHA256.hash(data: bytes))
        self.acceptsSandbox = acceptsSandbox
    }

    /// Whether `header` is the value set: both sides are hashed first, so the comparison takes the same
    /// time whatever was sent and however much of it matches.
    package func accepts(_ header: String?) -> Bool {
        guard let header else { return false }
        let digest = Array(SHA256.hash(data: Array(header.utf8)))
        var difference: UInt8 = 0
        for (left, right) in zip(digest, expected) { difference |= left ^ right }
        return difference == 0
    }
}
