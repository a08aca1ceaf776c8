import Foundation

// Pure meter rules: allowances, where a usage total stands, which warnings
// it has reached, whether a request fits, and when a period starts. The use
// cases (Meters.swift) apply them inside the store's transaction.

extension Tier {
    /// The tier's allowance of `meter` as an exact amount; nil: unlimited.
    /// Profiles hold allowances as doubles read from decimals, which convert
    /// back to exactly the decimal written.
    package func exactAllowance(for meter: String) -> MeterAmount? {
        allowance(for: meter).map(MeterAmount.init(approximating:))
    }
}

extension MeterReset {
    /// Start of the period containing `now`: calendar days and months in
    /// UTC; nil for meters that never reset.
    ///
    /// Counted from the days since 1970 (UTC has whole days of 86,400 seconds), not with Foundation's
    /// `Calendar`, whose first use costs a command about 1.6 M instructions (bench/results.md, "Start-up").
    /// Gregorian before 1582 too, as ISO 8601 timestamps and the stores' `substr(at, 1, 7)` months are
    /// (Foundation's calendar is Julian there).
    package func periodStart(containing now: Date) -> Date? {
        let day = (now.timeIntervalSince1970 / 86_400).rounded(.down)
        switch self {
        case .never: return nil
        case .daily: return Date(timeIntervalSince1970: day * 86_400)
        case .monthly:
            let (year, month, _) = CivilDate.fromDays(Int(day))
            return Date(timeIntervalSince1970: Double(CivilDate.days(year: year, month: month, day: 1)) * 86_400)
        }
    }
}

extension MeterWarning {
    /// The threshold as an exact percentage.
    package var exactPercent: MeterAmount { MeterAmount(approximating: percent) }

    /// Whether `used` of `allowance` is at or past this threshold, compared
    /// exactly: used × 100 ≥ percent × allowance, in 128-bit arithmetic.
    package func isReached(used: MeterAmount, allowance: MeterAmount) -> Bool {
        let left = used.millionths.multipliedFullWidth(by: 100 * MeterAmount.scale)
        let right = exactPercent.millionths.multipliedFullWidth(by: allowance.millionths)
        return (left.high, left.low) >= (right.high, right.low)
    }
}

extension Meter {
    /// The warnings a usage total has reached, lowest first. Each is
    /// recorded once per period; the ones not recorded yet are the ones this
    /// total crossed. An allowance of zero has reached them all.
    package func warningsReached(used: MeterAmount, allowance: MeterAmount?) -> [MeterWarning] {
        guard let allowance else { return [] }
        return warnings.filter { $0.isReached(used: used, allowance: allowance) }
    }

    /// Exhausted once nothing remains, else the level of the highest warning
    /// reached; unlimited meters are always `none`.
    package func level(used: MeterAmount, allowance: MeterAmount?) -> MeterLevel {
        guard let allowance else { return .none }
        if used >= allowance { return .exhausted }
        return warningsReached(used: used, allowance: allowance).last?.level ?? .none
    }

    /// Where a usage total stands against an allowance (nil: unlimited).
    package func status(tier: TierLevel, used: MeterAmount, allowance: MeterAmount?, periodStart: Date?) -> MeterStatus
    {
        MeterStatus(
            meter: name, unit: unit, tier: tier, used: used, allowance: allowance,
            remaining: allowance.map { $0.remaining(after: used) },
            percentUsed: allowance.map { Meter.percent(used, of: $0) },
            level: level(used: used, allowance: allowance), periodStart: periodStart)
    }

    /// `used` as a percentage of `allowance`, to a millionth of a percent;
    /// an allowance of zero is 100% used. For display: decisions compare
    /// amounts exactly.
    static func percent(_ used: MeterAmount, of allowance: MeterAmount) -> Double {
        guard allowance.isPositive else { return 100 }
        let percent = Double(used.millionths) / Double(allowance.millionths) * 100
        return (percent * 1_000_000).rounded() / 1_000_000
    }
}

extension Profile {
    /// The status of `meter` for a user of tier `level` who used `used` in
    /// the period containing `now`.
    package func meterStatus(_ meter: Meter, tier level: TierLevel, used: MeterAmount, now: Date) -> MeterStatus {
        meter.status(
            tier: level, used: used, allowance: tier(level).exactAllowance(for: meter.name),
            periodStart: meter.reset.periodStart(containing: now))
    }
}

extension MeterStatus {
    /// Whether a request fits what remains: with an amount, when the new
    /// total stays within the allowance; with none, when anything remains.
    /// Unlimited meters admit anything a sum can still count.
    package func admits(_ amount: MeterAmount?) -> Bool {
        guard let amount, amount.isPositive else { return remaining.map(\.isPositive) ?? true }
        // What remains, not allowance minus used: usage past the tier's
        // allowance (overage) is not covered by a grant given after it.
        guard used.adding(amount) != nil else { return false }
        return remaining.map { amount <= $0 } ?? true
    }
}

extension FiredWarning {
    /// The action of the system event a fired warning appends.
    package static let eventAction = "meter_warning"

    /// The properties of that system event.
    package var eventProperties: [String: String] {
        ["meter": meter, "percent": FiredWarning.format(percent: percent), "level": level.rawValue]
    }

    static func format(percent value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(format: "%.1f", value)
    }
}
