import Foundation

/// A guest's session as the engine hands it out: the user it reaches and a
/// fresh refresh token (shown once, kept only as its SHA-256). The access
/// token is the server's to sign.
package struct SessionGrant: Sendable {
    package var user: User
    package var refreshToken: String
}

extension GuestMode {
    static let refreshTokenPrefix = "gmr_"

    /// Starts a session family for `userID` and returns its first refresh token.
    package func startSession(for userID: String, now: Date) throws -> SessionGrant {
        try TextRule.check(userID, what: "the user id")
        let token = ServerSecret.make(prefix: Self.refreshTokenPrefix)
        let user = try store.write { transaction in
            let user = try transaction.requireUser(userID)
            let family = ServerSecret.make(prefix: "")
            try transaction.insertSessionFamily(family, user: userID, at: now)
            try transaction.insertRefreshToken(hash: ServerSecret.hash(token), family: family, at: now)
            return user
        }
        return SessionGrant(user: user, refreshToken: token)
    }

    /// Rotates a refresh token: this one is spent and a new one of the same
    /// family is returned. A token used a second time means it was copied,
    /// so the whole family is revoked, the legitimate holder's latest token
    /// included, and the refusal is `refresh_token_reused`.
    package func refreshSession(_ refreshToken: String, now: Date) throws -> SessionGrant {
        enum Rotation {
            case rotated(User, String)
            case unknown
            case reused
        }
        guard refreshToken.hasPrefix(Self.refreshTokenPrefix) else { throw Self.unknownRefreshToken }
        let hash = ServerSecret.hash(refreshToken)
        // The revocation must commit, so a refusal is returned from the
        // transaction and thrown only after it.
        let rotation: Rotation = try store.write { transaction in
            guard let stored = try transaction.refreshToken(hash: hash) else { return .unknown }
            guard stored.usedAt == nil, stored.familyRevokedAt == nil,
                try transaction.markRefreshTokenUsed(hash: hash, at: now)
            else {
                if stored.familyRevokedAt == nil { try transaction.revokeSessionFamily(stored.family, at: now) }
                return .reused
            }
            let user = try transaction.requireUser(stored.userID)
            let next = ServerSecret.make(prefix: Self.refreshTokenPrefix)
            try transaction.insertRefreshToken(hash: ServerSecret.hash(next), family: stored.family, at: now)
            return .rotated(user, next)
        }
        switch rotation {
        case let .rotated(user, next): return SessionGrant(user: user, refreshToken: next)
        case .unknown: throw Self.unknownRefreshToken
        case .reused:
            throw GuestModeError(
                .refreshTokenReused, "the refresh token was used before; its session is revoked, so sign in again")
        }
    }

    static var unknownRefreshToken: GuestModeError {
        GuestModeError(.refreshTokenInvalid, "the refresh token is not one this deployment issued")
    }
}
