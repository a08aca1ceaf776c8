import Foundation

/// A sign-in by identity: the session, and whether the user was made by it.
package struct IdentitySignIn: Sendable {
    /// The session of the user holding the identity.
    package var grant: SessionGrant
    /// True when no user held the identity, so an account user was created with it: a sign-up
    /// without a guest.
    package var isNew: Bool
}

extension GuestMode {
    /// Signs a person in by an identity a provider vouched for (an ID token the server verified, or a
    /// backend's word with a server key): a new session of the user holding `provider`'s `subject`, or,
    /// when no user holds it, of a new account user created with it in the same transaction. Nothing
    /// else (no device id, no guest) leads to a session.
    ///
    /// ```swift
    /// let signIn = try engine.signIn(provider: "apple", subject: "001234.abcd", email: nil, now: now)
    /// // signIn.grant.user: the account; signIn.isNew: it was created now
    /// ```
    package func signIn(provider: String, subject: String, email: String?, now: Date) throws -> IdentitySignIn {
        try TextRule.check(["the provider": provider, "the identity's subject": subject, "the email": email])
        guard profile.identity.providers.contains(provider) else {
            throw GuestModeError(
                .unknownProvider,
                "unknown provider '\(provider)'; this profile accepts: \(profile.identity.providers.joined(separator: ", "))"
            )
        }
        guard !subject.isEmpty else { throw GuestModeError(.emptySubject, "the identity's subject must not be empty") }
        let token = ServerSecret.make(prefix: Self.refreshTokenPrefix)
        // Two first sign-ins with one identity race to create its user: the loser's insert of the
        // identity reports it taken, its transaction rolls back, and the second pass finds the winner.
        for _ in 0..<2 {
            let outcome: (User, Bool)? = try store.write { transaction in
                let user: User
                let isNew: Bool
                if let owner = try transaction.identityOwner(provider: provider, subject: subject) {
                    user = try transaction.requireUser(owner, locking: true)
                    isNew = false
                } else {
                    user = User(
                        id: UUID().uuidString.lowercased(), device: nil, state: .linked, promptState: "authenticated",
                        createdAt: now, lastSeenAt: now, linkedAt: now)
                    try transaction.createUser(user, credentials: nil)
                    let identity = Identity(provider: provider, subject: subject, email: email, linkedAt: now)
                    guard try transaction.insertIdentity(identity, of: user.id) else { return nil }
                    try transaction.appendSystemEvent(
                        user: user.id, action: "account_signed_up", properties: ["provider": provider], at: now)
                    try transaction.raiseWebhook(
                        .identityLinked, user: user.id,
                        data: ["provider": .string(provider), "subject": .string(subject)], at: now, profile: profile)
                    isNew = true
                }
                let family = ServerSecret.make(prefix: "")
                try transaction.insertSessionFamily(family, user: user.id, at: now)
                try transaction.insertRefreshToken(hash: ServerSecret.hash(token), family: family, at: now)
                try transaction.noteActivity(of: user.id, profile: profile, now: now)
                return (user, isNew)
            }
            if let (user, isNew) = outcome {
                return IdentitySignIn(grant: SessionGrant(user: user, refreshToken: token), isNew: isNew)
            }
        }
        throw GuestModeError(
            .identityAlreadyExists, "the \(provider) identity was bound to another user while signing in; try again")
    }

    /// Signs out: revokes the session family `refreshToken` belongs to, so none of its tokens refreshes
    /// again (access tokens already issued stay valid until they expire). The user the session was.
    ///
    /// ```swift
    /// let user = try engine.revokeSession(refreshToken, now: now)
    /// ```
    package func revokeSession(_ refreshToken: String, now: Date) throws -> String {
        guard refreshToken.hasPrefix(Self.refreshTokenPrefix) else { throw Self.unknownRefreshToken }
        let hash = ServerSecret.hash(refreshToken)
        return try store.write { transaction in
            guard let stored = try transaction.refreshToken(hash: hash) else { throw Self.unknownRefreshToken }
            try transaction.revokeSessionFamily(stored.family, at: now)
            return stored.userID
        }
    }

    /// Revokes every session of the user (support's "sign me out everywhere", a lost phone); how many
    /// were still live.
    ///
    /// ```swift
    /// let revoked = try engine.revokeSessions(user: guest.id, now: now)
    /// ```
    package func revokeSessions(user userID: String, now: Date) throws -> Int {
        try TextRule.check(userID, what: "the user id")
        return try store.write { transaction in
            _ = try transaction.requireUser(userID, locking: true)
            return try transaction.revokeSessionFamilies(of: userID, at: now)
        }
    }

    /// The user's sessions, revoked ones too, oldest first: when each was signed in, last
    /// refreshed and revoked. Never a token.
    ///
    /// ```swift
    /// let sessions = try engine.sessions(of: guest.id)
    /// // sessions.filter { $0.revokedAt == nil }: the devices still signed in
    /// ```
    package func sessions(of userID: String) throws -> [SessionFamily] {
        try TextRule.check(userID, what: "the user id")
        return try store.read { transaction in
            _ = try transaction.requireUser(userID)
            return try transaction.sessionFamilies(of: userID)
        }
    }

    /// Revokes one session of the user (one device signed out), named by its family id; 1 when it
    /// was live, 0 when it was revoked already. A family of another user is `session_not_found`, as
    /// one that does not exist.
    ///
    /// ```swift
    /// let revoked = try engine.revokeSession(family: sessions[0].id, user: guest.id, now: now)
    /// ```
    package func revokeSession(family: String, user userID: String, now: Date) throws -> Int {
        try TextRule.check(["the user id": userID, "the session": family])
        return try store.write { transaction in
            _ = try transaction.requireUser(userID, locking: true)
            guard let session = try transaction.sessionFamilies(of: userID).first(where: { $0.id == family }) else {
                throw GuestModeError(.sessionNotFound, "user '\(userID)' has no session '\(family)'")
            }
            guard session.revokedAt == nil else { return 0 }
            try transaction.revokeSessionFamily(family, at: now)
            return 1
        }
    }

    /// The user a live refresh token belongs to, without spending it: proof, shown by whoever holds
    /// the guest's session, that they may fold that guest into an account. Nil for a token that is
    /// unknown, used, or of a revoked session.
    ///
    /// ```swift
    /// let guest = try engine.holder(ofRefreshToken: token)
    /// ```
    package func holder(ofRefreshToken refreshToken: String) throws -> String? {
        guard refreshToken.hasPrefix(Self.refreshTokenPrefix) else { return nil }
        let hash = ServerSecret.hash(refreshToken)
        return try store.read { transaction in
            guard let stored = try transaction.refreshToken(hash: hash), stored.usedAt == nil,
                stored.familyRevokedAt == nil
            else { return nil }
            return stored.userID
        }
    }
}
