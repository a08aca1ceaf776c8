import Foundation
internal import GRDB
import GuestModeKit

/// Usage rows keep the schema's REAL `amount` column: every amount written
/// has at most six fractional digits and fifteen significant digits
/// (`MeterAmount.largestRequest`), so the double stored is the one nearest
/// that decimal and `round(amount * 1000000)` reads back exactly its
/// millionths. Sums are taken over those integers, never over doubles.
extension SQLiteStore: MeterStore {
    public func meterStatus(of userID: String, meter: Meter, profile: Profile, now: Date) throws -> MeterStatus {
        try read { db in
            try meterStatus(of: try requireUser(userID, db), meter: meter, profile: profile, now: now, db)
        }
    }

    public func checkMeter(
        of userID: String, meter: Meter, amount: MeterAmount?, profile: Profile, now: Date
    ) throws
        -> MeterDecision
    {
        try read { db in
            let status = try meterStatus(of: try requireUser(userID, db), meter: meter, profile: profile, now: now, db)
            return MeterDecision(isAllowed: status.admits(amount), requested: amount ?? .zero, status: status)
        }
    }

    public func useMeter(
        of userID: String, meter: Meter, amount: MeterAmount, key: String?, overage: MeterOverage, profile: Profile,
        now: Date
    ) throws -> MeterUseResult {
        try write { db in
            let user = try requireUser(userID, db)
            if let key,
                try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM meter_usage WHERE user_id = ? AND meter = ? AND idempotency_key = ?",
                    arguments: [userID, meter.name, key]) == true
            {
                let status = try meterStatus(of: user, meter: meter, profile: profile, now: now, db)
                return MeterUseResult(
                    isRecorded: false, isDuplicate: true, isAllowed: true, status: status, warnings: [])
            }
            let before = try meterStatus(of: user, meter: meter, profile: profile, now: now, db)
            let fits = before.admits(amount)
            guard fits || (overage == .allow && before.used.adding(amount) != nil) else {
                return MeterUseResult(
                    isRecorded: false, isDuplicate: false, isAllowed: false, status: before, warnings: [])
            }
            try db.execute(
                sql: "INSERT INTO meter_usage (user_id, meter, amount, at, idempotency_key) VALUES (?, ?, ?, ?, ?)",
                arguments: [userID, meter.name, amount.doubleValue, Timestamp.format(now), key])
            try touch(userID, at: now, db)
            try noteChange(of: userID, profile: profile, now: now, db)
            let after = try meterStatus(of: user, meter: meter, profile: profile, now: now, db)
            let warnings = try fireWarnings(of: userID, meter: meter, status: after, now: now, db)
            return MeterUseResult(
                isRecorded: true, isDuplicate: false, isAllowed: fits, overage: !fits, status: after,
                warnings: warnings)
        }
    }

    func meterStatus(
        of user: User, meter: Meter, profile: Profile, now: Date, _ db: Database
    ) throws
        -> MeterStatus
    {
        let level = try tier(of: user, profile: profile, now: now, db)
        let periodStart = meter.reset.periodStart(containing: now)
        let amounts = try Int64.fetchCursor(
            db,
            sql: """
                SELECT CASE WHEN typeof(amount) IN ('integer', 'real') THEN CAST(round(amount * 1000000) AS INTEGER) END
                FROM meter_usage
                WHERE user_id = ? AND meter = ? AND at >= ?
                """,
            arguments: [user.id, meter.name, periodStart.map(Timestamp.format) ?? ""])
        // Rows written by earlier versions may hold amounts past what a sum
        // can count; such usage reads as the largest amount, not a crash. An
        // amount that is not a number reads as NULL, which does not decode:
        // SQLite would otherwise count text as 0.
        var used = MeterAmount.zero
        while let millionths = try amounts.next() {
            used = used.adding(MeterAmount(millionths: max(0, millionths))) ?? .largest
        }
        return profile.meterStatus(meter, tier: level, used: used, now: now)
    }

    /// Fires each warning the usage total reached that was not fired yet in
    /// this period: the primary key of meter_warnings makes it once.
    private func fireWarnings(
        of userID: String, meter: Meter, status: MeterStatus, now: Date, _ db: Database
    ) throws
        -> [FiredWarning]
    {
        var fired: [FiredWarning] = []
        for warning in meter.warningsReached(used: status.used, allowance: status.allowance) {
            try db.execute(
                sql: """
                    INSERT INTO meter_warnings (user_id, meter, period_start, percent, level, fired_at)
                    VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """,
                arguments: [
                    userID, meter.name, status.periodStart.map(Timestamp.format) ?? "", warning.percent,
                    warning.level.rawValue, Timestamp.format(now),
                ])
            guard db.changesCount > 0 else { continue }
            let warning = FiredWarning(meter: meter.name, percent: warning.percent, level: warning.level)
            fired.append(warning)
            try appendSystemEvent(
                user: userID, action: FiredWarning.eventAction, properties: warning.eventProperties, at: now, db)
        }
        return fired
    }
}
