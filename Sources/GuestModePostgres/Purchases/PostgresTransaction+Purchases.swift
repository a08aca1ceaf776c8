import Foundation
import GuestModeKit

extension PostgresTransaction {
    func claimStoreEvent(
        source: StorePlanChange.Source, eventID: String, originalTransactionID: String, outcome: String, at time: Date
    ) throws -> Bool {
        try connection.execute(
            """
            INSERT INTO store_events (source, event_id, original_transaction_id, outcome, applied_at)
            VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING
            """,
            [
                PostgresValue(source.rawValue), PostgresValue(eventID), PostgresValue(originalTransactionID),
                PostgresValue(outcome), PostgresValue(time),
            ]
        ).changes > 0
    }

    func storePurchase(source: StorePlanChange.Source, originalTransactionID: String) throws -> StorePurchase? {
        try connection.execute(
            "SELECT * FROM store_purchases WHERE source = $1 AND original_transaction_id = $2",
            [PostgresValue(source.rawValue), PostgresValue(originalTransactionID)]
        ).first.map(storePurchase)
    }

    func storePurchases(of userID: String) throws -> [StorePurchase] {
        try connection.execute(
            """
            SELECT * FROM store_purchases WHERE user_id = $1
            ORDER BY signed_at COLLATE "C", source COLLATE "C", original_transaction_id COLLATE "C"
            """,
            [PostgresValue(userID)]
        ).map(storePurchase)
    }

    func putStorePurchase(_ purchase: StorePurchase) throws {
        try connection.execute(
            """
            INSERT INTO store_purchases (source, original_transaction_id, user_id, plan, signed_at, transaction_id,
                environment, granted_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            ON CONFLICT (source, original_transaction_id) DO UPDATE SET user_id = EXCLUDED.user_id,
                plan = EXCLUDED.plan, signed_at = EXCLUDED.signed_at, transaction_id = EXCLUDED.transaction_id,
                environment = EXCLUDED.environment, granted_at = EXCLUDED.granted_at
            """,
            [
                PostgresValue(purchase.source.rawValue), PostgresValue(purchase.originalTransactionID),
                PostgresValue(purchase.userID), PostgresValue(purchase.plan), PostgresValue(purchase.signedAt),
                PostgresValue(purchase.transactionID), PostgresValue(purchase.environment.rawValue),
                purchase.grantedAt.map { PostgresValue($0) },
            ])
    }

    func endPlanGrants(of userID: String, plan: String, at time: Date) throws -> Int {
        try connection.execute(
            """
            UPDATE plans SET
                trial_ends_at = CASE WHEN trial_ends_at IS NOT NULL THEN $1 ELSE NULL END,
                ends_at = CASE WHEN trial_ends_at IS NULL THEN $1 ELSE ends_at END
            WHERE user_id = $2 AND plan = $3 AND revoked_at IS NULL
                AND (trial_ends_at COLLATE "C" > $1
                    OR (trial_ends_at IS NULL AND (ends_at IS NULL OR ends_at COLLATE "C" > $1)))
            """,
            [PostgresValue(time), PostgresValue(userID), PostgresValue(plan)]
        ).changes
    }

    private func storePurchase(_ row: PostgresRow) throws -> StorePurchase {
        let source = try row.string("source")
        let environment = try row.string("environment")
        guard let storeSource = StorePlanChange.Source(rawValue: source),
            let storeEnvironment = StorePlanChange.Environment(rawValue: environment)
        else {
            throw GuestModeError(
                .internalFailure,
                "store_purchases holds a source '\(source)' or environment '\(environment)' this build does not know")
        }
        return StorePurchase(
            source: storeSource, originalTransactionID: try row.string("original_transaction_id"),
            userID: try row.string("user_id"), plan: try row.string("plan"), signedAt: try row.date("signed_at"),
            transactionID: try row.string("transaction_id"), environment: storeEnvironment,
            grantedAt: try row.optionalDate("granted_at"))
    }
}
