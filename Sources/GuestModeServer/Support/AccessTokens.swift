import Foundation
import GuestModeKit
import JWTKit

/// A guest's access token: an HS256 JWT with the claims Supabase's anonymous
/// sessions carry, signed with a key the deployment key derives.
struct AccessClaims: JWTPayload {
    var sub: SubjectClaim
    var isAnonymous: Bool
    var iat: IssuedAtClaim
    var exp: ExpirationClaim

    enum CodingKeys: String, CodingKey {
        case sub, isAnonymous = "is_anonymous", iat, exp
    }

    /// Expiry is checked against the server's clock after verification
    /// (`AccessTokens.verify`), not against the system clock here.
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Signs and verifies access tokens with one key.
final class AccessTokens: Sendable {
    private let keys: JWTKeyCollection
    let lifetime: TimeInterval

    init(key: [UInt8], lifetime: TimeInterval) async {
        keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: key), digestAlgorithm: .sha256)
        self.lifetime = lifetime
    }

    struct Issued: Sendable {
        var token: String
        var expiresAt: Date
    }

    func issue(for user: User, now: Date) async throws -> Issued {
        // Whole seconds, as the claims are written: the document's expiry is the token's.
        let issuedAt = Date(timeIntervalSince1970: now.timeIntervalSince1970.rounded(.down))
        let expiresAt = issuedAt.addingTimeInterval(lifetime)
        let claims = AccessClaims(
            sub: SubjectClaim(value: user.id), isAnonymous: user.state == .anonymous,
            iat: IssuedAtClaim(value: issuedAt), exp: ExpirationClaim(value: expiresAt))
        return Issued(token: try await keys.sign(claims), expiresAt: expiresAt)
    }

    /// The user a valid, unexpired token names. Any fault (a bad signature,
    /// another algorithm, `none`, expiry) is the same refusal: a client
    /// learns nothing from which it was.
    func verify(_ token: String, now: Date) async throws -> String {
        do {
            let claims = try await keys.verify(token, as: AccessClaims.self)
            try claims.exp.verifyNotExpired(currentDate: now)
            return claims.sub.value
        } catch {
            throw AccessTokens.refused
        }
    }

    static var refused: GuestModeError {
        GuestModeError.usage("the access token or server key is missing, invalid or expired", code: .unauthorized)
    }
}
