import Foundation

/// The server's rows of one transaction (see `StoreTransaction`): server
/// keys, session families with their refresh tokens, and the answers kept
/// for idempotency keys. Secrets never reach a row: keys and refresh tokens
/// are stored as their SHA-256.
package protocol ServerRows {
    /// Adds a server key; `secretHash` is the SHA-256 (hex) of its secret.
    func insertServerKey(_ key: ServerKey, secretHash: String) throws

    /// The key named `name`, revoked or not, or nil.
    func serverKey(named name: String) throws -> ServerKey?

    /// The key whose secret hashes to `secretHash`, revoked or not, or nil.
    func serverKey(secretHash: String) throws -> ServerKey?

    /// Every server key, ordered by name.
    func serverKeys() throws -> [ServerKey]

    /// Sets the key's revocation time.
    func markServerKeyRevoked(named name: String, at time: Date) throws

    /// Holds the signing keys' lock until the transaction ends: transactions
    /// that take it, on any server, take turns (SigningKeys.swift).
    func lockSigningKeys() throws

    /// Adds a signing key; the store numbers keys in the order they are added.
    func insertSigningKey(_ key: StoredSigningKey) throws

    /// Every signing key, retired ones too, in the order they were added.
    func signingKeys() throws -> [StoredSigningKey]

    /// Sets the signing key's retirement time.
    func markSigningKeyRetired(kid: String, at time: Date) throws

    /// Starts a session family: the chain of refresh tokens one sign-in hands out.
    func insertSessionFamily(_ family: String, user userID: String, at time: Date) throws

    /// Adds an unused refresh token to `family`.
    func insertRefreshToken(hash: String, family: String, at time: Date) throws

    /// The refresh token whose secret hashes to `hash`, with its family, or nil.
    func refreshToken(hash: String) throws -> StoredRefreshToken?

    /// Marks the token used unless it already was; false when it was (or is gone).
    func markRefreshTokenUsed(hash: String, at time: Date) throws -> Bool

    /// Revokes the family: none of its tokens refreshes again.
    func revokeSessionFamily(_ family: String, at time: Date) throws

    /// Revokes every family of the user not revoked yet; how many it revoked.
    func revokeSessionFamilies(of userID: String, at time: Date) throws -> Int

    /// The user's session families, revoked ones too, oldest first (then by id, byte by byte),
    /// each with when a refresh token of it was last spent and how many were. Never a token.
    func sessionFamilies(of userID: String) throws -> [SessionFamily]

    /// The answer kept for `key` from `principal`, or nil.
    func keptResponse(principal: String, key: String) throws -> KeptResponse?

    /// Keeps an answer unless one is kept for the same principal and key
    /// already; false when one was (the first answer stays). While another
    /// transaction holds an uncommitted answer for the key, waits for it.
    func insertKeptResponse(_ response: KeptResponse) throws -> Bool

    /// Sets the status and body of the answer kept for `key` from `principal`.
    func settleKeptResponse(principal: String, key: String, status: Int, body: String) throws

    /// Replaces `address`'s guest sign-in bucket with what `update` makes of
    /// the stored one (nil when there is none), the row locked from the read
    /// to the write so concurrent transactions, on any server, take turns.
    /// `update` may be called twice when another transaction created the row
    /// meanwhile; it must decide nothing but from its argument.
    func updateSignInBucket(address: String, _ update: (SignInBucket?) throws -> SignInBucket) throws

    /// The sign-in bucket stored for `address`, or nil.
    func signInBucket(address: String) throws -> SignInBucket?

    /// Deletes the sign-in buckets last updated before `time`.
    func deleteSignInBuckets(updatedBefore time: Date) throws
}

/// A refresh token as stored: which family it belongs to and where that stands.
package struct StoredRefreshToken: Sendable, Equatable {
    package var family: String
    package var userID: String
    package var usedAt: Date?
    package var familyRevokedAt: Date?

    package init(family: String, userID: String, usedAt: Date?, familyRevokedAt: Date?) {
        self.family = family
        self.userID = userID
        self.usedAt = usedAt
        self.familyRevokedAt = familyRevokedAt
    }
}

/// A session as listed: the chain of refresh tokens one sign-in handed out. Never a token: only
/// their SHA-256 is kept, and none of it is listed.
package struct SessionFamily: Codable, Sendable, Equatable {
    /// The family's id, which names it to `revokeSession(family:user:now:)`; no credential.
    package var id: String
    package var userID: String
    /// When the session was signed in.
    package var createdAt: Date
    /// When a refresh token of the session was last spent; nil when none was.
    package var lastUsedAt: Date?
    /// How many refresh tokens of the session were spent.
    package var refreshes: Int
    /// When the session was revoked (signed out, reused token, a key's revocation); nil while live.
    package var revokedAt: Date?

    package init(id: String, userID: String, createdAt: Date, lastUsedAt: Date?, refreshes: Int, revokedAt: Date?) {
        self.id = id
        self.userID = userID
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.refreshes = refreshes
        self.revokedAt = revokedAt
    }
}
