import Foundation

public struct LinkResult: Codable, Sendable, Equatable {
    public var user: String
    public var provider: String
    public var subject: String
    /// False when the identity was already bound to this user.
    public var isNewlyLinked: Bool
    public var removedAnonymousCredentials: Bool

    public init(user: String, provider: String, subject: String, isNewlyLinked: Bool, removedAnonymousCredentials: Bool)
    {
        self.user = user
        self.provider = provider
        self.subject = subject
        self.isNewlyLinked = isNewlyLinked
        self.removedAnonymousCredentials = removedAnonymousCredentials
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
    public static func afterUnlinking(outcomes: [PromptOutcome]) -> PromptState {
        let state = outcomes.reduce(PromptState.anonymous) { $0.after($1) }
        return state == .authenticated ? .anonymous : state
    }
}

extension GuestMode {
    /// How long an upgrade lock is honoured; older locks are from processes
    /// that died and no longer block a new attempt.
    static let upgradeLockLifetime: TimeInterval = 10 * 60

    /// Upgrades a user in place: the identity is bound to the same user id,
    /// so sessions, records, usage and plans stay where they are. On any
    /// failure the user is left exactly as it was. `checkpoint` lets tests
    /// stop (or kill) the process between taking the lock and binding.
    public func link(
        user userID: String, provider: String, subject: String, email: String?, now: Date,
        checkpoint: (LinkCheckpoint) throws -> Void = { _ in }
    ) throws -> LinkResult {
        try TextRule.check([
            "the user id": userID, "the provider": provider, "the identity's subject": subject, "the email": email,
        ])
        guard profile.identity.providers.contains(provider) else {
            throw GuestModeError.usage(
                "unknown provider '\(provider)'; this profile accepts: \(profile.identity.providers.joined(separator: ", "))",
                code: .unknownProvider)
        }
        guard !subject.isEmpty else {
            throw GuestModeError.usage("the identity's subject must not be empty", code: .emptySubject)
        }
        let request = LinkRequest(user: userID, provider: provider, subject: subject, email: email)

        let beginning = try store.beginLink(
            request, staleLocksBefore: now.addingTimeInterval(-GuestMode.upgradeLockLifetime), now: now)
        if beginning == .alreadyLinked {
            return LinkResult(
                user: userID, provider: provider, subject: subject, isNewlyLinked: false,
                removedAnonymousCredentials: false)
        }
        try checkpoint(.afterLock)

        do {
            return try store.completeLink(request, profile: profile, now: now)
        } catch {
            let code = (error as? GuestModeError)?.code.rawValue ?? GuestModeError.Code.internalFailure.rawValue
            try? store.abandonLink(user: userID, provider: provider, failureCode: code, now: now)
            throw error
        }
    }

    /// Removes one identity; a user left without any becomes anonymous again.
    public func unlink(user userID: String, provider: String, now: Date) throws -> User {
        try TextRule.check(["the user id": userID, "the provider": provider])
        return try store.unlink(user: userID, provider: provider, profile: profile, now: now)
    }
}
