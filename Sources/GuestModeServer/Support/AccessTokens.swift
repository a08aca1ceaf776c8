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
            // jwt-kit picks the key, not the algorithm, when a token names no key id: the header's
            // `alg` is compared here with the one the server signs with, whatever else it says.
            guard Self.algorithm(of: token) == "HS256" else { throw AccessTokens.refused }
            let claims = try await keys.verify(token, as: AccessClaims.self)
            try claims.exp.verifyNotExpired(currentDate: now)
            return claims.sub.value
        } catch {
            throw AccessTokens.refused
        }
    }

    /// The `alg` a compact JWT's header names; nil when the header is not a
    /// base64url JSON object with a string `alg`.
    static func algorithm(of token: String) -> String? {
        guard let header = token.split(separator: ".", omittingEmptySubsequences: false).first else { return nil }
        var base64 = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), case let .object(members)? = try? StrictJSON.parse(data),
            case let .string(algorithm)? = members["alg"]
        else { return nil }
        return algorithm
    }

    static var refused: GuestModeError {
        GuestModeError(.unauthorized, "the access token or server key is missing, invalid or expired")
    }
}
