import Foundation

/// A user whose data changed since their last backup was pushed.
public struct OutboxEntry: Codable, Sendable, Equatable {
    /// The user to back up.
    public var userID: String
    /// When the latest change was queued; it only ever moves forward, so a
    /// push can tell whether the user changed while their archive was written.
    public var queuedAt: Date
    /// Failed pushes of this entry so far.
    public var attempts: Int
    /// Why the last push failed; nil before any failure.
    public var lastError: String?
    /// When the next push may be tried; nil when it may be tried now.
    public var nextAttemptAt: Date?

    package init(userID: String, queuedAt: Date, attempts: Int, lastError: String?, nextAttemptAt: Date?) {
        self.userID = userID
        self.queuedAt = queuedAt
        self.attempts = attempts
        self.lastError = lastError
        self.nextAttemptAt = nextAttemptAt
    }
}

/// What a successful push did to its outbox entry.
package enum OutboxPushOutcome: String, Codable, Sendable {
    /// The entry is gone: the archive holds the user's latest data.
    case removed
    /// The user changed while the archive was written, so they stay queued.
    case keptQueued
}

extension StoreTransaction {
    /// Settles a push of the user's data queued at `queuedAt` whose archive
    /// is already on disk. The entry goes only if it still holds that time; a
    /// user who changed while the archive was written stays queued, with its
    /// attempts and retry time cleared (the destination works).
    func settlePush(of userID: String, queuedAt: Date) throws -> OutboxPushOutcome {
        // Locked: a change queued at the same time is waited for, so it is
        // either seen here (and kept) or queued after the removal.
        guard let entry = try outboxEntry(of: userID, locking: true) else { return .removed }
        if entry.queuedAt == queuedAt {
            try deleteOutboxEntry(of: userID)
            return .removed
        }
        try setRetryState(of: userID, attempts: 0, lastError: nil, nextAttemptAt: nil)
        return .keptQueued
    }
}

extension GuestMode {
    /// Every queued backup, oldest first.
    public func backupQueue() throws -> [OutboxEntry] {
        try store.read { transaction in try transaction.outboxEntries() }
    }

    /// Settles a push of `entry` whose archive is already on disk (see
    /// `OutboxPushOutcome`).
    package func settlePush(of entry: OutboxEntry, now: Date) throws -> OutboxPushOutcome {
        try store.write { transaction in
            let outcome = try transaction.settlePush(of: entry.userID, queuedAt: entry.queuedAt)
            try transaction.raiseWebhook(
                .backupPushed, user: entry.userID, data: ["queued_at": .string(Timestamp.format(entry.queuedAt))],
                at: now,
                profile: profile)
            return outcome
        }
    }

    /// Keeps `entry` after a failed push at `now`: one attempt more than the
    /// push read, the error, and when `retry` tries it again (an entry no
    /// longer queued stays gone). Returns the attempts and that time.
    package func recordFailedPush(
        of entry: OutboxEntry, error: String, retry: OutboxRetryPolicy, now: Date
    ) throws -> (attempts: Int, nextAttemptAt: Date) {
        let attempts = entry.attempts + 1
        let next = retry.nextAttempt(afterAttempts: attempts, failedAt: now)
        try store.write { transaction in
            try transaction.setRetryState(of: entry.userID, attempts: attempts, lastError: error, nextAttemptAt: next)
            try transaction.raiseWebhook(
                .backupFailed, user: entry.userID,
                data: [
                    "error": .string(error), "attempts": .number(String(attempts)),
                    "held": .bool(retry.isHeld(attempts: attempts)),
                ], at: now, profile: profile)
        }
        return (attempts, next)
    }

    /// Removes `entry` when its user was deleted since it was queued and it
    /// was not queued again since. Returns false, changing nothing, when the
    /// user exists or the entry changed.
    package func dropQueuedBackup(of entry: OutboxEntry) throws -> Bool {
        try store.write { transaction in
            guard let current = try transaction.outboxEntry(of: entry.userID, locking: true),
                current.queuedAt == entry.queuedAt, try transaction.user(entry.userID, locking: false) == nil
            else { return false }
            try transaction.deleteOutboxEntry(of: entry.userID)
            return true
        }
    }
}
