import Foundation

/// What linking an identity did.
public struct LinkResult: Codable, Sendable, Equatable {
    /// The user's id, unchanged by linking.
    public var user: String
    /// The identity's provider, such as `apple`.
    public var provider: String
    /// The identity's subject at the provider.
    public var subject: String
    /// False when the identity was already bound to this user.
    public var isNewlyLinked: Bool
    /// True when linking removed the guest's anonymous username and secret.
    public var didRemoveAnonymousCredentials: Bool

    package init(
        user: String, provider: String, subject: String, isNewlyLinked: Bool, removedAnonymousCredentials: Bool
    ) {
        self.user = user
        self.provider = provider
        self.subject = subject
        self.isNewlyLinked = isNewlyLinked
        self.didRemoveAnonymousCredentials = removedAnonymousCredentials
    }
}

/// Where a link can be stopped by a test to simulate a process that is
/// still running (or was killed) mid-upgrade.
public enum LinkCheckpoint: Sendable {
    case afterLock
}

extension PromptState {
    /// The prompt state of a user whose last identity was removed: what its
    /// prompt history says, except that it is no longer authenticated, so
    /// "never ask again" survives an unlink. `outcomes` oldest first.
    package static func afterUnlinking(outcomes: [PromptOutcome]) -> PromptState {
        let state = outcomes.reduce(PromptState.anonymous) { $0.after($1) }
        return state == .authenticated ? .anonymous : state
    }
}

/// An identity to bind to a user.
struct LinkRequest: Sendable, Equatable {
    var user: String
    var provider: String
    var subject: String
    var email: String?
}

/// How `beginLink` left things.
enum LinkBeginning: Sendable, Equatable {
    /// The identity is already this user's; nothing to do, no lock taken.
    case alreadyLinked
    /// The lock is held; complete or abandon the link.
    case started
}

/// A link is three transactions: `beginLink` takes the upgrade lock and
/// commits it, so a second upgrade of the same user sees it even while the
/// first process still runs or after it was killed; `completeLink` binds the
/// identity; `abandonLink` releases the lock after a failed completion. Each
/// locks the user first, so two upgrades of one user take turns.
extension GuestMode {
    /// How long an upgrade lock is honoured; older locks are from processes
    /// that died and no longer block a new attempt.
    static let upgradeLockLifetime: TimeInterval = 10 * 60

    /// Upgrades a user in place: the identity is bound to the same user id,
    /// so sessions, records, usage and plans stay where they are. On any
    /// failure the user is left exactly as it was. `checkpoint` lets tests
    /// stop (or kill) the process between taking the lock and binding.
    ///
    /// ```swift
    /// let result = try engine.link(
    ///     user: guest.id, provider: "apple", subject: "001234.abcd", email: nil, now: now)
    /// // result.user == guest.id: the guest is now an account
    /// ```
    public func link(
        user userID: String, provider: String, subject: String, email: String?, now: Date,
        checkpoint: (LinkCheckpoint) throws -> Void = { _ in }
    ) throws -> LinkResult {
        try TextRule.check([
            "the user id": userID, "the provider": provider, "the identity's subject": subject, "the email": email,
        ])
        guard profile.identity.providers.contains(provider) else {
            throw GuestModeError(
                .unknownProvider,
                "unknown provider '\(provider)'; this profile accepts: \(profile.identity.providers.joined(separator: ", "))"
            )
        }
        guard !subject.isEmpty else {
            throw GuestModeError(.emptySubject, "the identity's subject must not be empty")
        }
        let request = LinkRequest(user: userID, provider: provider, subject: subject, email: email)

        let beginning: LinkBeginning
        do {
            beginning = try beginLink(request, now: now)
        } catch let error as GuestModeError where error.code == .upgradeInProgress {
            // The refusal is counted for upgrade analytics; the attempt in
            // progress keeps its lock.
            try? recordRefusedLink(user: userID, provider: provider, failureCode: error.code.rawValue, now: now)
            throw error
        }
        if beginning == .alreadyLinked {
            return LinkResult(
                user: userID, provider: provider, subject: subject, isNewlyLinked: false,
                removedAnonymousCredentials: false)
        }
        try checkpoint(.afterLock)

        do {
            return try completeLink(request, now: now)
        } catch {
            let code = (error as? GuestModeError)?.code.rawValue ?? GuestModeError.Code.internalFailure.rawValue
            try? abandonLink(user: userID, provider: provider, failureCode: code, now: now)
            throw error
        }
    }

    /// Starts an upgrade: changes nothing when the identity is already the
    /// user's; refuses (`upgrade_in_progress`) while another upgrade of the
    /// user holds a lock younger than `upgradeLockLifetime`; otherwise takes
    /// the lock, taking over a stale one, and appends
    /// `account_upgrade_started`.
    func beginLink(_ request: LinkRequest, now: Date) throws -> LinkBeginning {
        try store.write { transaction in
            _ = try transaction.requireUser(request.user, locking: true)
            if try transaction.identityOwner(provider: request.provider, subject: request.subject) == request.user {
                return .alreadyLinked
            }
            if let started = try transaction.upgradeLockTime(of: request.user),
                started > now.addingTimeInterval(-GuestMode.upgradeLockLifetime)
            {
                throw GuestModeError(
                    .upgradeInProgress,
                    "an account upgrade of user '\(request.user)' is already in progress (started \(Timestamp.format(started))); wait for it to finish"
                )
            }
            try transaction.takeUpgradeLock(of: request.user, provider: request.provider, at: now)
            try transaction.appendSystemEvent(
                user: request.user, action: "account_upgrade_started", properties: ["provider": request.provider],
                at: now)
            try transaction.raiseWebhook(
                .accountUpgradeStarted, user: request.user, data: ["provider": .string(request.provider)], at: now,
                profile: profile)
            return .started
        }
    }

    /// Binds the identity to the user in place: the user keeps its id and
    /// everything it owns, becomes linked, its prompt state authenticated.
    /// Refuses, changing nothing, when the identity belongs to another user
    /// (`identity_already_exists`), when the user already has an identity of
    /// this provider (`provider_already_linked`) or as many providers as the
    /// profile allows (`too_many_providers`). If the identity turns out to be
    /// the user's already, only the lock is released.
    func completeLink(_ request: LinkRequest, now: Date) throws -> LinkResult {
        let userID = request.user
        let provider = request.provider
        return try store.write { transaction in
            let user = try transaction.requireUser(userID, locking: true)
            if let owner = try transaction.identityOwner(provider: provider, subject: request.subject) {
                guard owner == userID else { throw identityTaken(user: userID, provider: provider) }
                try transaction.releaseUpgradeLock(of: userID)
                return LinkResult(
                    user: userID, provider: provider, subject: request.subject, isNewlyLinked: false,
                    removedAnonymousCredentials: false)
            }
            let existing = try transaction.identities(of: userID)
            if existing.contains(where: { $0.provider == provider }) {
                throw GuestModeError(
                    .providerAlreadyLinked,
                    "user '\(userID)' already has a \(provider) identity; unlink it first")
            }
            if existing.count >= profile.identity.maximumProvidersPerUser {
                throw GuestModeError(
                    .tooManyProviders,
                    "user '\(userID)' already has \(existing.count) linked provider(s), the most this profile allows (identity.max_providers_per_user)"
                )
            }
            // Another guest may be binding the same identity right now: the
            // store reports it bound once that guest's transaction commits.
            // The user is locked, so the other binder is always another user.
            let identity = Identity(provider: provider, subject: request.subject, email: request.email, linkedAt: now)
            guard try transaction.insertIdentity(identity, of: userID) else {
                throw identityTaken(user: userID, provider: provider)
            }
            try transaction.setState(of: userID, to: .linked, linkedAt: user.linkedAt ?? now)
            try transaction.setPromptState(of: userID, to: .authenticated)
            // Only now that the identity is bound may the guest's own credentials go.
            let removedCredentials = try transaction.deleteCredentials(of: userID)
            try transaction.releaseUpgradeLock(of: userID)
            try transaction.appendSystemEvent(
                user: userID, action: "account_upgrade_succeeded", properties: ["provider": provider], at: now)
            try transaction.raiseWebhook(
                .accountUpgradeSucceeded, user: userID, data: ["provider": .string(provider)], at: now, profile: profile
            )
            try transaction.raiseWebhook(
                .identityLinked, user: userID,
                data: ["provider": .string(provider), "subject": .string(request.subject)], at: now, profile: profile)
            try transaction.noteActivity(of: userID, profile: profile, now: now)
            return LinkResult(
                user: userID, provider: provider, subject: request.subject, isNewlyLinked: true,
                removedAnonymousCredentials: removedCredentials)
        }
    }

    /// After a start refused while another upgrade holds the lock: appends
    /// `account_upgrade_failed` with the provider and the refusal's code,
    /// leaving that upgrade's lock alone.
    func recordRefusedLink(user userID: String, provider: String, failureCode: String, now: Date) throws {
        try store.write { transaction in
            guard try transaction.user(userID, locking: true) != nil else { return }
            try transaction.appendSystemEvent(
                user: userID, action: "account_upgrade_failed",
                properties: ["provider": provider, "code": failureCode],
                at: now)
            try transaction.raiseWebhook(
                .accountUpgradeFailed, user: userID,
                data: ["provider": .string(provider), "code": .string(failureCode)], at: now, profile: profile)
        }
    }

    /// After a failed `completeLink`: releases the user's upgrade lock and
    /// appends `account_upgrade_failed` with the provider and the failure's
    /// code. A user deleted meanwhile is no failure.
    func abandonLink(user userID: String, provider: String, failureCode: String, now: Date) throws {
        try store.write { transaction in
            let user = try transaction.user(userID, locking: true)
            try transaction.releaseUpgradeLock(of: userID)
            // An event of a deleted user would have no owner.
            guard user != nil else { return }
            try transaction.appendSystemEvent(
                user: userID, action: "account_upgrade_failed",
                properties: ["provider": provider, "code": failureCode],
                at: now)
            try transaction.raiseWebhook(
                .accountUpgradeFailed, user: userID,
                data: ["provider": .string(provider), "code": .string(failureCode)], at: now, profile: profile)
        }
    }

    /// Removes one identity; a user left without any becomes anonymous again,
    /// its prompt state rebuilt from its prompt history
    /// (`PromptState.afterUnlinking`). Returns the user as it is afterwards.
    ///
    /// ```swift
    /// let user = try engine.unlink(user: guest.id, provider: "apple", now: now)
    /// ```
    public func unlink(user userID: String, provider: String, now: Date) throws -> User {
        try TextRule.check(["the user id": userID, "the provider": provider])
        return try store.write { transaction in
            _ = try transaction.requireUser(userID, locking: true)
            guard try transaction.deleteIdentity(of: userID, provider: provider) else {
                throw GuestModeError(.identityNotFound, "user '\(userID)' has no \(provider) identity")
            }
            if try transaction.identities(of: userID).isEmpty {
                // Outcomes before the user's last `prompt reset` no longer count (a reset undid them).
                let resetAt = try transaction.lastEventTime(of: userID, action: PromptTrigger.resetEventAction)
                let outcomes = try transaction.promptOutcomes(of: userID)
                    .filter { entry in resetAt.map { entry.at > $0 } ?? true }.map(\.outcome)
                try transaction.setState(of: userID, to: .anonymous, linkedAt: nil)
                try transaction.setPromptState(of: userID, to: PromptState.afterUnlinking(outcomes: outcomes))
            }
            try transaction.appendSystemEvent(
                user: userID, action: "account_unlinked", properties: ["provider": provider], at: now)
            try transaction.raiseWebhook(
                .identityUnlinked, user: userID, data: ["provider": .string(provider)], at: now, profile: profile)
            try transaction.noteChange(of: userID, profile: profile, now: now)
            return try transaction.requireUser(userID)
        }
    }

    private func identityTaken(user userID: String, provider: String) -> GuestModeError {
        GuestModeError(
            .identityAlreadyExists,
            "the \(provider) identity is already linked to another user; the guest '\(userID)' was left untouched")
    }
}
