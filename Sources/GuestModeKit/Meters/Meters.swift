import Foundation

/// Where a user stands against one meter's allowance in the current period.
public struct MeterStatus: Codable, Sendable, Equatable {
    /// The meter's name.
    public var meter: String
    /// The meter's unit, such as `minutes`.
    public var unit: String
    /// The user's tier, which sets the allowance.
    public var tier: TierLevel
    /// How much the user used in the current period.
    public var used: MeterAmount
    /// nil: unlimited for this tier.
    public var allowance: MeterAmount?
    /// How much is left; nil when unlimited.
    public var remaining: MeterAmount?
    /// For display; decisions compare amounts exactly.
    public var percentUsed: Double?
    /// The warning level the usage has reached.
    public var level: MeterLevel
    /// Start of the current period; nil for lifetime meters.
    public var periodStart: Date?
    /// The part of `allowance` grants give in this period: what they gave
    /// to this period's usage plus what they still hold. Zero when the tier
    /// makes the meter unlimited (grants are moot then).
    public var granted: MeterAmount
    /// The grants in force with something left, in the order usage draws
    /// on them.
    public var grants: [MeterGrant]

    package init(
        meter: String, unit: String, tier: TierLevel, used: MeterAmount, allowance: MeterAmount?,
        remaining: MeterAmount?, percentUsed: Double?, level: MeterLevel, periodStart: Date?,
        granted: MeterAmount = .zero, grants: [MeterGrant] = []
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
        self.granted = granted
        self.grants = grants
    }
}

/// A warning threshold a use crossed.
public struct FiredWarning: Codable, Sendable, Equatable {
    /// The meter's name.
    public var meter: String
    /// The threshold, as a percentage of the allowance.
    public var percent: Double
    /// The threshold's level.
    public var level: MeterLevel

    package init(meter: String, percent: Double, level: MeterLevel) {
        self.meter = meter
        self.percent = percent
        self.level = level
    }
}

/// What recording a use of a meter did.
public struct MeterUseResult: Codable, Sendable, Equatable {
    /// False when refused (exhausted) or when the idempotency key was seen.
    public var isRecorded: Bool
    /// True when the idempotency key was seen before: nothing was recorded again.
    public var isDuplicate: Bool
    /// False when the use did not fit the allowance: refused, or recorded
    /// as overage.
    public var isAllowed: Bool
    /// True when the use did not fit and was recorded anyway (overage
    /// allowed): the meter is now exhausted.
    public var isOverage: Bool
    /// The meter after this use.
    public var status: MeterStatus
    /// Thresholds crossed by this use, each reported exactly once ever per period.
    public var warnings: [FiredWarning]
    /// Why the use did not fit, worded once, with the prompt it raised; nil when it fit. Not part of
    /// the printed document.
    public var refusal: Refusal?

    enum CodingKeys: String, CodingKey { case isRecorded, isDuplicate, isAllowed, isOverage, status, warnings }

    package init(
        isRecorded: Bool, isDuplicate: Bool, isAllowed: Bool, overage: Bool = false, status: MeterStatus,
        warnings: [FiredWarning]
    ) {
        self.isRecorded = isRecorded
        self.isDuplicate = isDuplicate
        self.isAllowed = isAllowed
        self.isOverage = overage
        self.status = status
        self.warnings = warnings
    }
}

/// Whether an amount may be used now; `checkMeter` records nothing.
public struct MeterDecision: Codable, Sendable, Equatable {
    /// True when the amount fits what is left of the allowance.
    public var isAllowed: Bool
    /// Zero when the check named no amount.
    public var requested: MeterAmount
    /// The meter as it stands.
    public var status: MeterStatus
    /// Why the amount does not fit, worded once, with the prompt due for it (`Refusal.prompt`); nil
    /// when it fits. Not part of the printed document.
    public var refusal: Refusal?

    enum CodingKeys: String, CodingKey { case isAllowed, requested, status }

    package init(isAllowed: Bool, requested: MeterAmount, status: MeterStatus) {
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
            throw GuestModeError(.invalidAmount, error.description)
        }
    }
}

extension GuestMode {
    /// The gate to call before a paid call: allowed when `amount` fits in
    /// what remains (with no amount, when anything remains). A pure read, in
    /// one read transaction: it records nothing and raises nothing, so a
    /// refusal here raises no prompt trigger and queues no webhook. A refused
    /// decision's `refusal` names the prompt already due for the user, if any
    /// (what `nextPrompt` offers with no trigger named: one an earlier
    /// refusal raised, a meter's threshold). To have the refusal raise the
    /// meter's triggers, call `checkMeterRaisingPrompt`, or `useMeter`, whose
    /// refusal raises them.
    ///
    /// ```swift
    /// let gate = try engine.checkMeter(
    ///     user: guest.id, meter: "api_minutes", amount: MeterAmount(units: 20), now: now)
    /// if gate.isAllowed { /* make the paid call */ }
    /// ```
    public func checkMeter(user userID: String, meter: String, amount: MeterAmount?, now: Date) throws -> MeterDecision
    {
        let definition = try gateInput(user: userID, meter: meter, amount: amount)
        return try store.read { transaction in
            try decide(amount, of: definition, user: userID, raising: false, now: now, in: transaction)
        }
    }

    /// `checkMeter`, as a write: a refusal raises the meter's prompt triggers
    /// and its `meter.exhausted` webhook, as a refused `useMeter` does, and
    /// names the prompt they make due. One write transaction, whatever the
    /// answer; an allowed amount writes nothing.
    ///
    /// ```swift
    /// let gate = try engine.checkMeterRaisingPrompt(
    ///     user: guest.id, meter: "api_minutes", amount: MeterAmount(units: 20), now: now)
    /// if let prompt = gate.refusal?.prompt { /* show prompt.content */ }
    /// ```
    public func checkMeterRaisingPrompt(
        user userID: String, meter: String, amount: MeterAmount?, now: Date
    ) throws -> MeterDecision {
        let definition = try gateInput(user: userID, meter: meter, amount: amount)
        return try store.write { transaction in
            try decide(amount, of: definition, user: userID, raising: true, now: now, in: transaction)
        }
    }

    private func gateInput(user userID: String, meter: String, amount: MeterAmount?) throws -> Meter {
        try TextRule.check(userID, what: "the user id")
        let definition = try requireMeter(meter)
        if let amount { try requireValid(amount) }
        return definition
    }

    /// The gate's decision inside `transaction`. `raising` (a write) raises a
    /// refusal's triggers and names the prompt they make due; without it
    /// nothing is written and the prompt is the one already due.
    private func decide(
        _ amount: MeterAmount?, of meter: Meter, user userID: String, raising: Bool, now: Date,
        in transaction: any StoreTransaction
    ) throws -> MeterDecision {
        guard
            let (user, facts) = try transaction.userAndMeterFacts(
                of: userID, locking: raising, meter: meter, since: meter.reset.periodStart(containing: now), at: now)
        else { throw GuestMode.missingUser(userID) }
        let status = try transaction.meterStatus(of: user, meter: meter, facts: facts, profile: profile, now: now)
        var decision = MeterDecision(isAllowed: status.admits(amount), requested: amount ?? .zero, status: status)
        guard !decision.isAllowed else { return decision }
        let event = RefusalEvent.meterRefused(meter: meter.name)
        if raising { try raisePromptTriggers(for: event, userID: userID, now: now, in: transaction) }
        decision.refusal = Refusal.meter(
            status, requested: amount, recorded: false,
            prompt: try promptOffer(after: event, user: userID, now: now, raised: raising, in: transaction))
        return decision
    }

    /// Records usage if it fits. A use that would go past the allowance is,
    /// by `overage` (default: the meter's, from the profile), refused whole
    /// and records nothing, or recorded in full, leaving the meter exhausted
    /// (`isOverage` and not `isAllowed` in the result). A repeated key records
    /// nothing. A use that does not fit raises the meter's prompt triggers and
    /// its `meter.exhausted` webhook, and its `refusal` names the prompt they
    /// make due: all of it one write transaction.
    ///
    /// ```swift
    /// let used = try engine.useMeter(
    ///     user: guest.id, meter: "api_minutes", amount: MeterAmount(units: 20), key: "session-1", now: now)
    /// // used.isRecorded; a retry with key "session-1" records nothing (used.isDuplicate)
    /// ```
    public func useMeter(
        user userID: String, meter: String, amount: MeterAmount, key: String?, overage: MeterOverage? = nil,
        now: Date
    ) throws
        -> MeterUseResult
    {
        try TextRule.check(["the user id": userID, "the meter": meter, "the idempotency key": key])
        let definition = try requireMeter(meter)
        try requireValid(amount)
        let event = RefusalEvent.meterRefused(meter: meter)
        return try store.write { transaction in
            var result = try use(
                amount, of: definition, user: userID, key: key, overage: overage ?? definition.overage, now: now,
                in: transaction)
            if key != nil { try faults.afterKeyCheck(.meterUse) }
            guard !result.isAllowed else { return result }
            // The refusal, its triggers and its prompt in the use's own transaction: a refused use is one write.
            try raisePromptTriggers(for: event, userID: userID, now: now, in: transaction)
            result.refusal = Refusal.meter(
                result.status, requested: amount, recorded: result.isRecorded,
                prompt: try promptOffer(after: event, user: userID, now: now, raised: true, in: transaction))
            return result
        }
    }

    /// Where the user stands against every meter of the profile now, in the
    /// profile's order, all read from one snapshot (one read transaction).
    ///
    /// ```swift
    /// for status in try engine.meterStatuses(user: guest.id, now: now) {
    ///     print(status.meter, status.used, status.remaining ?? "unlimited")
    /// }
    /// ```
    public func meterStatuses(user userID: String, now: Date) throws -> [MeterStatus] {
        try TextRule.check(userID, what: "the user id")
        return try store.read { transaction in
            let user = try transaction.requireUser(userID)
            guard !profile.meters.isEmpty else { return [] }
            let level = try transaction.tier(of: user, profile: profile, now: now)
            return try profile.meters.map {
                try transaction.meterStatus(of: user, meter: $0, tier: level, profile: profile, now: now)
            }
        }
    }

    /// Where the user stands against a meter now.
    ///
    /// ```swift
    /// let status = try engine.meterStatus(user: guest.id, meter: "api_minutes", now: now)
    /// // status.used, status.allowance, status.remaining
    /// ```
    public func meterStatus(user userID: String, meter: String, now: Date) throws -> MeterStatus {
        try TextRule.check(userID, what: "the user id")
        let definition = try requireMeter(meter)
        return try store.read { transaction in
            let user = try transaction.requireUser(userID)
            return try transaction.meterStatus(of: user, meter: definition, profile: profile, now: now)
        }
    }

    /// One use of a meter inside the caller's transaction, in this order:
    /// - a `key` already recorded for this user and meter records nothing
    ///   and reports a duplicate (allowed, with the status now), or throws
    ///   `idempotency_key_reused` when it was recorded with another amount;
    /// - a use that does not fit (`MeterStatus.admits`) is, with `overage`
    ///   `.refuse`, refused whole and writes nothing at all, so its key is
    ///   not taken; with `.allow` it is recorded like any other (and
    ///   reported as `overage`, not allowed), unless the new total is past
    ///   what an amount can hold;
    /// - otherwise the usage is recorded, the user's activity noted, and
    ///   each warning the new total reached that was not yet fired in this
    ///   period fires once: it is returned and appended as a `meter_warning`
    ///   system event.
    /// The user's row is locked before the usage is read, so concurrent
    /// uses are decided one at a time and none passes the allowance through
    /// the gate.
    private func use(
        _ amount: MeterAmount, of meter: Meter, user userID: String, key: String?, overage: MeterOverage, now: Date,
        in transaction: any StoreTransaction
    ) throws -> MeterUseResult {
        // The user's row is locked before its facts are read (PostgreSQL: in the same round trip).
        guard
            let (user, facts) = try transaction.userAndMeterFacts(
                of: userID, locking: true, meter: meter, since: meter.reset.periodStart(containing: now), at: now)
        else { throw GuestMode.missingUser(userID) }
        if let key, let recorded = try transaction.meterUseAmount(of: userID, meter: meter.name, key: key) {
            // Stripe's rule: a retry repeats the request; another amount under
            // the same key is a client bug, refused before anything is written.
            guard recorded == amount else {
                throw GuestModeError(
                    .idempotencyKeyReused,
                    "idempotency key '\(key)' of user '\(userID)' was already used for \(recorded) of meter '\(meter.name)', not \(amount); keys identify one use"
                )
            }
            let status = try transaction.meterStatus(of: user, meter: meter, facts: facts, profile: profile, now: now)
            return MeterUseResult(isRecorded: false, isDuplicate: true, isAllowed: true, status: status, warnings: [])
        }
        let before = try transaction.meterStatus(of: user, meter: meter, facts: facts, profile: profile, now: now)
        let fits = before.admits(amount)
        guard let total = before.used.adding(amount), fits || overage == .allow else {
            return MeterUseResult(isRecorded: false, isDuplicate: false, isAllowed: false, status: before, warnings: [])
        }
        // The kept grant draws are read before the use: recording it deletes them (the store's trigger), and
        // they are written back one use further on.
        let grants = facts.grants
        let kept = grants.isEmpty ? nil : try transaction.meterGrantDraws(of: userID, meter: meter.name)
        try transaction.appendMeterUse(of: userID, meter: meter.name, amount: amount, at: now, key: key)
        try transaction.keepGrantDraws(
            of: user, meter: meter, grants: grants, kept: kept, use: MeterUse(amount: amount, at: now), profile: profile
        )
        try transaction.noteActivity(of: userID, profile: profile, now: now)
        // The new use is in this period and the tier has not changed: the
        // total after it needs no second read, unless the user holds grants
        // the use may have drawn on (then read from the draws just kept).
        let after =
            before.granted.isPositive || !before.grants.isEmpty
            ? try transaction.meterStatus(of: user, meter: meter, profile: profile, now: now)
            : profile.meterStatus(meter, tier: before.tier, used: total, now: now)
        var fired: [FiredWarning] = []
        for warning in meter.warningsReached(used: after.used, allowance: after.allowance) {
            guard
                try transaction.addFiredWarning(
                    of: userID, meter: meter.name, periodStart: after.periodStart, percent: warning.percent,
                    level: warning.level, at: now)
            else { continue }
            let firedWarning = FiredWarning(meter: meter.name, percent: warning.percent, level: warning.level)
            fired.append(firedWarning)
            try transaction.appendSystemEvent(
                user: userID, action: FiredWarning.eventAction, properties: firedWarning.eventProperties, at: now)
            try transaction.raiseWebhook(
                .meterWarning, user: userID,
                data: [
                    "meter": .string(meter.name), "percent": .number(warning.percent),
                    "level": .string(warning.level.rawValue),
                    "period_start": after.periodStart.map { .string(Timestamp.format($0)) } ?? .null,
                ], at: now, profile: profile)
        }
        return MeterUseResult(
            isRecorded: true, isDuplicate: false, isAllowed: fits, overage: !fits, status: after, warnings: fired)
    }

    /// Amounts made in code (literals, sums) get the same bounds as parsed ones.
    func requireValid(_ amount: MeterAmount) throws {
        guard amount.isPositive, amount <= .largestRequest else {
            throw GuestModeError(
                .invalidAmount,
                "the amount must be greater than zero and at most \(MeterAmount.largestRequest), not \(amount)")
        }
    }

    func requireMeter(_ name: String) throws -> Meter {
        guard let meter = profile.meter(named: name) else {
            let known = profile.meters.map(\.name)
            throw GuestModeError(
                .unknownMeter,
                "unknown meter '\(name)'; \(known.isEmpty ? "this profile has no meters" : "this profile's meters are: \(known.joined(separator: ", "))")"
            )
        }
        return meter
    }
}

extension StoreTransaction {
    /// The status of `meter` for `user` now: its usage in the current period
    /// against the allowance of the tier in force. The plans, the period's
    /// totals and the meter's grants are read together (`meterFacts`): the
    /// plans that may be in force now, and the whole history of plans only
    /// when the meter's grants need it.
    func meterStatus(of user: User, meter: Meter, profile: Profile, now: Date) throws -> MeterStatus {
        try meterStatus(
            of: user, meter: meter,
            facts: meterFacts(of: user.id, meter: meter, since: meter.reset.periodStart(containing: now), at: now),
            profile: profile, now: now)
    }

    /// The status of `meter` for `user` now from `facts`, read from the start of the period containing `now`.
    func meterStatus(
        of user: User, meter: Meter, facts: MeterFacts, profile: Profile, now: Date
    ) throws
        -> MeterStatus
    {
        try meterStatus(
            of: user, meter: meter, tier: profile.tier(for: user.state, grants: facts.plans, now: now),
            used: facts.used, grants: facts.grants, plans: facts.grants.isEmpty ? nil : facts.plans, profile: profile,
            now: now)
    }

    /// Where `user` stands against `meter` now under `level`, the tier in
    /// force: read once by a caller that asks about several meters.
    func meterStatus(
        of user: User, meter: Meter, tier level: TierLevel, profile: Profile, now: Date
    ) throws
        -> MeterStatus
    {
        try meterStatus(
            of: user, meter: meter, tier: level,
            used: try meterUsage(of: user.id, meter: meter, since: meter.reset.periodStart(containing: now)),
            grants: try meterGrants(of: user.id, meter: meter.name), plans: nil, profile: profile, now: now)
    }

    /// The status from what was read: `plans`, every plan grant the user ever held, when the caller has
    /// them, else they are read if a grant needs them (its draws depend on the tier at each use).
    func meterStatus(
        of user: User, meter: Meter, tier level: TierLevel, used: MeterAmount, grants: [MeterGrantRow],
        plans: [PlanGrant]?, profile: Profile, now: Date
    ) throws -> MeterStatus {
        guard !grants.isEmpty else { return profile.meterStatus(meter, tier: level, used: used, now: now) }
        let ledger = try grantLedger(
            of: user, meter: meter, grants: grants, plans: try plans ?? planGrants(of: user.id), profile: profile,
            now: now)
        return profile.meterStatus(
            meter, tier: level, used: used,
            grants: grants.sorted(by: MeterGrantRow.drawsBefore).map { ledger.standing(of: $0, now: now) },
            drawnInPeriod: ledger.drawnInPeriod, now: now)
    }

    /// How the user's usage since its first grant was spread over its
    /// grants of `meter`, each use under the tier the user had then: the
    /// kept draws (`MeterGrantDrawsRow`) when they were made from the same
    /// inputs and cover no use later than `now`, else the replay of the
    /// ledger.
    func grantLedger(
        of user: User, meter: Meter, grants: [MeterGrantRow], plans: [PlanGrant], profile: Profile, now: Date
    ) throws
        -> MeterGrantLedger
    {
        if let kept = try meterGrantDraws(of: user.id, meter: meter.name),
            kept.inputs == grantDrawInputs(of: user, meter: meter, grants: grants, plans: plans, profile: profile),
            let ledger = kept.ledger(at: now, reset: meter.reset)
        {
            return ledger
        }
        return try replayGrantLedger(
            of: user, meter: meter, grants: grants, plans: plans, profile: profile, until: now,
            periodTime: { _ in now }
        ).ledger
    }
}
