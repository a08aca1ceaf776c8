import Foundation

/// The backup queue's rows in one transaction (see `StoreTransaction`).
package protocol OutboxRows {
    /// When the user's pending backup was queued, or nil when none is.
    func backupQueuedAt(of userID: String, locking: Bool) throws -> Date?

    /// Queues a backup of the user at `time`: a new entry starts with no
    /// attempts; an existing one gets the new time and keeps its attempts
    /// and retry time.
    func queueBackup(of userID: String, at time: Date) throws

    /// Every entry, oldest `queuedAt` first (then by user id, byte by byte).
    func outboxEntries() throws -> [OutboxEntry]

    /// The user's entry, or nil when none is queued. With `locking`, the
    /// entry stays locked until the transaction ends; a transaction queueing
    /// the user at the same time is waited for, and its entry is the one read.
    func outboxEntry(of userID: String, locking: Bool) throws -> OutboxEntry?

    /// Removes the user's entry, if any.
    func deleteOutboxEntry(of userID: String) throws

    /// Sets the attempt count, last error and next attempt time of the
    /// user's entry; changes nothing when none is queued.
    func setRetryState(of userID: String, attempts: Int, lastError: String?, nextAttemptAt: Date?) throws
}
