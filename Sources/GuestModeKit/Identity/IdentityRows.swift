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

    /// The owners of those of `keys` (provider, subject) that are bound, by key. One question for many
    /// identities: `user import` asks it once a chunk of accounts.
    func identityOwners(_ keys: [IdentityKey]) throws -> [IdentityKey: String]

    /// The identities of each of `userIDs` that has any, each user's oldest link first (then by provider).
    func identities(ofUsers userIDs: [String]) throws -> [String: [Identity]]

    /// Binds each identity to its user as `insertIdentity(_:of:)` does, and returns the keys of those it
    /// did not bind because they were already bound.
    func insertIdentities(_ identities: [(identity: Identity, userID: String)]) throws -> [IdentityKey]

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

/// An identity's key: its provider and its subject at the provider.
package struct IdentityKey: Hashable, Sendable {
    package var provider: String
    package var subject: String

    package init(provider: String, subject: String) {
        self.provider = provider
        self.subject = subject
    }
}

extension Identity {
    /// The identity's provider and subject.
    package var key: IdentityKey { IdentityKey(provider: provider, subject: subject) }
}

// A store whose questions cost no round trip (SQLite, in the process) answers the many-row questions one row
// at a time; PostgreSQL answers each in one statement.
extension IdentityRows {
    package func identityOwners(_ keys: [IdentityKey]) throws -> [IdentityKey: String] {
        var owners: [IdentityKey: String] = [:]
        for key in keys where owners[key] == nil {
            if let owner = try identityOwner(provider: key.provider, subject: key.subject) { owners[key] = owner }
        }
        return owners
    }

    package func identities(ofUsers userIDs: [String]) throws -> [String: [Identity]] {
        var identities: [String: [Identity]] = [:]
        for userID in userIDs where identities[userID] == nil {
            let held = try self.identities(of: userID)
            if !held.isEmpty { identities[userID] = held }
        }
        return identities
    }

    package func insertIdentities(_ identities: [(identity: Identity, userID: String)]) throws -> [IdentityKey] {
        try identities.compactMap { identity, userID in try insertIdentity(identity, of: userID) ? nil : identity.key }
    }
}
