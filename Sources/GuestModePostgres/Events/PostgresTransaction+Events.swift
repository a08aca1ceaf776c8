import Foundation
import GuestModeKit

// Sets of rows (a batch of events, its users, counters and outbox entries)
// go in a few statements, not one round trip per row: a batch of 5,000
// events costs a handful of round trips. Rows that lock are taken in a
// stable order (users and outbox entries by id), so two batches never wait
// on each other in a cycle.
extension PostgresTransaction {
    func appendEvents(_ rows: [EventRow]) throws -> [Int: EventPayload] {
        guard rows.count > 1 else { return try rows.first.map { try appendOne($0) } ?? [:] }
        // ON COMMIT DROP ends it with the transaction. Later batches of the same
        // transaction reuse it, emptied: PostgreSQL holds the locks of every table
        // created (and dropped) to the end of the transaction, so a table per batch
        // made a log of millions of events exhaust `max_locks_per_transaction`.
        try connection.execute(
            """
            CREATE TEMP TABLE IF NOT EXISTS guestmode_event_batch (
                seq BIGINT NOT NULL, user_id TEXT NOT NULL, action TEXT NOT NULL, at TEXT NOT NULL,
                count BIGINT NOT NULL, idempotency_key TEXT, properties TEXT
            ) ON COMMIT DROP
            """)
        try connection.copy(
            """
            COPY pg_temp.guestmode_event_batch (seq, user_id, action, at, count, idempotency_key, properties)
            FROM STDIN
            """,
            rows: rows.enumerated().map { index, row in
                [
                    PostgresValue(index), PostgresValue(row.user), PostgresValue(row.action), PostgresValue(row.at),
                    PostgresValue(row.count), row.idempotencyKey.map { PostgresValue($0) },
                    row.properties.map { PostgresValue($0) },
                ]
            })
        let inserted = try connection.execute(
            """
            INSERT INTO events (user_id, action, at, count, idempotency_key, properties)
            SELECT user_id, action, at, count, idempotency_key, properties
            FROM pg_temp.guestmode_event_batch ORDER BY seq
            ON CONFLICT DO NOTHING
            RETURNING user_id, idempotency_key
            """)
        // Created in this transaction, so PostgreSQL empties it in place, without a new file.
        try connection.execute("TRUNCATE pg_temp.guestmode_event_batch")
        // Nearly always every row goes in, and there is nothing to ask.
        guard inserted.count < rows.count else { return [:] }
        return try payloadsOfSkipped(rows, inserted: inserted)
    }

    /// What each row the batch's insert left out reports: the event that
    /// holds its key. Rows without a key are always inserted. Of the rows
    /// sharing a user and key, the first (in the batch's order) is the one
    /// inserted, if any was: the later ones report it; the others' keys are
    /// held by events already stored (or committed meanwhile by another
    /// writer), read in one query.
    private func payloadsOfSkipped(_ rows: [EventRow], inserted: PostgresRows) throws -> [Int: EventPayload] {
        var insertedKeys: Set<[String]> = []
        for row in inserted {
            if let key = try row.optionalString("idempotency_key") {
                insertedKeys.insert([try row.string("user_id"), key])
            }
        }
        var payloads: [Int: EventPayload] = [:]
        var firstOfKey: [[String]: Int] = [:]
        var stored: [Int] = []
        for (index, row) in rows.enumerated() {
            guard let key = row.idempotencyKey else { continue }
            let userAndKey = [row.user, key]
            if let first = firstOfKey[userAndKey] {
                if insertedKeys.contains(userAndKey) {
                    payloads[index] = rows[first].payload
                } else {
                    stored.append(index)
                }
            } else {
                firstOfKey[userAndKey] = index
                if !insertedKeys.contains(userAndKey) { stored.append(index) }
            }
        }
        guard !stored.isEmpty else { return payloads }
        var found: [[String]: EventPayload] = [:]
        for row in try connection.execute(
            """
            SELECT e.user_id, e.idempotency_key, e.action, e.count, e.properties
            FROM events e JOIN unnest($1::text[], $2::text[]) AS k (user_id, idempotency_key)
                ON e.user_id = k.user_id AND e.idempotency_key = k.idempotency_key
            """,
            [
                PostgresStore.userIDArray(stored.map { rows[$0].user }),
                PostgresStore.userIDArray(stored.map { rows[$0].idempotencyKey ?? "" }),
            ])
        {
            found[[try row.string("user_id"), try row.string("idempotency_key")]] = EventPayload(
                action: try row.string("action"), count: try row.int("count"),
                properties: try row.optionalString("properties"))
        }
        for index in stored {
            guard let payload = found[[rows[index].user, rows[index].idempotencyKey ?? ""]] else {
                throw rows[index].notAppended
            }
            payloads[index] = payload
        }
        return payloads
    }

    /// One row: an insert, and a look-up only when it was not inserted.
    private func appendOne(_ row: EventRow) throws -> [Int: EventPayload] {
        let inserted = try connection.execute(
            """
            INSERT INTO events (user_id, action, at, count, idempotency_key, properties)
            VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT DO NOTHING
            """,
            [
                PostgresValue(row.user), PostgresValue(row.action), PostgresValue(row.at), PostgresValue(row.count),
                row.idempotencyKey.map { PostgresValue($0) }, row.properties.map { PostgresValue($0) },
            ]
        ).changes
        return inserted > 0 ? [:] : [0: try storedPayload(of: row)]
    }

    /// What the stored event holding the row's key reported.
    private func storedPayload(of row: EventRow) throws -> EventPayload {
        guard let key = row.idempotencyKey,
            let stored = try connection.execute(
                "SELECT action, count, properties FROM events WHERE user_id = $1 AND idempotency_key = $2",
                [PostgresValue(row.user), PostgresValue(key)]
            ).first
        else { throw row.notAppended }
        return EventPayload(
            action: try stored.string("action"), count: try stored.int("count"),
            properties: try stored.optionalString("properties"))
    }

    func addToCounters(_ increments: [CounterIncrement]) throws {
        // A counter the addition would carry past the bound is left as it is
        // (not a BIGINT error, which names nobody): the increments the
        // statements did not return are refused, the first by name.
        let rows = try executeForEachChunk(
            of: increments.map { [PostgresValue($0.user), PostgresValue($0.action), PostgresValue($0.count)] },
            types: ["text", "text", "bigint"]
        ) { values in
            """
            INSERT INTO counters (user_id, action, total) VALUES \(values)
            \(PostgresStore.counterConflict)
            RETURNING user_id, action
            """
        }
        guard rows.reduce(0, { $0 + $1.count }) < increments.count else { return }
        var written = Set<[String]>()
        for chunk in rows {
            for row in chunk { written.insert([try row.string("user_id"), try row.string("action")]) }
        }
        if let refused = increments.first(where: { !written.contains([$0.user, $0.action]) }) {
            throw try store.counterOverflow(of: refused.user, action: refused.action, adding: refused.count, connection)
        }
    }

    func counterTotal(of userID: String, action: String) throws -> Int {
        try connection.execute(
            "SELECT total FROM counters WHERE user_id = $1 AND action = $2",
            [PostgresValue(userID), PostgresValue(action)]
        ).first?.int("total") ?? 0
    }

    func counters(of userID: String) throws -> [String: Int] {
        try store.counters(of: userID, connection)
    }

    func events(of userID: String, action: String?, since: Date?, limit: Int?) throws -> [LoggedEvent] {
        var parameters: [PostgresValue?] = [PostgresValue(userID)]
        var sql = "SELECT id, user_id, action, at, count, idempotency_key, properties FROM events WHERE user_id = $1"
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
                id: try row.int64("id"), userID: try row.string("user_id"), action: try row.string("action"),
                at: try row.date("at"), count: try row.int("count"),
                idempotencyKey: try row.optionalString("idempotency_key"),
                properties: LoggedEvent.decodeProperties(try row.optionalString("properties")))
        }
    }

    func createMissingGuests(
        _ guests: [(user: String, firstSeen: Date, lastSeen: Date)], state: UserState, promptState: String
    ) throws -> Set<String> {
        var created = Set<String>()
        let rows = try executeForEachChunk(
            of: guests.sorted { $0.user < $1.user }.map {
                [
                    PostgresValue($0.user), PostgresValue(state.rawValue), PostgresValue(promptState),
                    PostgresValue($0.firstSeen), PostgresValue($0.lastSeen),
                ]
            },
            types: ["text", "text", "text", "text", "text"]
        ) { values in
            """
            INSERT INTO users (id, device, state, prompt_state, created_at, last_seen_at, linked_at)
            SELECT id, NULL, state, prompt_state, first_seen, last_seen, NULL
            FROM (VALUES \(values)) AS seen (id, state, prompt_state, first_seen, last_seen)
            ON CONFLICT (id) DO NOTHING
            RETURNING id
            """
        }
        for chunk in rows { for row in chunk { created.insert(try row.string("id")) } }
        return created
    }

    /// Locks the users of `userIDs` the store holds, in byte order (`COLLATE "C"`, as `existingUsers` sorts
    /// them), so two writers over the same users wait for each other instead of deadlocking.
    func lockUsers(_ userIDs: [String]) throws -> Set<String> {
        var present = Set<String>()
        let rows = try executeForEachChunk(of: userIDs.sorted().map { [PostgresValue($0)] }, types: ["text"]) {
            "SELECT id FROM users WHERE id IN (SELECT id FROM (VALUES \($0)) AS wanted (id)) ORDER BY id COLLATE \"C\" FOR UPDATE"
        }
        for chunk in rows { for row in chunk { present.insert(try row.string("id")) } }
        return present
    }

    func advanceLastSeen(_ times: [String: Date]) throws {
        try executeForEachChunk(
            of: times.sorted { $0.key < $1.key }.map { [PostgresValue($0.key), PostgresValue($0.value)] },
            types: ["text", "text"]
        ) { values in
            """
            UPDATE users SET last_seen_at = greatest(users.last_seen_at, seen.at)
            FROM (VALUES \(values)) AS seen (id, at) WHERE users.id = seen.id
            """
        }
    }

    func backupQueueTimes(of userIDs: [String]) throws -> [String: Date] {
        var times: [String: Date] = [:]
        let rows = try executeForEachChunk(of: userIDs.sorted().map { [PostgresValue($0)] }, types: ["text"]) {
            """
            SELECT user_id, queued_at FROM outbox
            WHERE user_id IN (SELECT id FROM (VALUES \($0)) AS wanted (id)) ORDER BY user_id COLLATE "C" FOR UPDATE
            """
        }
        for chunk in rows { for row in chunk { times[try row.string("user_id")] = try row.date("queued_at") } }
        return times
    }

    func queueBackups(_ times: [String: Date]) throws {
        try executeForEachChunk(
            of: times.sorted { $0.key < $1.key }.map { [PostgresValue($0.key), PostgresValue($0.value)] },
            types: ["text", "text"]
        ) { values in
            """
            INSERT INTO outbox (user_id, queued_at, attempts)
            SELECT user_id, queued_at, 0 FROM (VALUES \(values)) AS queued (user_id, queued_at)
            ON CONFLICT (user_id) DO UPDATE SET queued_at = excluded.queued_at
            """
        }
    }

    /// Runs the statement `sql` builds around a `VALUES` list once per chunk
    /// of `rows` (one parameter per value, cast to its column's type), in
    /// order, and returns each chunk's result. Chunks keep well under the
    /// protocol's 65,535 parameters.
    @discardableResult
    private func executeForEachChunk(
        of rows: [[PostgresValue?]], types: [String], _ sql: (String) -> String
    ) throws -> [PostgresRows] {
        let chunkSize = max(1, 30_000 / types.count)
        var results: [PostgresRows] = []
        var start = 0
        while start < rows.count {
            let chunk = rows[start..<min(start + chunkSize, rows.count)]
            var parameters: [PostgresValue?] = []
            parameters.reserveCapacity(chunk.count * types.count)
            let values = chunk.map { row in
                "("
                    + zip(row, types).map { value, type in
                        parameters.append(value)
                        return "$\(parameters.count)::\(type)"
                    }.joined(separator: ", ") + ")"
            }.joined(separator: ", ")
            results.append(try connection.execute(sql(values), parameters))
            start += chunkSize
        }
        return results
    }
}
