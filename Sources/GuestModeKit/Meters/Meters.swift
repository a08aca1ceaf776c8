import Foundation

public struct MeterStatus: Codable, Sendable, Equatable {
    public var meter: String
    public var unit: String
    public var tier: TierLevel
    public var used: MeterAmount
    /// nil: unlimited for this tier.
    public var allowance: MeterAmount?
    public var remaining: MeterAmount?
    /// For display; decisions compare amounts exactly.
    public var percentUsed: Double?
    public var level: MeterLevel
    /// Start of the current period; nil for lifetime meters.
    public var periodStart: Date?

    public init(
        meter: String, unit: String, tier: TierLevel, used: MeterAmount, allowance: MeterAmount?,
        remaining: MeterAmount?, percentUsed: Double?, level: MeterLevel, periodStart: Date?
    ) {
        self.meter = meter
        self.unit = unit
        self.tier = tier
        self.used = used
        self.allowance = allowance
        self.remaining = remaining
        self.percentUsed = percentUsed
        self.level = level
        self.periodStart = periodStart
    }
}

public struct FiredWarning: Codable, Sendable, Equatable {
    public var meter: String
    public var percent: Double
    public var level: MeterLevel

    public init(meter: String, percent: Double, level: MeterLevel) {
        self.meter = meter
        self.percent = percent
        self.level = level
    }
}

public struct MeterUseResult: Codable, Sendable, Equatable {
    /// False when refused (exhausted) or when the idempotency key was seen.
    public var isRecorded: Bool
    public var isDuplicate: Bool
    /// False when the use did not fit the allowance: refused, or recorded
    /// as overage.
    public var isAllowed: Bool
    /// True when the use did not fit and was recorded anyway (overage
    /// allowed): the meter is now exhausted.
    public var overage: Bool
    public var status: MeterStatus
    /// Thresholds crossed by this use, each reported exactly once ever per period.
    public var warnings: [FiredWarning]

    public init(
        isRecorded: Bool, isDuplicate: Bool, isAllowed: Bool, overage: Bool = false, status: MeterStatus,
        warnings: [FiredWarning]
    ) {
        self.isRecorded = isRecorded
        self.isDuplicate = isDuplicate
        self.isAllowed = isAllowed
        self.overage = overage
        self.status = status
        self.warnings = warnings
    }
}

public struct MeterDecision: Codable, Sendable, Equatable {
    public var isAllowed: Bool
    /// Zero when the check named no amount.
    public var requested: MeterAmount
    public var status: MeterStatus

    public init(isAllowed: Bool, requested: MeterAmount, status: MeterStatus) {
        self.isAllowed = isAllowed
        self.requested = requested
        self.status = status
    }
}

extension MeterAmount {
    /// `init(parsing:)` as a usage error, for amounts given on a command line.
    public static func parse(_ text: String) throws -> MeterAmount {
        do {
            return try MeterAmount(parsing: text)
        } catch {
            throw GuestModeError.usage(error.description, code: .invalidAmount)
        }
    }
}

extension GuestMode {
    /// The gate to call before a paid call: allowed when `amount` fits in
    /// what remains (with no amount, when anything remains). Records nothing.
    public func checkMeter(user userID: String, meter: String, amount: MeterAmount?, now: Date) throws -> MeterDecision
    {
        try TextRule.check(userID, what: "the user id")
        let definition = try requireMeter(meter)
        if let amount { try requireValid(amount) }
        let decision = try store.checkMeter(of: userID, meter: definition, amount: amount, profile: profile, now: now)
        if !decision.isAllowed { try raisePromptTriggers(for: .meterRefused(meter: meter), userID: userID, now: now) }
        return decision
    }

    /// Records usage if it fits. A use that would go past the allowance is,
    /// by `overage` (default: the meter's, from the profile), refused whole
    /// and records nothing, or recorded in full, leaving the meter exhausted
    /// (`overage` and not `isAllowed` in the result). A repeated key records
    /// nothing.
    public func useMeter(
        user userID: String, meter: String, amount: MeterAmount, key: String?, overage: MeterOverage? = nil,
        now: Date
    ) throws
        -> MeterUseResult
    {
        try TextRule.check(["the user id": userID, "the meter": meter, "the idempotency key": key])
        let definition = try requireMeter(meter)
        try requireValid(amount)
        let result = try store.useMeter(
            of: userID, meter: definition, amount: amount, key: key, overage: overage ?? definition.overage,
            profile: profile, now: now)
        if !result.isAllowed { try raisePromptTriggers(for: .meterRefused(meter: meter), userID: userID, now: now) }
        return result
    }

    public func meterStatus(user userID: String, meter: String, now: Date) throws -> MeterStatus {
        try TextRule.check(userID, what: "the user id")
        let definition = try requireMeter(meter)
        return try store.meterStatus(of: userID, meter: definition, profile: profile, now: now)
    }

    /// Amounts made in code (literals, sums) get the same bounds as parsed ones.
    func requireValid(_ amount: MeterAmount) throws {
        guard amount.isPositive, amount <= .largestRequest else {
            throw GuestModeError.usage(
                "the amount must be greater than zero and at most \(MeterAmount.largestRequest), not \(amount)",
                code: .invalidAmount)
        }
    }

    func requireMeter(_ name: String) throws -> Meter {
        guard let meter = profile.meter(named: name) else {
            let known = profile.meters.map(\.name)
            throw GuestModeError.usage(
                "unknown meter '\(name)'; \(known.isEmpty ? "this profile has no meters" : "this profile's meters are: \(known.joined(separator: ", "))")",
                code: .unknownMeter)
        }
        return meter
    }
}
