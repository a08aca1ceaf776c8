import Foundation
import GRDB

public struct MeterStatus: Codable, Sendable, Equatable {
    public var meter: String
    public var unit: String
    public var tier: TierLevel
    public var used: Double
    /// nil: unlimited for this tier.
    public var allowance: Double?
    public var remaining: Double?
    public var percentUsed: Double?
    public var level: MeterLevel
    /// Start of the current period; nil for lifetime meters.
    public var periodStart: Date?
}

public struct FiredWarning: Codable, Sendable, Equatable {
    public var meter: String
    public var percent: Double
    public var level: MeterLevel
}

public struct MeterUseResult: Codable, Sendable, Equatable {
    /// False when refused (exhausted) or when the idempotency key was seen.
    public var isRecorded: Bool
    public var isDuplicate: Bool
    public var isAllowed: Bool
    public var status: MeterStatus
    /// Thresholds crossed by this use, each reported exactly once ever per period.
    public var warnings: [FiredWarning]
}

public struct MeterDecision: Codable, Sendable, Equatable {
    public var isAllowed: Bool
    public var requested: Double
    public var status: MeterStatus
}

extension GuestMode {
    /// The gate to call before a paid call: allowed when `amount` fits in
    /// what remains (with no amount, when anything remains). Records nothing.
    public func checkMeter(user userID: String, meter: String, amount: Double?, now: Date) throws -> MeterDecision {
        let definition = try requireMeter(meter)
        return try store.read { db in
            let user = try store.requireUser(userID, db)
            let status = try meterStatus(of: user, meter: definition, now: now, db)
            return MeterDecision(
                isAllowed: fits(amount, in: status), requested: amount ?? 0, status: status)
        }
    }

    /// Records usage if it fits; a use that would go past the allowance is
    /// refused whole and records nothing. A repeated key records nothing.
    public func useMeter(user userID: String, meter: String, amount: Double, key: String?, now: Date) throws -> MeterUseResult {
        let definition = try requireMeter(meter)
        guard amount > 0, amount.isFinite else {
            throw GuestModeError.usage("the amount must be a positive number, not \(amount)")
        }
        return try store.write { db in
            let user = try store.requireUser(userID, db)
            if let key, try Bool.fetchOne(
                db, sql: "SELECT 1 FROM meter_usage WHERE user_id = ? AND meter = ? AND idempotency_key = ?",
                arguments: [userID, meter, key]) == true
            {
                let status = try meterStatus(of: user, meter: definition, now: now, db)
                return MeterUseResult(isRecorded: false, isDuplicate: true, isAllowed: true, status: status, warnings: [])
            }
            let before = try meterStatus(of: user, meter: definition, now: now, db)
            guard fits(amount, in: before) else {
                return MeterUseResult(isRecorded: false, isDuplicate: false, isAllowed: false, status: before, warnings: [])
            }
            try db.execute(
                sql: "INSERT INTO meter_usage (user_id, meter, amount, at, idempotency_key) VALUES (?, ?, ?, ?, ?)",
                arguments: [userID, meter, amount, Timestamp.format(now), key])
            try store.touch(userID, at: now, db)
            try store.noteChange(of: userID, profile: profile, now: now, db)
            let after = try meterStatus(of: user, meter: definition, now: now, db)
            let warnings = try fireWarnings(user: userID, meter: definition, status: after, now: now, db)
            return MeterUseResult(isRecorded: true, isDuplicate: false, isAllowed: true, status: after, warnings: warnings)
        }
    }

    public func meterStatus(user userID: String, meter: String, now: Date) throws -> MeterStatus {
        let definition = try requireMeter(meter)
        return try store.read { db in
            try meterStatus(of: try store.requireUser(userID, db), meter: definition, now: now, db)
        }
    }

    func fits(_ amount: Double?, in status: MeterStatus) -> Bool {
        guard let remaining = status.remaining else { return true }
        guard let amount, amount > 0 else { return remaining > 0 }
        return amount <= remaining + 1e-9
    }

    func meterStatus(of user: User, meter: Meter, now: Date, _ db: Database) throws -> MeterStatus {
        let level = try store.tier(of: user, profile: profile, now: now, db)
        let periodStart = MeterPeriod.start(of: meter.reset, containing: now)
        let used = try Double.fetchOne(
            db,
            sql: "SELECT coalesce(sum(amount), 0) FROM meter_usage WHERE user_id = ? AND meter = ? AND at >= ?",
            arguments: [user.id, meter.name, periodStart.map(Timestamp.format) ?? ""]) ?? 0
        let allowance = profile.tier(level).allowance(for: meter.name)
        let remaining = allowance.map { max(0, $0 - used) }
        let percent = allowance.map { $0 > 0 ? used / $0 * 100 : 100 }
        return MeterStatus(
            meter: meter.name, unit: meter.unit, tier: level, used: used, allowance: allowance, remaining: remaining,
            percentUsed: percent, level: MeterPeriod.level(of: meter, percentUsed: percent, remaining: remaining),
            periodStart: periodStart)
    }

    private func fireWarnings(user userID: String, meter: Meter, status: MeterStatus, now: Date, _ db: Database) throws
        -> [FiredWarning]
    {
        guard let percent = status.percentUsed else { return [] }
        var fired: [FiredWarning] = []
        for warning in meter.warnings where percent >= warning.percent - 1e-9 {
            try db.execute(
                sql: """
                    INSERT INTO meter_warnings (user_id, meter, period_start, percent, level, fired_at)
                    VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING
                    """,
                arguments: [
                    userID, meter.name, status.periodStart.map(Timestamp.format) ?? "", warning.percent,
                    warning.level.rawValue, Timestamp.format(now),
                ])
            if db.changesCount > 0 {
                fired.append(FiredWarning(meter: meter.name, percent: warning.percent, level: warning.level))
                try store.appendSystemEvent(
                    user: userID, action: "meter_warning",
                    properties: ["meter": meter.name, "percent": formatPercent(warning.percent), "level": warning.level.rawValue],
                    at: now, db)
            }
        }
        return fired
    }

    func requireMeter(_ name: String) throws -> Meter {
        guard let meter = profile.meter(named: name) else {
            let known = profile.meters.map(\.name)
            throw GuestModeError.usage(
                "unknown meter '\(name)'; \(known.isEmpty ? "this profile has no meters" : "this profile's meters are: \(known.joined(separator: ", "))")",
                code: "unknown_meter")
        }
        return meter
    }
}

func formatPercent(_ value: Double) -> String {
    value == value.rounded() ? String(Int(value)) : String(format: "%.1f", value)
}

enum MeterPeriod {
    /// Periods are calendar days and months in UTC.
    static func start(of reset: MeterReset, containing now: Date) -> Date? {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        switch reset {
        case .never: return nil
        case .daily: return calendar.startOfDay(for: now)
        case .monthly: return calendar.date(from: calendar.dateComponents([.year, .month], from: now))
        }
    }

    static func level(of meter: Meter, percentUsed: Double?, remaining: Double?) -> MeterLevel {
        guard let percentUsed, let remaining else { return .none }
        if remaining <= 1e-9 { return .exhausted }
        return meter.warnings.last { percentUsed >= $0.percent - 1e-9 }?.level ?? .none
    }
}
