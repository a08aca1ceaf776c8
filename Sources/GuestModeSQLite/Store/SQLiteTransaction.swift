import Foundation
internal import GRDB
import GuestModeKit

/// One SQLite transaction as the engine sees it. SQLite has one writer, so
/// `locking:` needs nothing more: the write transaction already holds the
/// whole database.
struct SQLiteTransaction: StoreTransaction {
    let store: SQLiteStore
    let db: Database
}

extension SQLiteStore: TransactionalStore {
    package func write<T>(durable: Bool, _ body: (any StoreTransaction) throws -> T) throws -> T {
        if durable { return try writeDurably { db in try body(SQLiteTransaction(store: self, db: db)) } }
        return try write { db in try body(SQLiteTransaction(store: self, db: db)) }
    }

    package func rehearse<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try writeDurably { db in (try body(SQLiteTransaction(store: self, db: db)), false) }
    }

    package func read<T>(_ body: (any StoreTransaction) throws -> T) throws -> T {
        try read { db in try body(SQLiteTransaction(store: self, db: db)) }
    }
}

extension SQLiteTransaction {
    /// `read()`'s value, or what it read last on this connection for the same `query` and `arguments` if the store
    /// has not changed since (`PreparedStatements.remembered`): for the reads every served request makes (its key,
    /// its user, a meter's grants and totals, a prompt's facts, a record), which read the same rows again and again
    /// between writes (bench/results.md, "Serving, round 22"). `query` names the read, one literal a read.
    func remembered<Value: Sendable>(
        _ query: StaticString, _ arguments: String..., holds: (Value) -> Bool = { _ in true },
        cost: (Value) -> Int = { _ in 64 }, _ read: () throws -> Value
    ) throws -> Value {
        guard let memory = PreparedStatements.current else { return try read() }
        return try memory.remembered(query, arguments, in: db, holds: holds, cost: cost, read)
    }

    func user(_ id: String, locking: Bool) throws -> User? {
        try remembered("user", id, cost: { $0.map { 128 + $0.id.utf8.count + ($0.device?.utf8.count ?? 0) } ?? 0 }) {
            try store.findUser(id, db)
        }
    }

    func advanceLastSeen(of userID: String, to time: Date) throws {
        try store.touch(userID, at: time, db)
    }

    func planGrants(of userID: String) throws -> [PlanGrant] {
        try remembered("planGrants", userID, cost: { 128 * $0.count }) { try store.planGrants(of: userID, db) }
    }

    /// Remembered with the span of times they answer for (`GrantsInForce`): every request asks at a time of its own.
    func planGrants(of userID: String, mayBeInForceAt now: Date) throws -> [PlanGrant] {
        let time = Timestamp.format(now)
        return try remembered(
            "planGrantsInForce", userID, holds: { $0.answers(at: time) }, cost: { 128 * $0.grants.count }
        ) { try store.grantsInForce(of: userID, at: time, db) }.grants
    }

    func backupQueuedAt(of userID: String, locking: Bool) throws -> Date? {
        try StoredTime.fetchOne(
            db.statement("SELECT queued_at FROM outbox WHERE user_id = ?"), arguments: [userID]
        )?.date
    }

    func queueBackup(of userID: String, at time: Date) throws {
        try db.statement(
            """
            INSERT INTO outbox (user_id, queued_at, attempts) VALUES (?, ?, 0)
            ON CONFLICT(user_id) DO UPDATE SET queued_at = excluded.queued_at
            """
        ).execute(arguments: [userID, Timestamp.format(time)])
    }
}

extension SQLiteTransaction {
    func appendEvent(user userID: String, action: String, at time: Date, count: Int, properties: String) throws {
        try db.statement(
            "INSERT INTO events (user_id, action, at, count, properties) VALUES (?, ?, ?, ?, ?)"
        )
        .execute(arguments: [userID, action, Timestamp.format(time), count, properties])
    }

    func addToCounter(user userID: String, action: String, count: Int) throws {
        try store.addToCounter(user: userID, action: action, count: count, db)
    }
}

extension SQLiteTransaction: TransactionNesting {
    func savepoint<T>(_ body: () throws -> T) throws -> T {
        var value: T?
        try db.inSavepoint {
            value = try body()
            return .commit
        }
        guard let value else {
            throw GuestModeError(.internalFailure, "a savepoint ended without a result")
        }
        return value
    }
}
