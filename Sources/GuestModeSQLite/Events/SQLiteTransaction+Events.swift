import Foundation
internal import GRDB
import GuestModeKit

// Cached statements: ingestion runs these once per event, or once per user
// (and action) of each batch.
extension SQLiteTransaction {
    func appendEvents(_ rows: [EventRow]) throws -> [Int: EventPayload] {
        // A larger page cache for the indexes a batch of thousands of events walks.
        if rows.count > 1 { try store.useIngestCache(db) }
        // One row to a statement (see `addToCounters` for why not more).
        let insert = BoundStatement(
            try db.statement(
                """
                INSERT INTO events (user_id, action, at, count, idempotency_key, properties)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT DO NOTHING
                """))
        var skipped: [Int: EventPayload] = [:]
        for (index, row) in rows.enumerated() {
            insert.bind(row.user, at: 1)
            insert.bind(row.action, at: 2)
            insert.bind(time: row.at, at: 3)
            insert.bind(row.count, at: 4)
            insert.bind(row.idempotencyKey, at: 5)
            insert.bind(row.properties, at: 6)
            guard try insert.execute() == 0 else { continue }
            guard let key = row.idempotencyKey,
                let stored = try Row.fetchOne(
                    db.statement(
                        "SELECT action, count, properties FROM events WHERE user_id = ? AND idempotency_key = ?"),
                    arguments: [row.user, key])
            else { throw row.notAppended }
            skipped[index] = EventPayload(
                action: try stored.decode(forColumn: "action"), count: try stored.decode(forColumn: "count"),
                properties: try stored.decode(forColumn: "properties"))
        }
        return skipped
    }

    /// A hundred counters to a statement: they come sorted, so a statement
    /// changes a few neighbouring pages, whose undo copies SQLite keeps in
    /// memory. Events and new guests stay one row to a statement: each of
    /// their rows also lands on a page of its own of an index ordered by time
    /// (`events_action_at`, `users_state_last_seen`), and once a statement's
    /// undo copies pass 64 KiB SQLite writes them to a temporary file for the
    /// rest of the transaction, which cost more than the statements saved
    /// (300 k guests: 4.1 s of system time against 1.7 s, 4.9 times the
    /// writes).
    func addToCounters(_ increments: [CounterIncrement]) throws {
        try writeInBulk(
            increments, into: "counters (user_id, action, total)", tuple: "(?, ?, ?)",
            then: SQLiteStore.counterConflict, rowsPerStatement: 100,
            bind: { increment, statement, first in
                statement.bind(increment.user, at: first)
                statement.bind(increment.action, at: first + 1)
                statement.bind(increment.count, at: first + 2)
            }
        ) { index in
            let increment = increments[index]
            try store.addToCounter(user: increment.user, action: increment.action, count: increment.count, db)
        }
    }

    /// Inserts `rows`, each one `tuple` of values (`bind` binds a row's from
    /// the parameter it is given), `rowsPerStatement` to a statement (one
    /// statement's cursors and program serve them all) as long as each
    /// statement writes every one of its rows. A statement that writes fewer
    /// (a refused counter) is undone, and its rows and the rest go one at a
    /// time through `single`, given the row's index, which decides what each
    /// row's outcome means.
    private func writeInBulk<Item>(
        _ rows: [Item], into table: String, tuple: String, then conflict: String, rowsPerStatement bulkRows: Int,
        bind: (Item, BoundStatement, Int32) -> Void, single: (Int) throws -> Void
    ) throws {
        var start = 0
        var isBulk = rows.count >= bulkRows
        let bulk =
            isBulk
            ? BoundStatement(
                try db.cachedStatement(
                    sql:
                        "INSERT INTO \(table) VALUES \(Array(repeating: tuple, count: bulkRows).joined(separator: ", ")) \(conflict)"
                ))
            : nil
        let parametersPerRow = Int32(tuple.count { $0 == "?" })
        while start < rows.count {
            let end = min(start + bulkRows, rows.count)
            if isBulk, let bulk, end - start == bulkRows {
                var first: Int32 = 1
                for row in rows[start..<end] {
                    bind(row, bulk, first)
                    first += parametersPerRow
                }
                var isWhole = false
                try db.inSavepoint {
                    isWhole = try bulk.execute() == bulkRows
                    return isWhole ? .commit : .rollback
                }
                if isWhole {
                    start = end
                    continue
                }
                isBulk = false
            }
            for index in start..<end { try single(index) }
            start = end
        }
    }

    func counterTotal(of userID: String, action: String) throws -> Int {
        try Int.fetchOne(
            db.statement("SELECT total FROM counters WHERE user_id = ? AND action = ?"),
            arguments: [userID, action]) ?? 0
    }

    func counters(of userID: String) throws -> [String: Int] {
        try store.counters(of: userID, db)
    }

    func events(of userID: String, action: String?, since: Date?, limit: Int?) throws -> [LoggedEvent] {
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
                id: try row.decode(forColumn: "id"), userID: try row.decode(forColumn: "user_id"),
                action: try row.decode(forColumn: "action"), at: try row.time("at"),
                count: try row.decode(forColumn: "count"), idempotencyKey: try row.decode(forColumn: "idempotency_key"),
                properties: LoggedEvent.decodeProperties(try row.decode(forColumn: "properties")))
        }
    }

    func createMissingGuests(
        _ guests: [(user: String, firstSeen: Date, lastSeen: Date)], state: UserState, promptState: String
    ) throws -> Set<String> {
        let insert = BoundStatement(
            try db.statement(
                """
                INSERT INTO users (id, device, state, prompt_state, created_at, last_seen_at, linked_at)
                VALUES (?, NULL, ?, ?, ?, ?, NULL)
                ON CONFLICT(id) DO NOTHING
                """))
        var created = Set<String>()
        for guest in guests {
            insert.bind(guest.user, at: 1)
            insert.bind(state.rawValue, at: 2)
            insert.bind(promptState, at: 3)
            insert.bind(time: guest.firstSeen, at: 4)
            insert.bind(time: guest.lastSeen, at: 5)
            if try insert.execute() > 0 { created.insert(guest.user) }
        }
        return created
    }

    func lockUsers(_ userIDs: [String]) throws -> Set<String> {
        let exists = BoundStatement(try db.statement("SELECT 1 FROM users WHERE id = ?"))
        return Set(
            try userIDs.filter { userID in
                exists.bind(userID, at: 1)
                return try exists.exists()
            })
    }

    func advanceLastSeen(_ times: [String: Date]) throws {
        for (userID, time) in times { try store.touch(userID, at: time, db) }
    }

    func backupQueueTimes(of userIDs: [String]) throws -> [String: Date] {
        var times: [String: Date] = [:]
        for userID in userIDs {
            times[userID] = try backupQueuedAt(of: userID, locking: true)
        }
        return times
    }

    func queueBackups(_ times: [String: Date]) throws {
        for (userID, time) in times { try queueBackup(of: userID, at: time) }
    }
}

extension SQLiteStore {
    /// What an insert into counters does with a counter that exists: adds,
    /// while the sum stays within `Bounds` (see `addToCounter`).
    static let counterConflict = """
        ON CONFLICT(user_id, action) DO UPDATE SET total = total + excluded.total
        WHERE typeof(total) = 'integer' AND total >= 0 AND total <= \(Bounds.maximumCounterTotal) - excluded.total
        """

    /// SQLite turns an integer sum that overflows into a REAL, silently: the
    /// update only runs while the sum stays within `Bounds`, and a counter
    /// left as it was means the addition is refused.
    func addToCounter(user: String, action: String, count: Int, _ db: Database) throws {
        try db.cachedStatement(
            sql: "INSERT INTO counters (user_id, action, total) VALUES (?, ?, ?) \(Self.counterConflict)"
        )
        .execute(arguments: [user, action, count])
        guard db.changesCount == 0 else { return }
        let total =
            try String.fetchOne(
                db.statement("SELECT CAST(total AS TEXT) FROM counters WHERE user_id = ? AND action = ?"),
                arguments: [user, action]) ?? "?"
        throw Bounds.counterOverflow(action: action, user: user, total: total, adding: Int64(count))
    }
}
