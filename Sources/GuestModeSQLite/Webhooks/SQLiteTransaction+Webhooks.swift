import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteTransaction {
    private static let webhookColumns = """
        id, event_id, endpoint, type, user_id, created_at, scope, payload, status, attempts, last_error,
        next_attempt_at, delivered_at
        """

    func enqueueWebhook(_ delivery: NewWebhookDelivery) throws {
        try db.execute(
            sql: """
                INSERT INTO webhook_outbox (event_id, endpoint, type, user_id, created_at, scope, payload, status, attempts)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)
                """,
            arguments: [
                delivery.eventID, delivery.endpoint, delivery.type, delivery.userID,
                Timestamp.format(delivery.createdAt), delivery.scope, delivery.payload,
                WebhookDeliveryStatus.pending.rawValue,
            ])
    }

    func webhookDeliveries(status: WebhookDeliveryStatus?, user: String?, limit: Int?) throws -> [WebhookDelivery] {
        var conditions: [String] = []
        var arguments: StatementArguments = []
        if let status {
            conditions.append("status = ?")
            _ = arguments.append(contentsOf: [status.rawValue])
        }
        if let user {
            conditions.append("user_id = ?")
            _ = arguments.append(contentsOf: [user])
        }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let bound = limit.map { " LIMIT \($0)" } ?? ""
        return try Row.fetchAll(
            db, sql: "SELECT \(Self.webhookColumns) FROM webhook_outbox \(filter) ORDER BY created_at, id\(bound)",
            arguments: arguments
        ).map(webhookDelivery)
    }

    func pendingWebhookHeads(after cursor: WebhookCursor?, limit: Int) throws -> [WebhookDelivery] {
        // The partial index webhook_outbox_pending_pair answers NOT EXISTS with one seek. Its
        // predicate, status = 'pending', stays literal here: SQLite uses a partial index only for
        // a query whose WHERE names the same constant, never a bound argument.
        try Row.fetchAll(
            db.cachedStatement(
                sql:
                    """
                    SELECT \(Self.webhookColumns) FROM webhook_outbox AS w
                    WHERE w.status = 'pending' AND (w.created_at, w.id) > (?, ?)
                    AND NOT EXISTS (
                        SELECT 1 FROM webhook_outbox AS e
                        WHERE e.status = 'pending' AND e.user_id = w.user_id AND e.endpoint = w.endpoint
                        AND (e.created_at, e.id) < (w.created_at, w.id))
                    ORDER BY w.created_at, w.id LIMIT ?
                    """),
            arguments: [cursor?.createdAt ?? "", cursor?.deliveryID ?? Int64.min, limit]
        ).map(webhookDelivery)
    }

    func webhookDelivery(_ id: Int64, locking: Bool) throws -> WebhookDelivery? {
        try Row.fetchOne(
            db, sql: "SELECT \(Self.webhookColumns) FROM webhook_outbox WHERE id = ?", arguments: [id]
        ).map(webhookDelivery)
    }

    func setWebhookState(
        of id: Int64, status: WebhookDeliveryStatus, attempts: Int, lastError: String?, nextAttemptAt: Date?,
        deliveredAt: Date?
    ) throws {
        try db.execute(
            sql: """
                UPDATE webhook_outbox SET status = ?, attempts = ?, last_error = ?, next_attempt_at = ?, delivered_at = ?
                WHERE id = ?
                """,
            arguments: [
                status.rawValue, attempts, lastError, nextAttemptAt.map(Timestamp.format),
                deliveredAt.map(Timestamp.format), id,
            ])
    }

    func cancelScheduledWebhooks(user: String, type: String, scope: String, after time: Date) throws -> Int {
        try db.execute(
            sql: """
                DELETE FROM webhook_outbox
                WHERE user_id = ? AND type = ? AND scope = ? AND status = ? AND created_at > ?
                """,
            arguments: [user, type, scope, WebhookDeliveryStatus.pending.rawValue, Timestamp.format(time)])
        return db.changesCount
    }

    func deleteDeliveredWebhooks(createdBefore time: Date, limit: Int) throws -> Int {
        try db.execute(
            sql: """
                DELETE FROM webhook_outbox WHERE id IN (
                    SELECT id FROM webhook_outbox WHERE status = ? AND created_at < ?
                    ORDER BY created_at, id LIMIT ?)
                """,
            arguments: [WebhookDeliveryStatus.delivered.rawValue, Timestamp.format(time), limit])
        return db.changesCount
    }

    func webhookCounts() throws -> [WebhookCount] {
        try Row.fetchAll(
            db.statement(
                "SELECT endpoint, status, COUNT(*) AS n FROM webhook_outbox GROUP BY endpoint, status ORDER BY endpoint"
            )
        ).map { row in
            WebhookCount(
                endpoint: try row.decode(forColumn: "endpoint"),
                status: try row.decode("status", as: WebhookDeliveryStatus.self), count: try row.decode(forColumn: "n"))
        }
    }

    private func webhookDelivery(_ row: Row) throws -> WebhookDelivery {
        WebhookDelivery(
            deliveryID: try row.decode(forColumn: "id"), eventID: try row.decode(forColumn: "event_id"),
            endpoint: try row.decode(forColumn: "endpoint"), type: try row.decode(forColumn: "type"),
            userID: try row.decode(forColumn: "user_id"), createdAt: try row.time("created_at"),
            scope: try row.decode(forColumn: "scope"), payload: try row.decode(forColumn: "payload"),
            status: try row.decode("status", as: WebhookDeliveryStatus.self),
            attempts: try row.decode(forColumn: "attempts"), lastError: try row.decode(forColumn: "last_error"),
            nextAttemptAt: try row.optionalTime("next_attempt_at"),
            deliveredAt: try row.optionalTime("delivered_at"))
    }
}
