import Foundation
import GuestModeKit

/// Amounts: `amount` is DOUBLE PRECISION as in SQLite. Every amount written
/// has at most six fractional digits and fifteen significant digits
/// (`MeterAmount.largestRequest`), so the double stored is the one nearest
/// that decimal and `round(amount * 1000000)` reads back exactly its
/// millionths; usage is added up over those integers with `MeterAmount`,
/// never over doubles. The unique index on (user_id, meter,
/// idempotency_key) makes a key count once.
extension PostgresTransaction {
    func forEachMeterUsageTotal(
        of userID: String, meter: String, span: MeterTotalSpan, from start: Date?,
        _ body: (MeterAmount) throws -> Void
    ) throws {
        let totals = Self.usageTotals(of: userID, meter: meter, span: span, from: start)
        for row in try connection.execute(totals.sql, totals.parameters) { try body(try Self.usageTotal(row)) }
    }

    /// The meter's grants, the plans and the period's totals in one round trip. The plans are every grant the
    /// user ever held when the meter has grants of the user, else those that may be in force; read after the
    /// grants, they see every grant those saw, even between the statements of a write.
    func meterFacts(of userID: String, meter: Meter, since start: Date?, at now: Date) throws -> MeterFacts {
        try Self.meterFacts(
            from: connection.execute(Self.factStatements(of: userID, meter: meter, since: start, at: now))[...])
    }

    /// The user (locked with `locking`) and its meter facts in one round trip: a meter's decision waits for
    /// the server once. The lock is taken by the first statement, before the facts are read.
    func userAndMeterFacts(
        of userID: String, locking: Bool, meter: Meter, since start: Date?, at now: Date
    ) throws -> (user: User, facts: MeterFacts)? {
        var answers = try connection.execute(
            [("SELECT * FROM users WHERE id = $1\(locking ? " FOR UPDATE" : "")", [PostgresValue(userID)])]
                + Self.factStatements(of: userID, meter: meter, since: start, at: now))[...]
        guard let row = answers.removeFirst().first else { return nil }
        return (try store.user(from: row), try Self.meterFacts(from: answers))
    }

    /// The statements `meterFacts` sends: the meter's grants, the plans, the period's totals.
    private static func factStatements(
        of userID: String, meter: Meter, since start: Date?, at now: Date
    ) -> [(sql: String, parameters: [PostgresValue?])] {
        [
            grants(of: userID, meter: meter.name),
            PostgresStore.planGrantsMayBeInForce(of: userID, at: now, orEveryOneWithGrantsOf: meter.name),
            usageTotals(of: userID, meter: meter.name, span: MeterTotalSpan(of: meter), from: start),
        ]
    }

    /// The answers to `factStatements`, in the order they were sent.
    private static func meterFacts(from answers: ArraySlice<PostgresRows>) throws -> MeterFacts {
        var answers = answers
        let grants = try answers.removeFirst().map(grantRow)
        let plans = try answers.removeFirst().map(PostgresStore.planGrant)
        var used = MeterAmount.zero
        for row in answers.removeFirst() { used = used.addingTotal(try usageTotal(row)) }
        return MeterFacts(plans: plans, used: used, grants: grants)
    }

    /// The statement reading the user's kept totals of `meter` in `span`'s buckets from the one `start`
    /// begins on (every one when nil).
    static func usageTotals(
        of userID: String, meter: String, span: MeterTotalSpan, from start: Date?
    ) -> (sql: String, parameters: [PostgresValue?]) {
        (
            """
            SELECT millionths FROM meter_totals
            WHERE user_id = $1 AND meter = $2 AND span = $3 AND bucket >= $4
            """,
            [
                PostgresValue(userID), PostgresValue(meter), PostgresValue(span.rawValue),
                PostgresValue(start.map(span.bucket(beginningAt:)) ?? ""),
            ]
        )
    }

    static func usageTotal(_ row: PostgresRow) throws -> MeterAmount {
        MeterAmount(millionths: max(0, try row.int64("millionths")))
    }

    func meterUseAmount(of userID: String, meter: String, key: String) throws -> MeterAmount? {
        try connection.execute(
            """
            SELECT CASE WHEN amount IS NULL THEN NULL
                        WHEN amount <= 0 THEN 0
                        WHEN amount < 9000000000000 THEN round(amount * 1000000)::bigint
                        ELSE 9223372036854775807 END AS millionths
            FROM meter_usage WHERE user_id = $1 AND meter = $2 AND idempotency_key = $3
            """,
            [PostgresValue(userID), PostgresValue(meter), PostgresValue(key)]
        ).first.map { MeterAmount(millionths: max(0, try $0.int64("millionths"))) }
    }

    func appendMeterUse(of userID: String, meter: String, amount: MeterAmount, at time: Date, key: String?) throws {
        // The shortest decimal that reads back as the same double, which is
        // the double nearest the amount's decimal (see above).
        try connection.execute(
            "INSERT INTO meter_usage (user_id, meter, amount, at, idempotency_key) VALUES ($1, $2, $3, $4, $5)",
            [
                PostgresValue(userID), PostgresValue(meter), PostgresValue("\(amount.doubleValue)"),
                PostgresValue(time), key.map { PostgresValue($0) },
            ])
    }

    /// The primary key of meter_warnings holds one row per user, meter,
    /// period and percent.
    func addFiredWarning(
        of userID: String, meter: String, periodStart: Date?, percent: Double, level: MeterLevel, at time: Date
    ) throws -> Bool {
        try connection.execute(
            """
            INSERT INTO meter_warnings (user_id, meter, period_start, percent, level, fired_at)
            VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING
            """,
            [
                PostgresValue(userID), PostgresValue(meter), PostgresValue(periodStart.map(Timestamp.format) ?? ""),
                PostgresValue("\(percent)"), PostgresValue(level.rawValue), PostgresValue(time),
            ]
        ).changes > 0
    }
}

/// The kept grant draws (meter_grant_draws, pg13): the engine's rows as
/// they are, read and written whole.
extension PostgresTransaction {
    private static let grantDrawColumns = "user_id, meter, inputs, latest_use_at, drawn_in_period, drawn"

    private static func grantDraws(_ row: PostgresRow) throws -> MeterGrantDrawsRow {
        MeterGrantDrawsRow(
            userID: try row.string("user_id"), meter: try row.string("meter"), inputs: try row.string("inputs"),
            through: try row.optionalString("latest_use_at"), drawnInPeriod: try row.int64("drawn_in_period"),
            drawn: try row.string("drawn"))
    }

    func meterGrantDraws(of userID: String, meter: String) throws -> MeterGrantDrawsRow? {
        try connection.execute(
            "SELECT \(Self.grantDrawColumns) FROM meter_grant_draws WHERE user_id = $1 AND meter = $2",
            [PostgresValue(userID), PostgresValue(meter)]
        ).first.map(Self.grantDraws)
    }

    func keepMeterGrantDraws(_ row: MeterGrantDrawsRow) throws {
        try connection.execute(
            """
            INSERT INTO meter_grant_draws (\(Self.grantDrawColumns)) VALUES ($1, $2, $3, $4, $5, $6)
            ON CONFLICT (user_id, meter) DO UPDATE SET inputs = EXCLUDED.inputs,
                latest_use_at = EXCLUDED.latest_use_at, drawn_in_period = EXCLUDED.drawn_in_period,
                drawn = EXCLUDED.drawn
            """,
            [
                PostgresValue(row.userID), PostgresValue(row.meter), PostgresValue(row.inputs),
                row.through.map { PostgresValue($0) }, PostgresValue(row.drawnInPeriod), PostgresValue(row.drawn),
            ])
    }

    func forEachMeterGrantDraws(_ body: (MeterGrantDrawsRow) throws -> Void) throws {
        let rows = try connection.execute(
            "SELECT \(Self.grantDrawColumns) FROM meter_grant_draws ORDER BY user_id COLLATE \"C\", meter COLLATE \"C\""
        )
        for row in rows { try body(try Self.grantDraws(row)) }
    }

    func meterGrantHoldersWithoutDraws(after position: MeterGrantHolder?, limit: Int) throws -> [MeterGrantHolder] {
        // In the database's own order, the order of the grants' index on (user_id, meter): a page
        // costs its own holders, however far into the store.
        let rows = try connection.execute(
            """
            SELECT DISTINCT g.user_id, g.meter FROM meter_grants g
            WHERE (g.user_id, g.meter) > ($1, $2)
                AND NOT EXISTS (SELECT 1 FROM meter_grant_draws d WHERE d.user_id = g.user_id AND d.meter = g.meter)
            ORDER BY g.user_id, g.meter LIMIT $3
            """,
            [PostgresValue(position?.userID ?? ""), PostgresValue(position?.meter ?? ""), PostgresValue(Int64(limit))])
        return try rows.map { row in MeterGrantHolder(userID: try row.string("user_id"), meter: try row.string("meter"))
        }
    }

    func owedGrantDraws() throws -> String? {
        try connection.execute("SELECT value FROM meta WHERE key = $1", [PostgresValue(OwedGrantDraws.metaKey)])
            .first?.string("value")
    }

    func setOwedGrantDraws(_ position: String?) throws {
        guard let position else {
            try connection.execute("DELETE FROM meta WHERE key = $1", [PostgresValue(OwedGrantDraws.metaKey)])
            return
        }
        try connection.execute(
            "INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [PostgresValue(OwedGrantDraws.metaKey), PostgresValue(position)])
    }
}
