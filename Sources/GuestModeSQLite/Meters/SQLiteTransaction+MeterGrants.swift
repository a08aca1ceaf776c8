import Foundation
internal import GRDB
import GuestModeKit

/// Grant rows keep amounts as meter_usage does (see
/// SQLiteTransaction+Meters.swift): REAL, read back as exact millionths.
extension SQLiteTransaction {
    private static let grantColumns = """
        id, user_id, meter, granted_at, expires_at, revoked_at, reason, idempotency_key,
        CASE WHEN typeof(amount) IN ('integer', 'real') THEN CAST(round(amount * 1000000) AS INTEGER) END AS millionths
        """
    private static let grantsOfUser = SQLText(
        """
        SELECT \(grantColumns) FROM meter_grants
        WHERE user_id = ? AND (? IS NULL OR meter = ?) ORDER BY granted_at, id
        """)
    private static let grantByID = SQLText("SELECT \(grantColumns) FROM meter_grants WHERE id = ?")
    private static let grantByKey = SQLText(
        "SELECT \(grantColumns) FROM meter_grants WHERE user_id = ? AND idempotency_key = ?")

    func meterUses(of userID: String, meter: String, since start: Date, until end: Date) throws -> [MeterUse] {
        try Row.fetchAll(
            db.statement(
                """
                SELECT at, CASE WHEN typeof(amount) IN ('integer', 'real')
                                THEN CAST(round(amount * 1000000) AS INTEGER) END AS millionths
                FROM meter_usage WHERE user_id = ? AND meter = ? AND at >= ? AND at <= ?
                ORDER BY at, id
                """),
            arguments: [userID, meter, Timestamp.format(start), Timestamp.format(end)]
        ).map { row in
            let millionths: Int64 = try row.decode(forColumn: "millionths")
            return MeterUse(
                amount: MeterAmount(millionths: min(max(0, millionths), MeterAmount.largestRequest.millionths)),
                at: try row.time("at"))
        }
    }

    func meterGrants(of userID: String, meter: String?) throws -> [MeterGrantRow] {
        // No meter (every grant) and a meter are told apart by the first argument: a meter's name is never empty.
        try remembered("meterGrants", userID, meter ?? "", cost: { 256 * $0.count }) {
            try readAll(db.statement(Self.grantsOfUser), arguments: [userID, meter, meter], grantRow)
        }
    }

    func meterGrant(id: Int64) throws -> MeterGrantRow? {
        try Row.fetchOne(
            db.statement(Self.grantByID), arguments: [id]
        ).map(grantRow)
    }

    func meterGrant(of userID: String, key: String) throws -> MeterGrantRow? {
        try Row.fetchOne(
            db.statement(Self.grantByKey),
            arguments: [userID, key]
        ).map(grantRow)
    }

    func addMeterGrant(_ grant: MeterGrantRow) throws -> Int64 {
        try db.statement(
            """
            INSERT INTO meter_grants
                (user_id, meter, amount, granted_at, expires_at, revoked_at, reason, idempotency_key)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """
        ).execute(arguments: [
            grant.userID, grant.meter, grant.amount.doubleValue, Timestamp.format(grant.grantedAt),
            grant.expiresAt.map(Timestamp.format), grant.revokedAt.map(Timestamp.format), grant.reason,
            grant.idempotencyKey,
        ])
        return db.lastInsertedRowID
    }

    func revokeMeterGrant(id: Int64, at time: Date) throws -> Bool {
        try db.statement("UPDATE meter_grants SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL")
            .execute(arguments: [Timestamp.format(time), id])
        return db.changesCount > 0
    }

    private func grantRow(_ row: any StoredRow) throws -> MeterGrantRow {
        let millionths: Int64 = try row.decode(forColumn: "millionths")
        return MeterGrantRow(
            id: try row.decode(forColumn: "id"), userID: try row.decode(forColumn: "user_id"),
            meter: try row.decode(forColumn: "meter"),
            amount: MeterAmount(millionths: min(max(0, millionths), MeterAmount.largestRequest.millionths)),
            grantedAt: try row.time("granted_at"), expiresAt: try row.optionalTime("expires_at"),
            revokedAt: try row.optionalTime("revoked_at"), reason: try row.decode(forColumn: "reason"),
            idempotencyKey: try row.decode(forColumn: "idempotency_key"))
    }
}
