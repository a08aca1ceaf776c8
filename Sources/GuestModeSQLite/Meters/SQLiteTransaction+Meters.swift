import Foundation
internal import GRDB
import GuestModeKit

/// Usage rows keep the schema's REAL `amount` column: every amount written
/// has at most six fractional digits and fifteen significant digits
/// (`MeterAmount.largestRequest`), so the double stored is the one nearest
/// that decimal and `round(amount * 1000000)` reads back exactly its
/// millionths. Sums are taken over those integers, never over doubles.
extension SQLiteTransaction {
    func forEachMeterUseAmount(
        of userID: String, meter: String, since start: Date?, _ body: (MeterAmount) throws -> Void
    ) throws {
        let amounts = try Int64.fetchCursor(
            db.cachedStatement(
                sql: """
                    SELECT CASE WHEN typeof(amount) IN ('integer', 'real') THEN CAST(round(amount * 1000000) AS INTEGER) END
                    FROM meter_usage
                    WHERE user_id = ? AND meter = ? AND at >= ?
                    """),
            arguments: [userID, meter, start.map(Timestamp.format) ?? ""])
        // An amount that is not a number reads as NULL, which does not
        // decode: SQLite would otherwise count text as 0. One past what
        // millionths can count is cast to the largest integer.
        while let millionths = try amounts.next() { try body(MeterAmount(millionths: max(0, millionths))) }
    }

    func meterUseAmount(of userID: String, meter: String, key: String) throws -> MeterAmount? {
        guard
            let row = try Row.fetchOne(
                db.cachedStatement(
                    sql: """
                        SELECT CASE WHEN typeof(amount) IN ('integer', 'real')
                                    THEN CAST(round(amount * 1000000) AS INTEGER) END AS millionths
                        FROM meter_usage WHERE user_id = ? AND meter = ? AND idempotency_key = ?
                        """),
                arguments: [userID, meter, key])
        else { return nil }
        let millionths: Int64 = try row.decode(forColumn: "millionths")
        return MeterAmount(millionths: max(0, millionths))
    }

    func appendMeterUse(of userID: String, meter: String, amount: MeterAmount, at time: Date, key: String?) throws {
        try db.cachedStatement(
            sql: "INSERT INTO meter_usage (user_id, meter, amount, at, idempotency_key) VALUES (?, ?, ?, ?, ?)"
        ).execute(arguments: [userID, meter, amount.doubleValue, Timestamp.format(time), key])
    }

    /// The primary key of meter_warnings holds one row per user, meter,
    /// period and percent.
    func addFiredWarning(
        of userID: String, meter: String, periodStart: Date?, percent: Double, level: MeterLevel, at time: Date
    ) throws -> Bool {
        try db.cachedStatement(
            sql: """
                INSERT INTO meter_warnings (user_id, meter, period_start, percent, level, fired_at)
                VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                """
        ).execute(arguments: [
            userID, meter, periodStart.map(Timestamp.format) ?? "", percent, level.rawValue, Timestamp.format(time),
        ])
        return db.changesCount > 0
    }
}
