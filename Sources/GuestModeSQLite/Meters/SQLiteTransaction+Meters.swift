import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteTransaction {
    func meterUsage(of userID: String, meter: String, since start: Date?) throws -> MeterAmount {
        let amounts = try Int64.fetchCursor(
            db,
            sql: """
                SELECT CASE WHEN typeof(amount) IN ('integer', 'real') THEN CAST(round(amount * 1000000) AS INTEGER) END
                FROM meter_usage
                WHERE user_id = ? AND meter = ? AND at >= ?
                """,
            arguments: [userID, meter, start.map(Timestamp.format) ?? ""])
        // Rows written by earlier versions may hold amounts past what a sum
        // can count; such usage reads as the largest amount, not a crash. An
        // amount that is not a number reads as NULL, which does not decode:
        // SQLite would otherwise count text as 0.
        var used = MeterAmount.zero
        while let millionths = try amounts.next() {
            used = used.adding(MeterAmount(millionths: max(0, millionths))) ?? .largest
        }
        return used
    }
}
