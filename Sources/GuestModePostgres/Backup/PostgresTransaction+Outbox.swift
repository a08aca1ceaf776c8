import Foundation
import GuestModeKit

extension PostgresTransaction {
    func outboxEntries() throws -> [OutboxEntry] {
        try connection.execute(
            """
            SELECT user_id, queued_at, attempts, last_error, next_attempt_at FROM outbox
            ORDER BY queued_at COLLATE "C", user_id COLLATE "C"
            """
        ).map(outboxEntry)
    }

    /// With `locking`, `FOR UPDATE` waits for a transaction queueing the user
    /// (which locks the entry first, see `queueBackup`) and then reads the
    /// entry it committed, so a change queued meanwhile is never missed.
    func outboxEntry(of userID: String, locking: Bool) throws -> OutboxEntry? {
        try connection.execute(
            """
            SELECT user_id, queued_at, attempts, last_error, next_attempt_at FROM outbox
            WHERE user_id = $1\(locking ? " FOR UPDATE" : "")
            """,
            [PostgresValue(userID)]
        ).first.map(outboxEntry)
    }

    func deleteOutboxEntry(of userID: String) throws {
        try connection.execute("DELETE FROM outbox WHERE user_id = $1", [PostgresValue(userID)])
    }

    func setRetryState(of userID: String, attempts: Int, lastError: String?, nextAttemptAt: Date?) throws {
        try connection.execute(
            "UPDATE outbox SET attempts = $1, last_error = $2, next_attempt_at = $3 WHERE user_id = $4",
            [
                PostgresValue(attempts), lastError.map { PostgresValue($0) }, nextAttemptAt.map { PostgresValue($0) },
                PostgresValue(userID),
            ])
    }

    private func outboxEntry(_ row: PostgresRow) throws -> OutboxEntry {
        OutboxEntry(
            userID: try row.string("user_id"), queuedAt: try row.date("queued_at"),
            attempts: try row.int("attempts"), lastError: try row.optionalString("last_error"),
            nextAttemptAt: try row.optionalDate("next_attempt_at"))
    }
}
