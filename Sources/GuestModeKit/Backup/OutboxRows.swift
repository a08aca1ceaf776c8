import Foundation

/// The backup queue's rows in one transaction (see `StoreTransaction`).
public protocol OutboxRows {
    /// When the user's pending backup was queued, or nil when none is.
    func backupQueuedAt(of userID: String, locking: Bool) throws -> Date?

    /// Queues a backup of the user at `time`: a new entry starts with no
    /// attempts; an existing one gets the new time and keeps its attempts
    /// and retry time.
    func queueBackup(of userID: String, at time: Date) throws
}
