import Foundation

/// The event and counter rows of one transaction (see `StoreTransaction`),
/// and the set forms of user and outbox rows a batch of events touches: a
/// log of 100,000 events is applied in batches of thousands, and each batch
/// reads and writes these rows once per user (or per user and action), not
/// once per event.
package protocol EventRows {
    /// Appends one event row; `properties` is the stored JSON text.
    func appendEvent(user userID: String, action: String, at time: Date, count: Int, properties: String) throws

    /// Appends the rows in order, except each row whose user already has a
    /// stored event under the row's idempotency key. Returns the rows not
    /// appended: their index in `rows` and what the event stored under the
    /// key reported. The keys of one call are distinct per user (the caller
    /// settles a key repeated within a batch).
    func appendEvents(_ rows: [EventRow]) throws -> [Int: EventPayload]

    /// Adds `count` to the user's counter of `action`, creating it at
    /// `count`. A total that would pass `Bounds.maximumCounterTotal`, or a
    /// stored total that is not a count, throws `counter_overflow` and
    /// changes nothing.
    func addToCounter(user userID: String, action: String, count: Int) throws

    /// `addToCounter(user:action:count:)` for each increment; each user and
    /// action appears once.
    func addToCounters(_ increments: [CounterIncrement]) throws

    /// The total of the user's counter of `action`; 0 when it has none.
    func counterTotal(of userID: String, action: String) throws -> Int

    /// The user's counters by action.
    func counters(of userID: String) throws -> [String: Int]

    /// The user's events, oldest first (by time, then insertion): only
    /// `action` when given, only at or after `since` when given, and only the
    /// latest `limit` when given.
    func events(of userID: String, action: String?, since: Date?, limit: Int?) throws -> [LoggedEvent]

    /// Creates a user in `state` with `promptState`, first and last seen at
    /// the given times, for each user id that is not in the store; returns
    /// the ids created. The new rows stay locked until the end of the
    /// transaction.
    func createMissingGuests(
        _ guests: [(user: String, firstSeen: Date, lastSeen: Date)], state: UserState, promptState: String
    ) throws -> Set<String>

    /// The ids among `userIDs` that exist, their rows locked until the end
    /// of the transaction (taken in id order).
    func lockUsers(_ userIDs: [String]) throws -> Set<String>

    /// `advanceLastSeen(of:to:)` for each user.
    func advanceLastSeen(_ times: [String: Date]) throws

    /// When each user's pending backup was queued, for those of `userIDs`
    /// that have one; the outbox rows stay locked until the end of the
    /// transaction.
    func backupQueueTimes(of userIDs: [String]) throws -> [String: Date]

    /// `queueBackup(of:at:)` for each user.
    func queueBackups(_ times: [String: Date]) throws
}

/// What an event reports, as an idempotency key names it: the same key
/// with the same payload is a retry; with another, a client bug. The time is
/// not part of it: a retry happens later.
package struct EventPayload: Sendable, Equatable {
    package var action: String
    package var count: Int
    /// The stored JSON text of the properties, or nil when there are none.
    package var properties: String?

    package init(action: String, count: Int, properties: String?) {
        self.action = action
        self.count = count
        self.properties = properties
    }
}

/// An event row to append (`EventRows.appendEvents`).
package struct EventRow: Sendable, Equatable {
    package var user: String
    package var action: String
    package var at: Date
    package var count: Int
    package var idempotencyKey: String?
    /// The stored JSON text of the properties, or nil when there are none.
    package var properties: String?

    package init(user: String, action: String, at: Date, count: Int, idempotencyKey: String?, properties: String?) {
        self.user = user
        self.action = action
        self.at = at
        self.count = count
        self.idempotencyKey = idempotencyKey
        self.properties = properties
    }

    /// What the row reports.
    package var payload: EventPayload { EventPayload(action: action, count: count, properties: properties) }
}

/// An amount to add to one counter (`EventRows.addToCounters`).
package struct CounterIncrement: Sendable, Equatable {
    package var user: String
    package var action: String
    package var count: Int

    package init(user: String, action: String, count: Int) {
        self.user = user
        self.action = action
        self.count = count
    }
}

extension StoreTransaction {
    /// Records what guestmode itself did (an upgrade, a warning, a prompt
    /// outcome) as an event that counts like any other; never a token.
    func appendSystemEvent(user userID: String, action: String, properties: [String: String], at time: Date) throws {
        try appendEvent(
            user: userID, action: action, at: time, count: 1, properties: EventLog.encodeProperties(properties))
        try addToCounter(user: userID, action: action, count: 1)
    }
}

extension EventRow {
    /// What a backend reports when the row was neither appended nor found
    /// under its key: a conflict the events table's keys cannot explain.
    package var notAppended: GuestModeError {
        GuestModeError(
            .internalFailure,
            "an event of user '\(user)' was neither appended nor found under its idempotency key")
    }
}
