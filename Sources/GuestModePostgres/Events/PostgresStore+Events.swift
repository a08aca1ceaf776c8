import Foundation
import GuestModeKit

/// Events and counters on PostgreSQL, with the behaviour of SQLiteStore's.
///
/// Concurrency: `trackEvent` locks the user's row first, so one user's
/// events are decided one writer at a time across machines; the partial
/// unique index on (user_id, idempotency_key) with `ON CONFLICT DO NOTHING`
/// makes a key count once even without the lock, and counters grow by an
/// atomic upsert, so no increment is lost.
extension PostgresStore: EventStore {
    public func trackEvent(_ event: TrackedEvent, profile: Profile, now: Date) throws -> TrackResult {
        try write { connection in
            _ = try requireUser(event.user, locking: true, connection)
            return try apply(event, profile: profile, now: now, connection)
        }
    }

    /// The step `trackEvent` takes inside its transaction; a replay, which
    /// runs a whole log in one transaction, takes it once per event.
    func apply(
        _ event: TrackedEvent, profile: Profile, now: Date, _ connection: PostgresConnection
    ) throws
        -> TrackResult
    {
        let isCounted = try append(event, connection)
        if isCounted {
            try connection.execute(
                """
                INSERT INTO counters (user_id, action, total) VALUES ($1, $2, $3)
                ON CONFLICT (user_id, action) DO UPDATE SET total = counters.total + excluded.total
                """,
                [PostgresValue(event.user), PostgresValue(event.action), PostgresValue(event.count)])
            try touch(event.user, at: event.at, connection)
            try noteChange(of: event.user, profile: profile, now: now, connection)
        }
        let total =
            try connection.execute(
                "SELECT total FROM counters WHERE user_id = $1 AND action = $2",
                [PostgresValue(event.user), PostgresValue(event.action)]
            ).first?.int("total") ?? 0
        return TrackResult(user: event.user, action: event.action, isCounted: isCounted, total: total)
    }

    /// The bulk path of `track --from`: the batch is sent with one `COPY` into
    /// a temporary staging table and applied with set-based statements (users
    /// created, events inserted skipping counted keys, counters, last-seen and
    /// the outbox updated once per user and action), with the same results as
    /// SQLiteStore's batch. A batch of 5,000 events costs a handful of round
    /// trips instead of several per event.
    public func applyEvents(
        creatingUsers: Bool, profile: Profile, now: Date,
        _ feed: (_ apply: ([TrackedEvent]) throws -> EventBatchResult) throws -> Void
    ) throws {
        // `write` nests: each batch below runs inside this one transaction.
        try write { _ in
            try feed { events in try applyBatch(events, creatingUsers: creatingUsers, profile: profile, now: now) }
        }
    }

    private func applyBatch(
        _ events: [TrackedEvent], creatingUsers: Bool, profile: Profile, now: Date
    ) throws -> EventBatchResult {
        guard !events.isEmpty else { return EventBatchResult(counted: 0, duplicates: 0, usersCreated: 0) }
        let rows: [[PostgresValue?]] = events.enumerated().map { index, event in
            [
                PostgresValue(index), PostgresValue(event.user), PostgresValue(event.action), PostgresValue(event.at),
                PostgresValue(event.count), event.idempotencyKey.map { PostgresValue($0) },
                event.properties.isEmpty ? nil : PostgresValue(EventLog.encodeProperties(event.properties)),
            ]
        }
        return try write { connection in
            // ON COMMIT DROP ends it with the transaction; the explicit DROP at
            // the end lets a second batch run inside the same outer transaction.
            try connection.execute(
                """
                CREATE TEMP TABLE guestmode_event_batch (
                    seq BIGINT NOT NULL, user_id TEXT NOT NULL, action TEXT NOT NULL, at TEXT NOT NULL,
                    count BIGINT NOT NULL, idempotency_key TEXT, properties TEXT
                ) ON COMMIT DROP
                """)
            try connection.copy(
                """
                COPY pg_temp.guestmode_event_batch (seq, user_id, action, at, count, idempotency_key, properties)
                FROM STDIN
                """,
                rows: rows)
            try connection.execute("ANALYZE pg_temp.guestmode_event_batch")

            var created = 0
            if creatingUsers {
                // First seen at the user's first event of the batch, in batch
                // order. Inserted in id order, like the locks below, so two
                // batches creating the same users never wait on each other in a cycle.
                created = try connection.execute(
                    """
                    INSERT INTO users (id, device, state, prompt_state, created_at, last_seen_at, linked_at)
                    SELECT user_id, NULL, 'anonymous', 'anonymous', at, at, NULL FROM (
                        SELECT DISTINCT ON (user_id) user_id, at FROM pg_temp.guestmode_event_batch ORDER BY user_id, seq
                    ) first_events
                    ORDER BY user_id
                    ON CONFLICT (id) DO NOTHING
                    """
                ).changes
            }
            // The batch decides idempotency keys of all its users: their rows
            // are locked in a stable order (see PostgresStore).
            let present = Set(
                try connection.execute(
                    """
                    SELECT id FROM users WHERE id IN (SELECT user_id FROM pg_temp.guestmode_event_batch)
                    ORDER BY id FOR UPDATE
                    """
                ).map { try $0.string("id") })
            if let missing = events.first(where: { !present.contains($0.user) }) {
                throw GuestModeError.notFound(
                    "no user '\(missing.user)' in this store; nothing of the batch was written", code: .userNotFound)
            }

            // Within the batch, the first event of a key is the one that may
            // count; the insert skips every key already stored.
            let queueing = profile.backup.queuesOnChange
            let outbox = queueing ? Self.batchOutboxStep : ""
            let counted =
                try connection.execute(
                    """
                    WITH batch AS (
                        SELECT seq, user_id, action, at, count, idempotency_key, properties FROM (
                            SELECT *, row_number() OVER (PARTITION BY user_id, idempotency_key ORDER BY seq) AS rank
                            FROM pg_temp.guestmode_event_batch
                        ) ranked
                        WHERE idempotency_key IS NULL OR rank = 1
                    ), inserted AS (
                        INSERT INTO events (user_id, action, at, count, idempotency_key, properties)
                        SELECT user_id, action, at, count, idempotency_key, properties FROM batch ORDER BY seq
                        ON CONFLICT DO NOTHING
                        RETURNING user_id, action, at, count
                    ), counted AS (
                        INSERT INTO counters (user_id, action, total)
                        SELECT user_id, action, sum(count) FROM inserted GROUP BY user_id, action
                        ON CONFLICT (user_id, action) DO UPDATE SET total = counters.total + excluded.total
                    ), seen AS (
                        SELECT user_id, max(at) AS at FROM inserted GROUP BY user_id
                    ), touched AS (
                        UPDATE users SET last_seen_at = greatest(users.last_seen_at, seen.at)
                        FROM seen WHERE users.id = seen.user_id
                    )\(outbox)
                    SELECT count(*) AS n FROM inserted
                    """,
                    queueing ? [PostgresValue(now)] : []
                ).first?.int("n") ?? 0

            // A key stored with another action is a client bug: the whole
            // batch is refused, reported at its first such event as SQLite does.
            if let reused = try connection.execute(
                """
                SELECT b.user_id, b.idempotency_key, b.action, e.action AS counted
                FROM pg_temp.guestmode_event_batch b
                JOIN events e ON e.user_id = b.user_id AND e.idempotency_key = b.idempotency_key
                WHERE b.idempotency_key IS NOT NULL AND e.idempotency_key IS NOT NULL AND e.action <> b.action
                ORDER BY b.seq LIMIT 1
                """
            ).first {
                throw Self.keyReused(
                    key: try reused.string("idempotency_key"), user: try reused.string("user_id"),
                    counted: try reused.string("counted"), action: try reused.string("action"))
            }
            try connection.execute("DROP TABLE pg_temp.guestmode_event_batch")
            return EventBatchResult(counted: counted, duplicates: events.count - counted, usersCreated: created)
        }
    }

    /// The outbox step of a batch: one coalesced entry per user whose events
    /// counted; a repeat moves `queued_at` strictly forward, as
    /// `enqueueBackup` does one user at a time ($1 is now).
    private static let batchOutboxStep = """
        , queued AS (
            INSERT INTO outbox (user_id, queued_at, attempts)
            SELECT user_id, $1, 0 FROM seen
            ON CONFLICT (user_id) DO UPDATE SET queued_at = CASE
                WHEN outbox.queued_at >= excluded.queued_at
                THEN to_char(outbox.queued_at::timestamptz + interval '1 millisecond', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
                ELSE excluded.queued_at END
        )
        """

    public func counters(of userID: String) throws -> [String: Int] {
        try read { connection in
            _ = try requireUser(userID, connection)
            return try counters(of: userID, connection)
        }
    }

    public func containsUser(_ userID: String) throws -> Bool {
        try read { connection in try findUser(userID, connection) != nil }
    }

    public func events(of userID: String, action: String?, since: Date?, limit: Int?) throws -> [LoggedEvent] {
        try read { connection in
            _ = try requireUser(userID, connection)
            var parameters: [PostgresValue?] = [PostgresValue(userID)]
            var sql =
                "SELECT id, user_id, action, at, count, idempotency_key, properties FROM events WHERE user_id = $1"
            if let action {
                parameters.append(PostgresValue(action))
                sql += " AND action = $\(parameters.count)"
            }
            if let since {
                parameters.append(PostgresValue(since))
                sql += " AND at COLLATE \"C\" >= $\(parameters.count)"
            }
            sql += " ORDER BY at COLLATE \"C\" DESC, id DESC"
            if let limit {
                parameters.append(PostgresValue(limit))
                sql += " LIMIT $\(parameters.count)"
            }
            return try connection.execute(sql, parameters).reversed().map { row in
                LoggedEvent(
                    id: try row.int64("id"), userId: try row.string("user_id"), action: try row.string("action"),
                    at: try row.date("at"), count: try row.int("count"),
                    idempotencyKey: try row.optionalString("idempotency_key"),
                    properties: LoggedEvent.decodeProperties(try row.optionalString("properties")))
            }
        }
    }

    /// Appends the event unless its idempotency key was seen; true when it
    /// was appended. A key seen with another action is a client bug, refused.
    private func append(_ event: TrackedEvent, _ connection: PostgresConnection) throws -> Bool {
        let properties = event.properties.isEmpty ? nil : EventLog.encodeProperties(event.properties)
        let inserted = try connection.execute(
            """
            INSERT INTO events (user_id, action, at, count, idempotency_key, properties)
            VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT DO NOTHING
            """,
            [
                PostgresValue(event.user), PostgresValue(event.action), PostgresValue(event.at),
                PostgresValue(event.count), event.idempotencyKey.map { PostgresValue($0) },
                properties.map { PostgresValue($0) },
            ]
        ).changes
        if inserted > 0 { return true }
        if let key = event.idempotencyKey,
            let counted = try connection.execute(
                "SELECT action FROM events WHERE user_id = $1 AND idempotency_key = $2",
                [PostgresValue(event.user), PostgresValue(key)]
            ).first?.string("action"),
            counted != event.action
        {
            throw Self.keyReused(key: key, user: event.user, counted: counted, action: event.action)
        }
        return false
    }

    private static func keyReused(key: String, user: String, counted: String, action: String) -> GuestModeError {
        GuestModeError(
            .conflict, code: .idempotencyKeyReused,
            "idempotency key '\(key)' of user '\(user)' was already used for '\(counted)', not '\(action)'; keys identify one report"
        )
    }
}
