import Foundation

/// A user whose data changed since their last backup was pushed.
public struct OutboxEntry: Codable, Sendable, Equatable {
    public var userId: String
    /// When the latest change was queued; it only ever moves forward, so a
    /// push can tell whether the user changed while their archive was written.
    public var queuedAt: String
    public var attempts: Int
    public var lastError: String?
    public var nextAttemptAt: String?

    public init(userId: String, queuedAt: String, attempts: Int, lastError: String?, nextAttemptAt: String?) {
        self.userId = userId
        self.queuedAt = queuedAt
        self.attempts = attempts
        self.lastError = lastError
        self.nextAttemptAt = nextAttemptAt
    }
}

extension GuestMode {
    public func backupQueue() throws -> [OutboxEntry] {
        try store.outboxEntries()
    }
}
