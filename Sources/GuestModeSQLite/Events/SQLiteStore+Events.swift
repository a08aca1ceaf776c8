import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteStore: EventStore {
    public func trackEvent(_ event: TrackedEvent, profile: Profile, now: Date) throws -> TrackResult {
        try write { db in
            _ = try requireUser(event.user, db)
            return try apply(event, profile: profile, now: now, db)
        }
    }

    /// The step `trackEvent` takes inside its transaction; a replay, which
    /// runs a whole log in one transaction, takes it once per event.
    func apply(_ event: TrackedEvent, profile: Profile, now: Date, _ db: Database) throws -> TrackResult {
        let isCounted = try append(event, db)
        if isCounted {
            try addToCounter(user: event.user, action: event.action, count: event.count, db)
            try touch(event.user, at: event.at, db)
            try noteChange(of: event.user, profile: profile, now: now, db)
        }
        let total =
            try Int.fetchOne(
                db.cachedStatement(sql: "SELECT total FROM counters WHERE user_id = ? AND action = ?"),
                arguments: [event.user, event.action]) ?? 0
        return TrackResult(user: event.user, action: event.action, isCounted: isCounted, total: total)
    }

    /// Each event is appended (its idempotency key decides whether it
    /// counts), then counters, last-seen and the outbox are updated once per
    /// user and action rather than once per event. Statements run per event
    /// are cached.
    public func applyEvents(
        creatingUsers: Bool, profile: Profile, now: Date,
        _ feed: (_ apply: ([TrackedEvent]) throws -> EventBatchResult) throws -> Void
    ) throws {
        try write { db in
            try useBulkCache(db)
            try feed { events in try applyBatch(events, creatingUsers: creatingUsers, profile: profile, now: now, db) }
        }
    }

    private func applyBatch(
        _ events: [TrackedEvent], creatingUsers: Bool, profile: Profile, now: Date, _ db: Database
    ) throws -> EventBatchResult {
        var created = 0
        if creatingUsers {
            var seen = Set<String>()
            for event in events where seen.insert(event.user).inserted {
                if try createGuestIfMissing(event.user, firstSeenAt: event.at, db) { created += 1 }
            }
        }
        struct CounterKey: Hashable {
            var user: String
            var action: String
        }
        var increments: [CounterKey: Int] = [:]
        var lastSeen: [String: Date] = [:]
        var duplicates = 0
        for event in events {
            guard try append(event, db) else {
                duplicates += 1
                continue
            }
            let key = CounterKey(user: event.user, action: event.action)
            increments[key] = Int(
                try Bounds.addingToCounter(
                    Int64(increments[key, default: 0]), Int64(event.count), action: event.action, user: event.user))
            lastSeen[event.user] = max(lastSeen[event.user] ?? event.at, event.at)
        }
        for (key, count) in increments { try addToCounter(user: key.user, action: key.action, count: count, db) }
        for (user, time) in lastSeen {
            try touch(user, at: time, db)
            try noteChange(of: user, profile: profile, now: now, db)
        }
        return EventBatchResult(counted: events.count - duplicates, duplicates: duplicates, usersCreated: created)
    }

    public func counters(of userID: String) throws -> [String: Int] {
        try read { db in
            _ = try requireUser(userID, db)
            return try counters(of: userID, db)
        }
    }

    public func containsUser(_ userID: String) throws -> Bool {
        try read { db in
            try Bool.fetchOne(db, sql: "SELECT 1 FROM users WHERE id = ?", arguments: [userID]) ?? false
        }
    }

    public func events(of userID: String, action: String?, since: Date?, limit: Int?) throws -> [LoggedEvent] {
        try read { db in
            _ = try requireUser(userID, db)
            var sql = "SELECT id, user_id, action, at, count, idempotency_key, properties FROM events WHERE user_id = ?"
            var arguments: [any DatabaseValueConvertible] = [userID]
            if let action {
                sql += " AND action = ?"
                arguments.append(action)
            }
            if let since {
                sql += " AND at >= ?"
                arguments.append(Timestamp.format(since))
            }
            sql += " ORDER BY at DESC, id DESC"
            if let limit {
                sql += " LIMIT ?"
                arguments.append(limit)
            }
            let rows = try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments))
            return try rows.reversed().map { row in
                LoggedEvent(
                    id: try row.decode(forColumn: "id"), userId: try row.decode(forColumn: "user_id"),
                    action: try row.decode(forColumn: "action"), at: try row.time("at"), count: try row.decode(forColumn: "count"),
                    idempotencyKey: try row.decode(forColumn: "idempotency_key"),
                    properties: LoggedEvent.decodeProperties(try row.decode(forColumn: "properties")))
            }
        }
    }

    /// Creates an anonymous guest unless the user exists; true when created.
    private func createGuestIfMissing(_ userID: String, firstSeenAt time: Date, _ db: Database) throws -> Bool {
        let at = Timestamp.format(time)
        try db.cachedStatement(
            sql: """
                INSERT INTO users (id, device, state, prompt_state, created_at, last_seen_at, linked_at)
                VALUES (?, NULL, 'anonymous', 'anonymous', ?, ?, NULL)
                ON CONFLICT(id) DO NOTHING
                """
        ).execute(arguments: [userID, at, at])
        return db.changesCount > 0
    }

    /// Appends the event unless its idempotency key was seen; true when it
    /// was appended. A key seen with another action is a client bug, refused.
    private func append(_ event: TrackedEvent, _ db: Database) throws -> Bool {
        let properties = event.properties.isEmpty ? nil : EventLog.encodeProperties(event.properties)
        // Cached statements: bulk ingestion runs these once per event.
        try db.cachedStatement(
            sql: """
                INSERT INTO events (user_id, action, at, count, idempotency_key, properties)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT DO NOTHING
                """
        ).execute(arguments: [
            event.user, event.action, Timestamp.format(event.at), event.count, event.idempotencyKey, properties,
        ])
        if db.changesCount > 0 { return true }
        if let key = event.idempotencyKey,
            let counted = try String.fetchOne(
                db.cachedStatement(sql: "SELECT action FROM events WHERE user_id = ? AND idempotency_key = ?"),
                arguments: [event.user, key]),
            counted != event.action
        {
            throw GuestModeError(
                .conflict, code: .idempotencyKeyReused,
                "idempotency key '\(key)' of user '\(event.user)' was already used for '\(counted)', not '\(event.action)'; keys identify one report"
            )
        }
        return false
    }

    /// SQLite turns an integer sum that overflows into a REAL, silently: the
    /// update only runs while the sum stays within `Bounds`, and a counter
    /// left as it was means the addition is refused.
    func addToCounter(user: String, action: String, count: Int, _ db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO counters (user_id, action, total) VALUES (?, ?, ?)
                ON CONFLICT(user_id, action) DO UPDATE SET total = total + excluded.total
                WHERE typeof(total) = 'integer' AND total >= 0 AND total <= \(Bounds.maximumCounterTotal) - excluded.total
                """
        ).execute(arguments: [user, action, count])
        guard db.changesCount == 0 else { return }
        let total =
            try String.fetchOne(
                db, sql: "SELECT CAST(total AS TEXT) FROM counters WHERE user_id = ? AND action = ?",
                arguments: [user, action]) ?? "?"
        throw Bounds.counterOverflow(action: action, user: user, total: total, adding: Int64(count))
    }
}
