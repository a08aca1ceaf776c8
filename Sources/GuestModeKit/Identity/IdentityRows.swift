import Foundation

/// The identity, credential and upgrade-lock rows of one transaction (see
/// `StoreTransaction`).
package protocol IdentityRows {
    /// The id of the user the identity (`provider`, `subject`) is bound to,
    /// or nil when it is bound to nobody.
    func identityOwner(provider: String, subject: String) throws -> String?

    /// The user's identities, oldest link first (then by provider).
    func identities(of userID: String) throws -> [Identity]

    /// Binds `identity` to the user. Returns false and writes nothing when
    /// the identity is already bound, to this user or another: PostgreSQL
    /// waits for a transaction that is binding the same identity and reports
    /// false if that one commits, so one identity is bound once however many
    /// callers race for it.
    func insertIdentity(_ identity: Identity, of userID: String) throws -> Bool

    /// Removes the user's identity of `provider`; false when it had none.
    func deleteIdentity(of userID: String, provider: String) throws -> Bool

    /// Sets the user's state and the time it was first linked (nil: never).
    func setState(of userID: String, to state: UserState, linkedAt: Date?) throws

    /// Removes the user's anonymous credentials; false when it had none.
    func deleteCredentials(of userID: String) throws -> Bool

    /// When the user's upgrade lock was taken, or nil when none is held.
    func upgradeLockTime(of userID: String) throws -> Date?

    /// Takes the user's upgrade lock for `provider` at `time`, replacing any
    /// lock the user held.
    func takeUpgradeLock(of userID: String, provider: String, at time: Date) throws

    /// Releases the user's upgrade lock, if it holds one.
    func releaseUpgradeLock(of userID: String) throws
}
