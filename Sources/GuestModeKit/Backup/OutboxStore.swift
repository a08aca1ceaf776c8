import Foundation

/// The outbox of queued backups: one entry per user whose data changed
/// since their last pushed backup (entries are added by the transactions
/// that change data). Each method is one whole use case in one transaction.
public protocol OutboxStore: Sendable {
    /// Every entry, oldest `queuedAt` first.
    func outboxEntries() throws -> [OutboxEntry]

    /// Settles a push whose archive is already on disk. The entry goes only
    /// if its `queuedAt` is still the one the push read; a user who changed
    /// while the archive was written stays queued, with its attempts and
    /// retry time cleared (the destination works).
    func recordPushSuccess(userID: String, queuedAt: String) throws -> OutboxPushOutcome

    /// Keeps the entry after a failed push, with its attempt count, the
    /// error and when to try again.
    func recordPushFailure(userID: String, attempts: Int, error: String, nextAttemptAt: Date) throws

    /// Removes the entry of a user who no longer exists, if its `queuedAt`
    /// is unchanged. Returns false, changing nothing, when the user exists
    /// or the entry changed.
    func dropOutboxEntry(userID: String, queuedAt: String) throws -> Bool
}

/// What a successful push did to its outbox entry.
public enum OutboxPushOutcome: String, Codable, Sendable {
    /// The entry is gone: the archive holds the user's latest data.
    case removed
    /// The user changed while the archive was written, so they stay queued.
    case keptQueued
}
