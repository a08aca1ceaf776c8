import Foundation
import GuestModeKit

/// Meters on PostgreSQL, with the behaviour of SQLiteStore's.
///
/// Amounts: `amount` is DOUBLE PRECISION as in SQLite. Every amount written
/// has at most six fractional digits and fifteen significant digits
/// (`MeterAmount.largestRequest`), so the double stored is the one nearest
/// that decimal and `round(amount * 1000000)` reads back exactly its
/// millionths; usage is added up over those integers with `MeterAmount`,
/// never over doubles.
///
/// Concurrency: `useMeter` locks the user's row before reading the usage,
/// so the gate is decided by one writer at a time across machines: no use
/// passes the allowance through the gate and none is lost. The unique index
/// on (user_id, meter, idempotency_key) makes a key count once.
extension PostgresStore: MeterStore {
    public func meterStatus(of userID: String, meter: Meter, profile: Profile, now: Date) throws -> MeterStatus {
        try read { connection in
            try meterStatus(
                of: try requireUser(userID, connection), meter: meter, profile: profile, now: now, connection)
        }
    }

    public func checkMeter(
        of userID: String, meter: Meter, amount: MeterAmount?, profile: Profile, now: Date
    ) throws
        -> MeterDecision
    {
        try read { connection in
            let user = try requireUser(userID, connection)
            let status = try meterStatus(of: user, meter: meter, profile: profile, now: now, connection)
            return MeterDecision(isAllowed: status.admits(amount), requested: amount ?? .zero, status: status)
        }
    }

    public func useMeter(
        of userID: String, meter: Meter, amount: MeterAmount, key: String?, overage: MeterOverage, profile: Profile,
        now: Date
    ) throws -> MeterUseResult {
        try write { connection in
            let user = try requireUser(userID, locking: true, connection)
            if let key,
                try connection.execute(
                    "SELECT 1 FROM meter_usage WHERE user_id = $1 AND meter = $2 AND idempotency_key = $3",
                    [PostgresValue(userID), PostgresValue(meter.name), PostgresValue(key)]
                ).count > 0
            {
                let status = try meterStatus(of: user, meter: meter, profile: profile, now: now, connection)
                return MeterUseResult(
                    isRecorded: false, isDuplicate: true, isAllowed: true, status: status, warnings: [])
            }
            let before = try meterStatus(of: user, meter: meter, profile: profile, now: now, connection)
            let fits = before.admits(amount)
            guard fits || (overage == .allow && before.used.adding(amount) != nil) else {
                return MeterUseResult(
                    isRecorded: false, isDuplicate: false, isAllowed: false, status: before, warnings: [])
            }
            // The shortest decimal that reads back as the same double, which
            // is the double nearest the amount's decimal (see above).
            try connection.execute(
                "INSERT INTO meter_usage (user_id, meter, amount, at, idempotency_key) VALUES ($1, $2, $3, $4, $5)",
                [
                    PostgresValue(userID), PostgresValue(meter.name), PostgresValue("\(amount.doubleValue)"),
                    PostgresValue(now), key.map { PostgresValue($0) },
                ])
            try touch(userID, at: now, connection)
            try noteChange(of: userID, profile: profile, now: now, connection)
            let after = try meterStatus(of: user, meter: meter, profile: profile, now: now, connection)
            let warnings = try fireWarnings(of: userID, meter: meter, status: after, now: now, connection)
            return MeterUseResult(
                isRecorded: true, isDuplicate: false, isAllowed: fits, overage: !fits, status: after,
                warnings: warnings)
        }
    }

    func meterStatus(
        of user: User, meter: Meter, profile: Profile, now: Date, _ connection: PostgresConnection
    ) throws -> MeterStatus {
        let level = try tier(of: user, profile: profile, now: now, connection)
        let periodStart = meter.reset.periodStart(containing: now)
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
            [PostgresValue(user.id), PostgresValue(meter.name), PostgresValue(periodStart.map(Timestamp.format) ?? "")])
        var used = MeterAmount.zero
        for row in rows {
            used = used.adding(MeterAmount(millionths: max(0, try row.int64("millionths")))) ?? .largest
        }
        return profile.meterStatus(meter, tier: level, used: used, now: now)
    }

    /// Fires each warning the usage total reached that was not fired yet in
    /// this period: the primary key of meter_warnings makes it once.
    private func fireWarnings(
        of userID: String, meter: Meter, status: MeterStatus, now: Date, _ connection: PostgresConnection
    ) throws -> [FiredWarning] {
        var fired: [FiredWarning] = []
        for warning in meter.warningsReached(used: status.used, allowance: status.allowance) {
            let inserted = try connection.execute(
                """
                INSERT INTO meter_warnings (user_id, meter, period_start, percent, level, fired_at)
                VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING
                """,
                [
                    PostgresValue(userID), PostgresValue(meter.name),
                    PostgresValue(status.periodStart.map(Timestamp.format) ?? ""), PostgresValue("\(warning.percent)"),
                    PostgresValue(warning.level.rawValue), PostgresValue(now),
                ]
            ).changes
            guard inserted > 0 else { continue }
            let warning = FiredWarning(meter: meter.name, percent: warning.percent, level: warning.level)
            fired.append(warning)
            try appendSystemEvent(
                user: userID, action: FiredWarning.eventAction, properties: warning.eventProperties, at: now, connection
            )
        }
        return fired
    }
}
