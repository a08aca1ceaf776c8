import Foundation
import GuestModeKit

/// One PostgreSQL transaction as the engine sees it: at READ COMMITTED, so
/// what a use case decides on it first locks (`locking:` is `FOR UPDATE`);
/// each statement after the lock sees every change committed before it.
struct PostgresTransaction: StoreTransaction {
    let store: PostgresStore
    let connection: PostgresConnection
}

/// Ends a rehearsal's transaction with a rollback.
private struct Rehearsal: Error {}

extension PostgresStore: TransactionalStore {
    package func write<T>(durable: Bool, _ body: (any StoreTransaction) throws -> T) throws -> T {
        if durable {
            return try writeMovingData { connection in
                try body(PostgresTransaction(store: self, connection: connection))
            }
        }
        return try write { connection in try body(PostgresTransaction(store: self, connection: connection)) }
    }

    package func rehearse<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        var result: T?
        do {
            try write { connection in
                // A serialization retry runs `body` again: only its last result counts.
                result = nil
                result = try body(PostgresTransaction(store: self, connection: connection))
                throw Rehearsal()
            }
        } catch is Rehearsal {}
        guard let result else {
            throw GuestModeError(.internalFailure, "a rehearsed transaction lost its result")
        }
        return result
    }

    package func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try read { connection in try body(PostgresTransaction(store: self, connection: connection)) }
    }
}

extension PostgresTransaction {
    func user(_ id: String, locking: Bool) throws -> User? {
        try store.findUser(id, locking: locking, connection)
    }

    func advanceLastSeen(of userID: String, to time: Date) throws {
        try store.touch(userID, at: time, connection)
    }

    func planGrants(of userID: String) throws -> [PlanGrant] {
        try store.planGrants(of: userID, connection)
    }

    func planGrants(of userID: String, mayBeInForceAt now: Date) throws -> [PlanGrant] {
        let statement = PostgresStore.planGrantsMayBeInForce(of: userID, at: now)
        return try connection.execute(statement.sql, statement.parameters).map(PostgresStore.planGrant)
    }

    func backupQueuedAt(of userID: String, locking: Bool) throws -> Date? {
        try connection.execute(
            "SELECT queued_at FROM outbox WHERE user_id = $1\(locking ? " FOR UPDATE" : "")", [PostgresValue(userID)]
        ).first?.date("queued_at")
    }

    func queueBackup(of userID: String, at time: Date) throws {
        try connection.execute(
            """
            INSERT INTO outbox (user_id, queued_at, attempts) VALUES ($1, $2, 0)
            ON CONFLICT (user_id) DO UPDATE SET queued_at = excluded.queued_at
            """,
            [PostgresValue(userID), PostgresValue(time)])
    }
}

extension PostgresTransaction {
    func appendEvent(user userID: String, action: String, at time: Date, count: Int, properties: String) throws {
        try connection.execute(
            "INSERT INTO events (user_id, action, at, count, properties) VALUES ($1, $2, $3, $4, $5)",
            [
                PostgresValue(userID), PostgresValue(action), PostgresValue(time), PostgresValue(count),
                PostgresValue(properties),
            ])
    }

    func addToCounter(user userID: String, action: String, count: Int) throws {
        let changes = try connection.execute(
            "INSERT INTO counters (user_id, action, total) VALUES ($1, $2, $3) \(PostgresStore.counterConflict)",
            [PostgresValue(userID), PostgresValue(action), PostgresValue(count)]
        ).changes
        guard changes == 0 else { return }
        throw try store.counterOverflow(of: userID, action: action, adding: count, connection)
    }
}

extension PostgresTransaction: TransactionNesting {
    func savepoint<T>(_ body: () throws -> T) throws -> T {
        try connection.execute("SAVEPOINT guestmode_nested")
        do {
            let value = try body()
            try connection.execute("RELEASE SAVEPOINT guestmode_nested")
            return value
        } catch {
            // Undoes the body and leaves an aborted transaction usable again.
            _ = try? connection.execute("ROLLBACK TO SAVEPOINT guestmode_nested")
            throw error
        }
    }
}

extension PostgresStore {
    /// What an insert into counters does with a counter that exists: adds,
    /// while the sum stays within `Bounds`; a counter it would carry past is
    /// left as it is, and the caller refuses the addition by name
    /// (`counterOverflow(of:action:adding:_:)`), as SQLiteStore does.
    static let counterConflict = """
        ON CONFLICT (user_id, action) DO UPDATE SET total = counters.total + excluded.total
        WHERE counters.total >= 0 AND counters.total <= \(Bounds.maximumCounterTotal) - excluded.total
        """

    /// `count_overflow` for an addition to the user's counter of `action`
    /// that was refused, naming the counter and its total.
    func counterOverflow(
        of userID: String, action: String, adding count: Int, _ connection: PostgresConnection
    ) throws
        -> GuestModeError
    {
        let total =
            try connection.execute(
                "SELECT total::text AS total FROM counters WHERE user_id = $1 AND action = $2",
                [PostgresValue(userID), PostgresValue(action)]
            ).first?.string("total") ?? "?"
        return Bounds.counterOverflow(action: action, user: userID, total: total, adding: Int64(count))
    }
}
