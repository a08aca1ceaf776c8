import Foundation
import GuestModeKit

extension PostgresTransaction {
    func meterUsage(of userID: String, meter: String, since start: Date?) throws -> MeterAmount {
        // Rows written by hand or by earlier versions may hold amounts past
        // what millionths in a bigint can count (or NaN, which PostgreSQL
        // sorts above every number): such usage reads as the largest amount,
        // where a bare ::bigint cast would fail the whole command. A NULL,
        // which the schema forbids, stays NULL and is refused as corrupt.
        let rows = try connection.execute(
            """
            SELECT CASE WHEN amount IS NULL THEN NULL
                        WHEN amount <= 0 THEN 0
                        WHEN amount < 9000000000000 THEN round(amount * 1000000)::bigint
                        ELSE 9223372036854775807 END AS millionths
            FROM meter_usage
            WHERE user_id = $1 AND meter = $2 AND at >= $3
            """,
            [PostgresValue(userID), PostgresValue(meter), PostgresValue(start.map(Timestamp.format) ?? "")])
        var used = MeterAmount.zero
        for row in rows {
            used = used.adding(MeterAmount(millionths: max(0, try row.int64("millionths")))) ?? .largest
        }
        return used
    }
}
