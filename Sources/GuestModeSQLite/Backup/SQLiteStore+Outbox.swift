import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteStore: OutboxStore {
    public func outboxEntries() throws -> [OutboxEntry] {
        try read { db in
            try Row.fetchAll(
                db,
                sql:
                    "SELECT user_id, queued_at, attempts, last_error, next_attempt_at FROM outbox ORDER BY queued_at, user_id"
            ).map { row in
                OutboxEntry(
                    userId: try row.decode(forColumn: "user_id"), queuedAt: try row.decode(forColumn: "queued_at"),
                    attempts: try row.decode(forColumn: "attempts"),
                    lastError: try row.decode(forColumn: "last_error"),
                    nextAttemptAt: try row.decode(forColumn: "next_attempt_at"))
            }
        }
    }

    public func recordPushSuccess(userID: String, queuedAt: String) throws -> OutboxPushOutcome {
        try write { db in
            try db.execute(
                sql: "DELETE FROM outbox WHERE user_id = ? AND queued_at = ?", arguments: [userID, queuedAt])
            if db.changesCount == 1 { return .removed }
            // Changed while the archive was written: keep it queued, but the destination works.
            try db.execute(
                sql: "UPDATE outbox SET attempts = 0, last_error = NULL, next_attempt_at = NULL WHERE user_id = ?",
                arguments: [userID])
            return db.changesCount == 1 ? .keptQueued : .removed
        }
    }

    public func recordPushFailure(userID: String, attempts: Int, error: String, nextAttemptAt: Date) throws {
        try write { db in
            try db.execute(
                sql: "UPDATE outbox SET attempts = ?, last_error = ?, next_attempt_at = ? WHERE user_id = ?",
                arguments: [attempts, error, Timestamp.format(nextAttemptAt), userID])
        }
    }

    public func dropOutboxEntry(userID: String, queuedAt: String) throws -> Bool {
        try write { db in
            try db.execute(
                sql: """
                    DELETE FROM outbox WHERE user_id = ? AND queued_at = ?
                    AND NOT EXISTS (SELECT 1 FROM users WHERE id = ?)
                    """,
                arguments: [userID, queuedAt, userID])
            return db.changesCount == 1
        }
    }
}
