import Foundation

/// Linking and unlinking identities, with the upgrade lock and credentials.
///
/// A link is three steps, each one transaction: `beginLink` takes the
/// upgrade lock and commits it, so a second upgrade of the same user sees it
/// even while the first process still runs or after it was killed;
/// `completeLink` binds the identity; `abandonLink` releases the lock after a
/// failed completion. The engine runs them in that order. A missing user is
/// reported as `.notFound` with code `user_not_found`.
public protocol IdentityStore: Sendable {
    /// Starts an upgrade of `request.user`. Returns `.alreadyLinked` and
    /// changes nothing when the identity is already bound to this user.
    /// Refuses with a conflict `upgrade_in_progress` when another upgrade of
    /// the user holds a lock taken after `staleLocksBefore` (older locks are
    /// from processes that died and are taken over). Otherwise takes the
    /// lock and appends an `account_upgrade_started` event.
    func beginLink(_ request: LinkRequest, staleLocksBefore: Date, now: Date) throws -> LinkBeginning

    /// Binds the identity to the user in place: the user keeps its id and
    /// everything it owns, becomes linked, its prompt state authenticated.
    /// Refuses, changing nothing, with a conflict when the identity belongs
    /// to another user (`identity_already_exists`), when the user already has
    /// an identity of this provider (`provider_already_linked`) or as many
    /// providers as `profile.identity.maximumProvidersPerUser`
    /// (`too_many_providers`). Only once the identity is bound are the
    /// user's anonymous credentials removed; then the lock is released, an
    /// `account_upgrade_succeeded` event appended and, when the profile
    /// backs up on change, a backup queued. If the identity turns out to be
    /// bound to this user already, only the lock is released.
    func completeLink(_ request: LinkRequest, profile: Profile, now: Date) throws -> LinkResult

    /// After a failed `completeLink`: releases the user's upgrade lock and
    /// appends an `account_upgrade_failed` event with the provider and the
    /// failure's code.
    func abandonLink(user userID: String, provider: String, failureCode: String, now: Date) throws

    /// Removes the user's identity of `provider`, refusing with `.notFound`
    /// code `identity_not_found` when it has none. A user left without
    /// identities becomes anonymous again, its prompt state rebuilt from its
    /// prompt history (`PromptState.afterUnlinking`). Appends an
    /// `account_unlinked` event and, when the profile backs up on change,
    /// queues a backup. Returns the user as it is afterwards.
    func unlink(user userID: String, provider: String, profile: Profile, now: Date) throws -> User
}

/// An identity to bind to a user.
public struct LinkRequest: Sendable, Equatable {
    public var user: String
    public var provider: String
    public var subject: String
    public var email: String?

    public init(user: String, provider: String, subject: String, email: String?) {
        self.user = user
        self.provider = provider
        self.subject = subject
        self.email = email
    }
}

/// How `beginLink` left things.
public enum LinkBeginning: Sendable, Equatable {
    /// The identity is already this user's; nothing to do, no lock taken.
    case alreadyLinked
    /// The lock is held; complete or abandon the link.
    case started
}
