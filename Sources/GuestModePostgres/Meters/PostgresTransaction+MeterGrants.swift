import Foundation
import GuestModeKit

/// Grant rows keep amounts as meter_usage does (see
/// PostgresTransaction+Meters.swift): DOUBLE PRECISION, read back as exact
/// millionths. The unique index on (user_id, idempotency_key) makes a key
/// name one grant.
extension PostgresTransaction {
    private static let millionths = """
        CASE WHEN amount IS NULL THEN NULL
             WHEN amount <= 0 THEN 0
             WHEN amount < 9000000000000 THEN round(amount * 1000000)::bigint
             ELSE 9223372036854775807 END AS millionths
        """
    private static let grantColumns =
        "id, user_id, meter, granted_at, expires_at, revoked_at, reason, idempotency_key, \(millionths)"

    func meterUses(of userID: String, meter: String, since start: Date, until end: Date) throws -> [MeterUse] {
        try connection.execute(
            """
            SELECT at, \(Self.millionths) FROM meter_usage
            WHERE user_id = $1 AND meter = $2 AND at >= $3 AND at <= $4
            ORDER BY at COLLATE "C", id
            """,
            [PostgresValue(userID), PostgresValue(meter), PostgresValue(start), PostgresValue(end)]
        ).map { row in
            MeterUse(amount: Self.amount(try row.int64("millionths")), at: try row.date("at"))
        }
    }

    func meterGrants(of userID: String, meter: String?) throws -> [MeterGrantRow] {
        let statement = Self.grants(of: userID, meter: meter)
        return try connection.execute(statement.sql, statement.parameters).map(Self.grantRow)
    }

    /// The statement reading the user's grants (of `meter` only, when given), oldest first.
    static func grants(of userID: String, meter: String?) -> (sql: String, parameters: [PostgresValue?]) {
        let order = "ORDER BY granted_at COLLATE \"C\", id"
        guard let meter else {
            return ("SELECT \(grantColumns) FROM meter_grants WHERE user_id = $1 \(order)", [PostgresValue(userID)])
        }
        return (
            "SELECT \(grantColumns) FROM meter_grants WHERE user_id = $1 AND meter = $2 \(order)",
            [PostgresValue(userID), PostgresValue(meter)]
        )
    }

    func meterGrant(id: Int64) throws -> MeterGrantRow? {
        try connection.execute(
            "SELECT \(Self.grantColumns) FROM meter_grants WHERE id = $1", [PostgresValue(id)]
        ).first.map(Self.grantRow)
    }

    func meterGrant(of userID: String, key: String) throws -> MeterGrantRow? {
        try connection.execute(
            "SELECT \(Self.grantColumns) FROM meter_grants WHERE user_id = $1 AND idempotency_key = $2",
            [PostgresValue(userID), PostgresValue(key)]
        ).first.map(Self.grantRow)
    }

    func addMeterGrant(_ grant: MeterGrantRow) throws -> Int64 {
        guard
            let id = try connection.execute(
                """
                INSERT INTO meter_grants
                    (user_id, meter, amount, granted_at, expires_at, revoked_at, reason, idempotency_key)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id
                """,
                [
                    PostgresValue(grant.userID), PostgresValue(grant.meter),
                    PostgresValue("\(grant.amount.doubleValue)"), PostgresValue(grant.grantedAt),
                    grant.expiresAt.map { PostgresValue($0) }, grant.revokedAt.map { PostgresValue($0) },
                    grant.reason.map { PostgresValue($0) }, grant.idempotencyKey.map { PostgresValue($0) },
                ]
            ).first?.int64("id")
        else {
            throw GuestModeError(.databaseError, "the new meter grant has no id")
        }
        return id
    }

    func revokeMeterGrant(id: Int64, at time: Date) throws -> Bool {
        try connection.execute(
            "UPDATE meter_grants SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL",
            [PostgresValue(time), PostgresValue(id)]
        ).changes > 0
    }

    private static func amount(_ millionths: Int64) -> MeterAmount {
        MeterAmount(millionths: min(max(0, millionths), MeterAmount.largestRequest.millionths))
    }

    static func grantRow(_ row: PostgresRow) throws -> MeterGrantRow {
        MeterGrantRow(
            id: try row.int64("id"), userID: try row.string("user_id"), meter: try row.string("meter"),
            amount: amount(try row.int64("millionths")), grantedAt: try row.date("granted_at"),
            expiresAt: try row.optionalDate("expires_at"), revokedAt: try row.optionalDate("revoked_at"),
            reason: try row.optionalString("reason"), idempotencyKey: try row.optionalString("idempotency_key"))
    }
}
