import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteTransaction {
    func outboxEntries() throws -> [OutboxEntry] {
        try Row.fetchAll(
            db,
            sql:
                "SELECT user_id, queued_at, attempts, last_error, next_attempt_at FROM outbox ORDER BY queued_at, user_id"
        ).map(outboxEntry)
    }

    func outboxEntry(of userID: String, locking: Bool) throws -> OutboxEntry? {
        try Row.fetchOne(
            db,
            sql: "SELECT user_id, queued_at, attempts, last_error, next_attempt_at FROM outbox WHERE user_id = ?",
            arguments: [userID]
        ).map(outboxEntry)
    }

    func deleteOutboxEntry(of userID: String) throws {
        try db.execute(sql: "DELETE FROM outbox WHERE user_id = ?", arguments: [userID])
    }

    func setRetryState(of userID: String, attempts: Int, lastError: String?, nextAttemptAt: Date?) throws {
        try db.execute(
            sql: "UPDATE outbox SET attempts = ?, last_error = ?, next_attempt_at = ? WHERE user_id = ?",
            arguments: [attempts, lastError, nextAttemptAt.map(Timestamp.format), userID])
    }

    private func outboxEntry(_ row: Row) throws -> OutboxEntry {
        OutboxEntry(
            userID: try row.decode(forColumn: "user_id"), queuedAt: try row.time("queued_at"),
            attempts: try row.decode(forColumn: "attempts"), lastError: try row.decode(forColumn: "last_error"),
            nextAttemptAt: try row.optionalTime("next_attempt_at"))
    }
}
