import Foundation

/// Appending events, one or a batch, and reading counters.
/// Each method is one whole use case in one transaction.
public protocol EventStore: Sendable {
    /// Appends one (validated) event of an existing user unless its
    /// idempotency key was already counted for that user; when it counts,
    /// the counter grows by its count, last-seen moves forward and a backup
    /// is queued when the profile asks for it. The result carries the
    /// counter's total either way. A key seen before with another action is
    /// a client bug: throws `idempotency_key_reused` and changes nothing.
    /// Throws when the user does not exist.
    func trackEvent(_ event: TrackedEvent, profile: Profile, now: Date) throws -> TrackResult

    /// The bulk form of `trackEvent` for ingesting a log, all of it in one
    /// transaction: `feed` calls the given `apply` once per batch, in order.
    /// With `creatingUsers`, users not in the store are first created as
    /// anonymous guests first seen at their first event of the batch; each
    /// event then counts unless its idempotency key was counted (a repeated
    /// log counts nothing). Counters, last-seen and the backup outbox are
    /// updated once per user and action in a batch, not once per event, so
    /// batches of thousands stay fast. Any failure (a reused key, a missing
    /// user, `feed` throwing) rolls the whole log back, so nothing of it is
    /// ever half-applied. A store may run the transaction again (a
    /// serialization retry): `feed` must then start afresh.
    func applyEvents(
        creatingUsers: Bool, profile: Profile, now: Date,
        _ feed: (_ apply: ([TrackedEvent]) throws -> EventBatchResult) throws -> Void
    ) throws

    /// The user's counters by action. Throws when the user does not exist.
    func counters(of userID: String) throws -> [String: Int]

    /// Whether a user exists; ingestion checks every line before writing.
    func containsUser(_ userID: String) throws -> Bool

    /// The user's events, oldest first (by time, then id): only `action`
    /// when given, only at or after `since` when given, and only the latest
    /// `limit` when given. Throws when the user does not exist.
    func events(of userID: String, action: String?, since: Date?, limit: Int?) throws -> [LoggedEvent]
}

extension EventStore {
    /// `applyEvents(creatingUsers:profile:now:_:)` for one batch.
    public func applyEvents(
        _ events: [TrackedEvent], creatingUsers: Bool, profile: Profile, now: Date
    ) throws -> EventBatchResult {
        var result = EventBatchResult(counted: 0, duplicates: 0, usersCreated: 0)
        try applyEvents(creatingUsers: creatingUsers, profile: profile, now: now) { apply in
            result = try apply(events)
        }
        return result
    }
}

/// What one batch of `EventStore.applyEvents` did.
public struct EventBatchResult: Sendable, Equatable {
    /// Events that counted.
    public var counted: Int
    /// Events whose idempotency key had already counted.
    public var duplicates: Int
    public var usersCreated: Int

    public init(counted: Int, duplicates: Int, usersCreated: Int) {
        self.counted = counted
        self.duplicates = duplicates
        self.usersCreated = usersCreated
    }
}
