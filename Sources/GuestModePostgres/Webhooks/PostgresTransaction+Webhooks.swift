import Foundation
import GuestModeKit

extension PostgresTransaction {
    private static let webhookColumns = """
        id, event_id, endpoint, type, user_id, created_at, scope, payload, status, attempts, last_error,
        next_attempt_at, delivered_at
        """

    func enqueueWebhook(_ delivery: NewWebhookDelivery) throws {
        try connection.execute(
            """
            INSERT INTO webhook_outbox (event_id, endpoint, type, user_id, created_at, scope, payload, status, attempts)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 0)
            """,
            [
                PostgresValue(delivery.eventID), PostgresValue(delivery.endpoint), PostgresValue(delivery.type),
                PostgresValue(delivery.userID), PostgresValue(delivery.createdAt), PostgresValue(delivery.scope),
                PostgresValue(delivery.payload), PostgresValue(WebhookDeliveryStatus.pending.rawValue),
            ])
    }

    func webhookDeliveries(status: WebhookDeliveryStatus?, user: String?, limit: Int?) throws -> [WebhookDelivery] {
        var conditions: [String] = []
        var parameters: [PostgresValue?] = []
        if let status {
            parameters.append(PostgresValue(status.rawValue))
            conditions.append("status = $\(parameters.count)")
        }
        if let user {
            parameters.append(PostgresValue(user))
            conditions.append("user_id = $\(parameters.count)")
        }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        let bound = limit.map { " LIMIT \($0)" } ?? ""
        return try connection.execute(
            """
            SELECT \(Self.webhookColumns) FROM webhook_outbox \(filter)
            ORDER BY created_at COLLATE "C", id\(bound)
            """, parameters
        ).map(webhookDelivery)
    }

    func pendingWebhookHeads(after cursor: WebhookCursor?, limit: Int) throws -> [WebhookDelivery] {
        // The partial index webhook_outbox_pending_pair answers NOT EXISTS with one seek. Its
        // predicate, status = 'pending', stays literal: a plan made for a bound status could not
        // assume it.
        try connection.execute(
            """
            SELECT \(Self.webhookColumns) FROM webhook_outbox AS w
            WHERE w.status = 'pending'
            AND (w.created_at COLLATE "C" > $1 OR (w.created_at = $1 AND w.id > $2))
            AND NOT EXISTS (
                SELECT 1 FROM webhook_outbox AS e
                WHERE e.status = 'pending' AND e.user_id = w.user_id AND e.endpoint = w.endpoint
                AND (e.created_at COLLATE "C" < w.created_at OR (e.created_at = w.created_at AND e.id < w.id)))
            ORDER BY w.created_at COLLATE "C", w.id LIMIT $3
            """,
            [
                PostgresValue(cursor?.createdAt ?? ""), PostgresValue(cursor?.deliveryID ?? Int64.min),
                PostgresValue(Int64(limit)),
            ]
        ).map(webhookDelivery)
    }

    func webhookDelivery(_ id: Int64, locking: Bool) throws -> WebhookDelivery? {
        try connection.execute(
            "SELECT \(Self.webhookColumns) FROM webhook_outbox WHERE id = $1\(locking ? " FOR UPDATE" : "")",
            [PostgresValue(id)]
        ).first.map(webhookDelivery)
    }

    func setWebhookState(
        of id: Int64, status: WebhookDeliveryStatus, attempts: Int, lastError: String?, nextAttemptAt: Date?,
        deliveredAt: Date?
    ) throws {
        try connection.execute(
            """
            UPDATE webhook_outbox SET status = $1, attempts = $2, last_error = $3, next_attempt_at = $4,
            delivered_at = $5 WHERE id = $6
            """,
            [
                PostgresValue(status.rawValue), PostgresValue(attempts), lastError.map { PostgresValue($0) },
                nextAttemptAt.map { PostgresValue($0) }, deliveredAt.map { PostgresValue($0) }, PostgresValue(id),
            ])
    }

    func cancelScheduledWebhooks(user: String, type: String, scope: String, after time: Date) throws -> Int {
        try connection.execute(
            """
            DELETE FROM webhook_outbox
            WHERE user_id = $1 AND type = $2 AND scope = $3 AND status = $5 AND created_at COLLATE "C" > $4
            RETURNING id
            """,
            [
                PostgresValue(user), PostgresValue(type), PostgresValue(scope), PostgresValue(time),
                PostgresValue(WebhookDeliveryStatus.pending.rawValue),
            ]
        ).count
    }

    func deleteDeliveredWebhooks(createdBefore time: Date, limit: Int) throws -> Int {
        try connection.execute(
            """
            DELETE FROM webhook_outbox WHERE id IN (
                SELECT id FROM webhook_outbox WHERE status = $3 AND created_at COLLATE "C" < $1
                ORDER BY created_at COLLATE "C", id LIMIT $2)
            """,
            [PostgresValue(time), PostgresValue(Int64(limit)), PostgresValue(WebhookDeliveryStatus.delivered.rawValue)]
        ).changes
    }

    func webhookCounts() throws -> [WebhookCount] {
        try connection.execute(
            """
            SELECT endpoint, status, COUNT(*) AS n FROM webhook_outbox GROUP BY endpoint, status
            ORDER BY endpoint COLLATE "C"
            """
        ).map { row in
            WebhookCount(
                endpoint: try row.string("endpoint"), status: try row.decode("status", as: WebhookDeliveryStatus.self),
                count: try row.int("n"))
        }
    }

    private func webhookDelivery(_ row: PostgresRow) throws -> WebhookDelivery {
        WebhookDelivery(
            deliveryID: try row.int64("id"), eventID: try row.string("event_id"), endpoint: try row.string("endpoint"),
            type: try row.string("type"), userID: try row.string("user_id"),
            createdAt: try row.date("created_at"), scope: try row.string("scope"),
            payload: try row.string("payload"), status: try row.decode("status", as: WebhookDeliveryStatus.self),
            attempts: try row.int("attempts"), lastError: try row.optionalString("last_error"),
            nextAttemptAt: try row.optionalDate("next_attempt_at"),
            deliveredAt: try row.optionalDate("delivered_at"))
    }
}
