import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteStore: IdentityStore {
    public func beginLink(_ request: LinkRequest, staleLocksBefore: Date, now: Date) throws -> LinkBeginning {
        try write { db in
            _ = try requireUser(request.user, db)
            if try owner(of: request, db) == request.user { return .alreadyLinked }
            if let started = try StoredTime.fetchOne(
                db, sql: "SELECT started_at FROM upgrade_locks WHERE user_id = ?", arguments: [request.user]),
                started.date > staleLocksBefore
            {
                throw GuestModeError(
                    .conflict, code: .upgradeInProgress,
                    "an account upgrade of user '\(request.user)' is already in progress (started \(Timestamp.format(started.date))); wait for it to finish"
                )
            }
            try db.execute(
                sql: """
                    INSERT INTO upgrade_locks (user_id, provider, started_at) VALUES (?, ?, ?)
                    ON CONFLICT(user_id) DO UPDATE SET provider = excluded.provider, started_at = excluded.started_at
                    """,
                arguments: [request.user, request.provider, Timestamp.format(now)])
            try appendSystemEvent(
                user: request.user, action: "account_upgrade_started", properties: ["provider": request.provider],
                at: now, db)
            return .started
        }
    }

    public func completeLink(_ request: LinkRequest, profile: Profile, now: Date) throws -> LinkResult {
        let userID = request.user
        let provider = request.provider
        return try write { db in
            _ = try requireUser(userID, db)
            if let owner = try owner(of: request, db) {
                if owner != userID {
                    throw GuestModeError(
                        .conflict, code: .identityAlreadyExists,
                        "the \(provider) identity is already linked to another user; the guest '\(userID)' was left untouched (merge it with 'guestmode merge')"
                    )
                }
                try releaseUpgradeLock(of: userID, db)
                return LinkResult(
                    user: userID, provider: provider, subject: request.subject, isNewlyLinked: false,
                    removedAnonymousCredentials: false)
            }
            let existing = try identities(of: userID, db)
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
            let nowText = Timestamp.format(now)
            try db.execute(
                sql: "INSERT INTO identities (provider, subject, user_id, email, linked_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [provider, request.subject, userID, request.email, nowText])
            try db.execute(
                sql: "UPDATE users SET state = ?, linked_at = coalesce(linked_at, ?), prompt_state = ? WHERE id = ?",
                arguments: [UserState.linked.rawValue, nowText, PromptState.authenticated.rawValue, userID])
            // Only now that the identity is bound may the guest's own credentials go.
            try db.execute(sql: "DELETE FROM credentials WHERE user_id = ?", arguments: [userID])
            let removedCredentials = db.changesCount > 0
            try releaseUpgradeLock(of: userID, db)
            try appendSystemEvent(
                user: userID, action: "account_upgrade_succeeded", properties: ["provider": provider], at: now, db)
            try touch(userID, at: now, db)
            try noteChange(of: userID, profile: profile, now: now, db)
            return LinkResult(
                user: userID, provider: provider, subject: request.subject, isNewlyLinked: true,
                removedAnonymousCredentials: removedCredentials)
        }
    }

    public func abandonLink(user userID: String, provider: String, failureCode: String, now: Date) throws {
        try write { db in
            try releaseUpgradeLock(of: userID, db)
            // The user may be gone (deleted mid-link); an event would then have no owner.
            guard try findUser(userID, db) != nil else { return }
            try appendSystemEvent(
                user: userID, action: "account_upgrade_failed",
                properties: ["provider": provider, "code": failureCode], at: now, db)
        }
    }

    public func unlink(user userID: String, provider: String, profile: Profile, now: Date) throws -> User {
        try write { db in
            _ = try requireUser(userID, db)
            try db.execute(
                sql: "DELETE FROM identities WHERE user_id = ? AND provider = ?", arguments: [userID, provider])
            if db.changesCount == 0 {
                throw GuestModeError(.notFound, code: .identityNotFound, "user '\(userID)' has no \(provider) identity")
            }
            let remaining =
                try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM identities WHERE user_id = ?", arguments: [userID]) ?? 0
            if remaining == 0 {
                // Outcomes before the user's last `prompt reset` no longer count (a reset undid them).
                let outcomes = try StoredCase<PromptOutcome>.fetchAll(
                    db,
                    sql: """
                        SELECT outcome FROM prompt_outcomes
                        WHERE user_id = ?1 AND at > COALESCE(
                            (SELECT MAX(at) FROM events WHERE user_id = ?1 AND action = 'prompt_reset'), '')
                        ORDER BY at, id
                        """,
                    arguments: [userID]
                ).map(\.value)
                try db.execute(
                    sql: "UPDATE users SET state = ?, linked_at = NULL, prompt_state = ? WHERE id = ?",
                    arguments: [
                        UserState.anonymous.rawValue, PromptState.afterUnlinking(outcomes: outcomes).rawValue, userID,
                    ])
            }
            try appendSystemEvent(
                user: userID, action: "account_unlinked", properties: ["provider": provider], at: now, db)
            try noteChange(of: userID, profile: profile, now: now, db)
            return try requireUser(userID, db)
        }
    }

    /// The user an identity is bound to, if any.
    private func owner(of request: LinkRequest, _ db: Database) throws -> String? {
        try String.fetchOne(
            db, sql: "SELECT user_id FROM identities WHERE provider = ? AND subject = ?",
            arguments: [request.provider, request.subject])
    }

    private func releaseUpgradeLock(of userID: String, _ db: Database) throws {
        try db.execute(sql: "DELETE FROM upgrade_locks WHERE user_id = ?", arguments: [userID])
    }
}
