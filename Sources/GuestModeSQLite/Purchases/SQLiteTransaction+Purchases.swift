import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteTransaction {
    func claimStoreEvent(
        source: StorePlanChange.Source, eventID: String, originalTransactionID: String, outcome: String, at time: Date
    ) throws -> Bool {
        try db.execute(
            sql: """
                INSERT INTO store_events (source, event_id, original_transaction_id, outcome, applied_at)
                VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                """,
            arguments: [source.rawValue, eventID, originalTransactionID, outcome, Timestamp.format(time)])
        return db.changesCount > 0
    }

    func storePurchase(source: StorePlanChange.Source, originalTransactionID: String) throws -> StorePurchase? {
        try Row.fetchOne(
            db.statement("SELECT * FROM store_purchases WHERE source = ? AND original_transaction_id = ?"),
            arguments: [source.rawValue, originalTransactionID]
        ).map(storePurchase)
    }

    func storePurchases(of userID: String) throws -> [StorePurchase] {
        try Row.fetchAll(
            db.statement(
                "SELECT * FROM store_purchases WHERE user_id = ? ORDER BY signed_at, source, original_transaction_id"
            ),
            arguments: [userID]
        ).map(storePurchase)
    }

    func putStorePurchase(_ purchase: StorePurchase) throws {
        try db.execute(
            sql: """
                INSERT INTO store_purchases (source, original_transaction_id, user_id, plan, signed_at, transaction_id,
                    environment, granted_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (source, original_transaction_id) DO UPDATE SET user_id = excluded.user_id,
                    plan = excluded.plan, signed_at = excluded.signed_at, transaction_id = excluded.transaction_id,
                    environment = excluded.environment, granted_at = excluded.granted_at
                """,
            arguments: [
                purchase.source.rawValue, purchase.originalTransactionID, purchase.userID, purchase.plan,
                Timestamp.format(purchase.signedAt), purchase.transactionID, purchase.environment.rawValue,
                purchase.grantedAt.map(Timestamp.format),
            ])
    }

    func endPlanGrant(of userID: String, plan: String, grantedAt: Date, at time: Date) throws -> Int {
        let at = Timestamp.format(time)
        try db.execute(
            sql: """
                UPDATE plans SET
                    trial_ends_at = CASE WHEN trial_ends_at IS NOT NULL THEN ? ELSE NULL END,
                    ends_at = CASE WHEN trial_ends_at IS NULL THEN ? ELSE ends_at END
                WHERE user_id = ? AND plan = ? AND granted_at = ? AND revoked_at IS NULL
                    AND (trial_ends_at > ? OR (trial_ends_at IS NULL AND (ends_at IS NULL OR ends_at > ?)))
                """,
            arguments: [at, at, userID, plan, Timestamp.format(grantedAt), at, at])
        return db.changesCount
    }

    func revokePlanGrant(of userID: String, plan: String, grantedAt: Date, at time: Date) throws -> Int {
        try db.execute(
            sql: """
                UPDATE plans SET revoked_at = ?
                WHERE user_id = ? AND plan = ? AND granted_at = ? AND revoked_at IS NULL
                """,
            arguments: [Timestamp.format(time), userID, plan, Timestamp.format(grantedAt)])
        return db.changesCount
    }

    private func storePurchase(_ row: Row) throws -> StorePurchase {
        let source: String = try row.decode(forColumn: "source")
        let environment: String = try row.decode(forColumn: "environment")
        guard let storeSource = StorePlanChange.Source(rawValue: source),
            let storeEnvironment = StorePlanChange.Environment(rawValue: environment)
        else {
            throw GuestModeError(
                .internalFailure,
                "store_purchases holds a source '\(source)' or environment '\(environment)' this build does not know")
        }
        return StorePurchase(
            source: storeSource, originalTransactionID: try row.decode(forColumn: "original_transaction_id"),
            userID: try row.decode(forColumn: "user_id"), plan: try row.decode(forColumn: "plan"),
            signedAt: try row.time("signed_at"), transactionID: try row.decode(forColumn: "transaction_id"),
            environment: storeEnvironment, grantedAt: try row.optionalTime("granted_at"))
    }
}
