import Foundation
import GuestModeKit

/// Every step locks the user's row first, so two upgrades of one user take
/// turns; an identity claimed by two users at once is settled by the
/// identities primary key (see `completeLink`).
extension PostgresStore: IdentityStore {
    public func beginLink(_ request: LinkRequest, staleLocksBefore: Date, now: Date) throws -> LinkBeginning {
        try write { connection in
            _ = try requireUser(request.user, locking: true, connection)
            if try owner(of: request, connection) == request.user { return .alreadyLinked }
            if let started = try connection.execute(
                "SELECT started_at FROM upgrade_locks WHERE user_id = $1", [PostgresValue(request.user)]
            ).first?.date("started_at"), started > staleLocksBefore {
                throw GuestModeError(
                    .conflict, code: .upgradeInProgress,
                    "an account upgrade of user '\(request.user)' is already in progress (started \(Timestamp.format(started))); wait for it to finish"
                )
            }
            try connection.execute(
                """
                INSERT INTO upgrade_locks (user_id, provider, started_at) VALUES ($1, $2, $3)
                ON CONFLICT (user_id) DO UPDATE SET provider = excluded.provider, started_at = excluded.started_at
                """,
                [PostgresValue(request.user), PostgresValue(request.provider), PostgresValue(now)])
            try appendSystemEvent(
                user: request.user, action: "account_upgrade_started", properties: ["provider": request.provider],
                at: now, connection)
            return .started
        }
    }

    public func completeLink(_ request: LinkRequest, profile: Profile, now: Date) throws -> LinkResult {
        let userID = request.user
        let provider = request.provider
        return try write { connection in
            _ = try requireUser(userID, locking: true, connection)
            if let owner = try owner(of: request, connection) {
                if owner != userID { throw identityTaken(userID: userID, provider: provider) }
                try releaseUpgradeLock(of: userID, connection)
                return LinkResult(
                    user: userID, provider: provider, subject: request.subject, isNewlyLinked: false,
                    removedAnonymousCredentials: false)
            }
            let existing = try identities(of: userID, connection)
            if existing.contains(where: { $0.provider == provider }) {
                throw GuestModeError(
                    .conflict, code: .providerAlreadyLinked,
                    "user '\(userID)' already has a \(provider) identity; unlink it first")
            }
            if existing.count >= profile.identity.maximumProvidersPerUser {
                throw GuestModeError(
                    .conflict, code: .tooManyProviders,
                    "user '\(userID)' already has \(existing.count) linked provider(s), the most this profile allows (identity.max_providers_per_user)"
                )
            }
            // Another guest may be binding the same identity right now: the
            // primary key makes this insert wait for that transaction, and if
            // it committed, nothing is inserted. This is the first write of
            // the transaction, so refusing here leaves the guest untouched.
            // (Our own user is locked, so the winner is always another user.)
            let inserted = try connection.execute(
                """
                INSERT INTO identities (provider, subject, user_id, email, linked_at) VALUES ($1, $2, $3, $4, $5)
                ON CONFLICT (provider, subject) DO NOTHING
                """,
                [
                    PostgresValue(provider), PostgresValue(request.subject), PostgresValue(userID),
                    request.email.map { PostgresValue($0) }, PostgresValue(now),
                ]
            ).changes
            if inserted == 0 { throw identityTaken(userID: userID, provider: provider) }
            try connection.execute(
                "UPDATE users SET state = $1, linked_at = coalesce(linked_at, $2), prompt_state = $3 WHERE id = $4",
                [
                    PostgresValue(UserState.linked.rawValue), PostgresValue(now),
                    PostgresValue(PromptState.authenticated.rawValue), PostgresValue(userID),
                ])
            // Only now that the identity is bound may the guest's own credentials go.
            let removedCredentials =
                try connection.execute("DELETE FROM credentials WHERE user_id = $1", [PostgresValue(userID)]).changes
                > 0
            try releaseUpgradeLock(of: userID, connection)
            try appendSystemEvent(
                user: userID, action: "account_upgrade_succeeded", properties: ["provider": provider], at: now,
                connection)
            try touch(userID, at: now, connection)
            try noteChange(of: userID, profile: profile, now: now, connection)
            return LinkResult(
                user: userID, provider: provider, subject: request.subject, isNewlyLinked: true,
                removedAnonymousCredentials: removedCredentials)
        }
    }

    public func abandonLink(user userID: String, provider: String, failureCode: String, now: Date) throws {
        try write { connection in
            // The user may be gone (deleted mid-link); an event would then have no owner.
            let user = try findUser(userID, locking: true, connection)
            try releaseUpgradeLock(of: userID, connection)
            guard user != nil else { return }
            try appendSystemEvent(
                user: userID, action: "account_upgrade_failed",
                properties: ["provider": provider, "code": failureCode], at: now, connection)
        }
    }

    public func unlink(user userID: String, provider: String, profile: Profile, now: Date) throws -> User {
        try write { connection in
            _ = try requireUser(userID, locking: true, connection)
            let removed = try connection.execute(
                "DELETE FROM identities WHERE user_id = $1 AND provider = $2",
                [PostgresValue(userID), PostgresValue(provider)]
            ).changes
            if removed == 0 {
                throw GuestModeError(.notFound, code: .identityNotFound, "user '\(userID)' has no \(provider) identity")
            }
            let remaining =
                try connection.execute(
                    "SELECT count(*) AS n FROM identities WHERE user_id = $1", [PostgresValue(userID)]
                ).first?.int("n") ?? 0
            if remaining == 0 {
                // Outcomes before the user's last `prompt reset` no longer count (a reset undid them).
                let outcomes = try connection.execute(
                    """
                    SELECT outcome FROM prompt_outcomes
                    WHERE user_id = $1 AND at COLLATE "C" > COALESCE(
                        (SELECT max(at COLLATE "C") FROM events WHERE user_id = $1 AND action = 'prompt_reset'), '')
                    ORDER BY at COLLATE "C", id
                    """,
                    [PostgresValue(userID)]
                ).map { try $0.decode("outcome", as: PromptOutcome.self) }
                try connection.execute(
                    "UPDATE users SET state = $1, linked_at = NULL, prompt_state = $2 WHERE id = $3",
                    [
                        PostgresValue(UserState.anonymous.rawValue),
                        PostgresValue(PromptState.afterUnlinking(outcomes: outcomes).rawValue), PostgresValue(userID),
                    ])
            }
            try appendSystemEvent(
                user: userID, action: "account_unlinked", properties: ["provider": provider], at: now, connection)
            try noteChange(of: userID, profile: profile, now: now, connection)
            return try requireUser(userID, connection)
        }
    }

    private func identityTaken(userID: String, provider: String) -> GuestModeError {
        GuestModeError(
            .conflict, code: .identityAlreadyExists,
            "the \(provider) identity is already linked to another user; the guest '\(userID)' was left untouched (merge it with 'guestmode merge')"
        )
    }

    /// The user an identity is bound to, if any.
    private func owner(of request: LinkRequest, _ connection: PostgresConnection) throws -> String? {
        try connection.execute(
            "SELECT user_id FROM identities WHERE provider = $1 AND subject = $2",
            [PostgresValue(request.provider), PostgresValue(request.subject)]
        ).first?.string("user_id")
    }

    private func releaseUpgradeLock(of userID: String, _ connection: PostgresConnection) throws {
        try connection.execute("DELETE FROM upgrade_locks WHERE user_id = $1", [PostgresValue(userID)])
    }
}
