import Foundation
import GuestModeKit

/// Concurrency: every decision here is about one outbox row, which the
/// DELETE or UPDATE deciding it locks. At READ COMMITTED a push that waits
/// for a concurrent enqueue (which locks the row first, see `enqueueBackup`)
/// re-checks `queued_at` on the row that enqueue committed, so a change made
/// while the archive was written is never deleted.
extension PostgresStore: OutboxStore {
    public func outboxEntries() throws -> [OutboxEntry] {
        try read { connection in
            try connection.execute(
                """
                SELECT user_id, queued_at, attempts, last_error, next_attempt_at FROM outbox
                ORDER BY queued_at COLLATE "C", user_id COLLATE "C"
                """
            ).map { row in
                OutboxEntry(
                    userId: try row.string("user_id"), queuedAt: try row.string("queued_at"),
                    attempts: try row.int("attempts"), lastError: try row.optionalString("last_error"),
                    nextAttemptAt: try row.optionalString("next_attempt_at"))
            }
        }
    }

    public func recordPushSuccess(userID: String, queuedAt: String) throws -> OutboxPushOutcome {
        try write { connection in
            let deleted = try connection.execute(
                "DELETE FROM outbox WHERE user_id = $1 AND queued_at = $2",
                [PostgresValue(userID), PostgresValue(queuedAt)])
            if deleted.changes == 1 { return .removed }
            // Changed while the archive was written: keep it queued, but the destination works.
            let kept = try connection.execute(
                "UPDATE outbox SET attempts = 0, last_error = NULL, next_attempt_at = NULL WHERE user_id = $1",
                [PostgresValue(userID)])
            return kept.changes == 1 ? .keptQueued : .removed
        }
    }

    public func recordPushFailure(userID: String, attempts: Int, error: String, nextAttemptAt: Date) throws {
        _ = try write { connection in
            try connection.execute(
                "UPDATE outbox SET attempts = $1, last_error = $2, next_attempt_at = $3 WHERE user_id = $4",
                [PostgresValue(attempts), PostgresValue(error), PostgresValue(nextAttemptAt), PostgresValue(userID)])
        }
    }

    public func dropOutboxEntry(userID: String, queuedAt: String) throws -> Bool {
        try write { connection in
            try connection.execute(
                """
                DELETE FROM outbox WHERE user_id = $1 AND queued_at = $2
                AND NOT EXISTS (SELECT 1 FROM users WHERE id = $1)
                """,
                [PostgresValue(userID), PostgresValue(queuedAt)]
            ).changes == 1
        }
    }
}
