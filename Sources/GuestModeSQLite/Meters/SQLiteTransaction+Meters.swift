import Foundation
internal import GRDB
import GuestModeKit

/// Usage rows keep the schema's REAL `amount` column: every amount written
/// has at most six fractional digits and fifteen significant digits
/// (`MeterAmount.largestRequest`), so the double stored is the one nearest
/// that decimal and `round(amount * 1000000)` reads back exactly its
/// millionths. The kept totals (meter_totals, Schema.v10) add up those
/// integers, never doubles.
extension SQLiteTransaction {
    func forEachMeterUsageTotal(
        of userID: String, meter: String, span: MeterTotalSpan, from start: Date?,
        _ body: (MeterAmount) throws -> Void
    ) throws {
        // A total that overflowed turned into a REAL: it reads as the largest amount.
        let bucket = start.map(span.bucket(beginningAt:)) ?? ""
        let totals = try remembered("meterTotals", userID, meter, span.rawValue, bucket, cost: { 16 * $0.count }) {
            try readAll(
                db.statement(
                    """
                    SELECT CASE WHEN typeof(millionths) = 'integer' THEN millionths ELSE 9223372036854775807 END
                        AS millionths
                    FROM meter_totals
                    WHERE user_id = ? AND meter = ? AND span = ? AND bucket >= ?
                    """),
                arguments: [userID, meter, span.rawValue, bucket],
                { row in try row.decode(Int64.self, forColumn: "millionths") })
        }
        for millionths in totals { try body(MeterAmount(millionths: max(0, millionths))) }
    }

    func meterUseAmount(of userID: String, meter: String, key: String) throws -> MeterAmount? {
        guard
            let row = try Row.fetchOne(
                db.statement(
                    """
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
        try db.statement(
            "INSERT INTO meter_usage (user_id, meter, amount, at, idempotency_key) VALUES (?, ?, ?, ?, ?)"
        ).execute(arguments: [userID, meter, amount.doubleValue, Timestamp.format(time), key])
    }

    /// The primary key of meter_warnings holds one row per user, meter,
    /// period and percent.
    func addFiredWarning(
        of userID: String, meter: String, periodStart: Date?, percent: Double, level: MeterLevel, at time: Date
    ) throws -> Bool {
        try db.statement(
            """
            INSERT INTO meter_warnings (user_id, meter, period_start, percent, level, fired_at)
            VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
            """
        ).execute(arguments: [
            userID, meter, periodStart.map(Timestamp.format) ?? "", percent, level.rawValue, Timestamp.format(time),
        ])
        return db.changesCount > 0
    }
}

/// The kept grant draws (meter_grant_draws, Schema.v14): the engine's rows
/// as they are, read and written whole.
extension SQLiteTransaction {
    private static func grantDraws(_ row: Row) throws -> MeterGrantDrawsRow {
        MeterGrantDrawsRow(
            userID: try row.decode(forColumn: "user_id"), meter: try row.decode(forColumn: "meter"),
            inputs: try row.decode(forColumn: "inputs"), through: try row.decode(forColumn: "latest_use_at"),
            drawnInPeriod: try row.decode(forColumn: "drawn_in_period"), drawn: try row.decode(forColumn: "drawn"))
    }

    private static let grantDrawColumns = "user_id, meter, inputs, latest_use_at, drawn_in_period, drawn"
    private static let grantDrawsOfMeter = SQLText(
        "SELECT \(grantDrawColumns) FROM meter_grant_draws WHERE user_id = ? AND meter = ?")

    func meterGrantDraws(of userID: String, meter: String) throws -> MeterGrantDrawsRow? {
        try Row.fetchOne(
            db.statement(Self.grantDrawsOfMeter),
            arguments: [userID, meter]
        ).map(Self.grantDraws)
    }

    func keepMeterGrantDraws(_ row: MeterGrantDrawsRow) throws {
        try db.cachedStatement(
            sql:
                """
                INSERT INTO meter_grant_draws (\(Self.grantDrawColumns)) VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (user_id, meter) DO UPDATE SET inputs = excluded.inputs,
                    latest_use_at = excluded.latest_use_at, drawn_in_period = excluded.drawn_in_period,
                    drawn = excluded.drawn
                """
        ).execute(arguments: [row.userID, row.meter, row.inputs, row.through, row.drawnInPeriod, row.drawn])
    }

    func forEachMeterGrantDraws(_ body: (MeterGrantDrawsRow) throws -> Void) throws {
        // Read whole first: `body` reads the store too.
        let rows = try Row.fetchAll(
            db, sql: "SELECT \(Self.grantDrawColumns) FROM meter_grant_draws ORDER BY user_id, meter")
        for row in rows { try body(try Self.grantDraws(row)) }
    }

    func meterGrantHoldersWithoutDraws(after position: MeterGrantHolder?, limit: Int) throws -> [MeterGrantHolder] {
        // By the grants' index on (user_id, meter): a page costs its own holders, however far into the store.
        let rows = try Row.fetchAll(
            db,
            sql: """
                SELECT DISTINCT g.user_id, g.meter FROM meter_grants g
                WHERE (g.user_id, g.meter) > (?, ?)
                    AND NOT EXISTS (SELECT 1 FROM meter_grant_draws d WHERE d.user_id = g.user_id AND d.meter = g.meter)
                ORDER BY g.user_id, g.meter LIMIT ?
                """,
            arguments: [position?.userID ?? "", position?.meter ?? "", limit])
        return try rows.map { row in
            MeterGrantHolder(userID: try row.decode(forColumn: "user_id"), meter: try row.decode(forColumn: "meter"))
        }
    }

    func owedGrantDraws() throws -> String? {
        try String.fetchOne(
            db.statement("SELECT value FROM meta WHERE key = ?"), arguments: [OwedGrantDraws.metaKey])
    }

    func setOwedGrantDraws(_ position: String?) throws {
        guard let position else {
            try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [OwedGrantDraws.metaKey])
            return
        }
        try db.execute(
            sql: "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            arguments: [OwedGrantDraws.metaKey, position])
    }
}
