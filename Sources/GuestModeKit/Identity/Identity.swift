import Foundation
import GRDB

public struct LinkResult: Codable, Sendable {
    public var user: String
    public var provider: String
    public var subject: String
    /// False when the identity was already bound to this user.
    public var isNewlyLinked: Bool
    public var removedAnonymousCredentials: Bool
}

/// Where a link can be stopped by a test to simulate a process that is
/// still running (or was killed) mid-upgrade.
public enum LinkCheckpoint: Sendable {
    case afterLock
}

extension GuestMode {
    /// How long an upgrade lock is honoured; older locks are from processes
    /// that died and no longer block a new attempt.
    static let upgradeLockLifetime: TimeInterval = 10 * 60

    /// Upgrades a user in place: the identity is bound to the same user id,
    /// so sessions, records, usage and plans stay where they are. On any
    /// failure the user is left exactly as it was.
    public func link(
        user userID: String, provider: String, subject: String, email: String?, now: Date,
        checkpoint: (LinkCheckpoint) throws -> Void = { _ in }
    ) throws -> LinkResult {
        guard profile.identity.providers.contains(provider) else {
            throw GuestModeError.usage(
                "unknown provider '\(provider)'; this profile accepts: \(profile.identity.providers.joined(separator: ", "))",
                code: "unknown_provider")
        }
        guard !subject.isEmpty else { throw GuestModeError.usage("--subject must not be empty", code: "empty_subject") }
        let nowText = Timestamp.format(now)

        let isAlreadyLinked = try store.write { db in
            _ = try store.requireUser(userID, db)
            if try String.fetchOne(
                db, sql: "SELECT user_id FROM identities WHERE provider = ? AND subject = ?", arguments: [provider, subject]
            ) == userID {
                return true
            }
            if let started = try String.fetchOne(
                db, sql: "SELECT started_at FROM upgrade_locks WHERE user_id = ?", arguments: [userID]),
                let startedAt = Timestamp.parse(started),
                now.timeIntervalSince(startedAt) < GuestMode.upgradeLockLifetime
            {
                throw GuestModeError.conflict(
                    "an account upgrade of user '\(userID)' is already in progress (started \(started)); wait for it to finish",
                    code: "upgrade_in_progress")
            }
            try db.execute(
                sql: """
                    INSERT INTO upgrade_locks (user_id, provider, started_at) VALUES (?, ?, ?)
                    ON CONFLICT(user_id) DO UPDATE SET provider = excluded.provider, started_at = excluded.started_at
                    """,
                arguments: [userID, provider, nowText])
            try store.appendSystemEvent(
                user: userID, action: "account_upgrade_started", properties: ["provider": provider], at: now, db)
            return false
        }
        if isAlreadyLinked {
            return LinkResult(
                user: userID, provider: provider, subject: subject, isNewlyLinked: false, removedAnonymousCredentials: false)
        }
        try checkpoint(.afterLock)

        do {
            return try store.write { db in
                _ = try store.requireUser(userID, db)
                if let owner = try String.fetchOne(
                    db, sql: "SELECT user_id FROM identities WHERE provider = ? AND subject = ?",
                    arguments: [provider, subject])
                {
                    if owner != userID {
                        throw GuestModeError.conflict(
                            "the \(provider) identity is already linked to another user; the guest '\(userID)' was left untouched (merge it with 'guestmode merge')",
                            code: "identity_already_exists")
                    }
                    try db.execute(sql: "DELETE FROM upgrade_locks WHERE user_id = ?", arguments: [userID])
                    return LinkResult(
                        user: userID, provider: provider, subject: subject, isNewlyLinked: false,
                        removedAnonymousCredentials: false)
                }
                let existing = try store.identities(of: userID, db)
                if existing.contains(where: { $0.provider == provider }) {
                    throw GuestModeError.conflict(
                        "user '\(userID)' already has a \(provider) identity; unlink it first", code: "provider_already_linked")
                }
                if existing.count >= profile.identity.maximumProvidersPerUser {
                    throw GuestModeError.conflict(
                        "user '\(userID)' already has \(existing.count) linked provider(s), the most this profile allows (identity.max_providers_per_user)",
                        code: "too_many_providers")
                }
                try db.execute(
                    sql: "INSERT INTO identities (provider, subject, user_id, email, linked_at) VALUES (?, ?, ?, ?, ?)",
                    arguments: [provider, subject, userID, email, nowText])
                try db.execute(
                    sql: """
                        UPDATE users SET state = 'linked', linked_at = coalesce(linked_at, ?),
                            prompt_state = 'authenticated' WHERE id = ?
                        """,
                    arguments: [nowText, userID])
                // Only now that the identity is bound may the guest's own credentials go.
                try db.execute(sql: "DELETE FROM credentials WHERE user_id = ?", arguments: [userID])
                let removedCredentials = db.changesCount > 0
                try db.execute(sql: "DELETE FROM upgrade_locks WHERE user_id = ?", arguments: [userID])
                try store.appendSystemEvent(
                    user: userID, action: "account_upgrade_succeeded", properties: ["provider": provider], at: now, db)
                try store.touch(userID, at: now, db)
                try store.noteChange(of: userID, profile: profile, now: now, db)
                return LinkResult(
                    user: userID, provider: provider, subject: subject, isNewlyLinked: true,
                    removedAnonymousCredentials: removedCredentials)
            }
        } catch {
            let code = (error as? GuestModeError)?.code ?? "internal"
            try? store.write { db in
                try db.execute(sql: "DELETE FROM upgrade_locks WHERE user_id = ?", arguments: [userID])
                try store.appendSystemEvent(
                    user: userID, action: "account_upgrade_failed",
                    properties: ["provider": provider, "code": code], at: now, db)
            }
            throw error
        }
    }

    /// Removes one identity; a user left without any becomes anonymous again.
    public func unlink(user userID: String, provider: String, now: Date) throws -> User {
        try store.write { db in
            _ = try store.requireUser(userID, db)
            try db.execute(sql: "DELETE FROM identities WHERE user_id = ? AND provider = ?", arguments: [userID, provider])
            if db.changesCount == 0 {
                throw GuestModeError.notFound("user '\(userID)' has no \(provider) identity", code: "identity_not_found")
            }
            let remaining = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM identities WHERE user_id = ?", arguments: [userID]) ?? 0
            if remaining == 0 {
                // Back to what the prompt history says, so "never ask again" survives an unlink.
                let outcomes = try String.fetchAll(
                    db, sql: "SELECT outcome FROM prompt_outcomes WHERE user_id = ? ORDER BY at, id", arguments: [userID])
                var promptState = outcomes.compactMap(PromptOutcome.init(rawValue:)).reduce(PromptState.anonymous) { $0.after($1) }
                if promptState == .authenticated { promptState = .anonymous }
                try db.execute(
                    sql: "UPDATE users SET state = 'anonymous', linked_at = NULL, prompt_state = ? WHERE id = ?",
                    arguments: [promptState.rawValue, userID])
            }
            try store.appendSystemEvent(user: userID, action: "account_unlinked", properties: ["provider": provider], at: now, db)
            try store.noteChange(of: userID, profile: profile, now: now, db)
            return try store.requireUser(userID, db)
        }
    }
}
