import Foundation

// Pure grant rules: when a grant is in force, the order usage draws on
// grants, and what each grant has left. The use cases (MeterGrants.swift)
// apply them inside the store's transaction.

extension MeterGrantRow {
    /// When the grant stops giving: its expiry or its revocation, whichever
    /// comes first; nil while it has neither.
    var end: Date? {
        switch (expiresAt, revokedAt) {
        case (let expiry?, let revocation?): min(expiry, revocation)
        case (let expiry?, nil): expiry
        case (nil, let revocation?): revocation
        case (nil, nil): nil
        }
    }

    /// Whether usage at `time` may draw on the grant: granted by then, not
    /// yet expired, and not revoked before then. Usage recorded at the very
    /// time of a revocation keeps what it drew: a revocation never takes
    /// back what was spent, even within the same millisecond.
    func isInForce(at time: Date) -> Bool {
        grantedAt <= time && (expiresAt.map { time < $0 } ?? true) && (revokedAt.map { time <= $0 } ?? true)
    }

    /// The order usage draws on grants: the one that stops giving soonest
    /// first, so as little as possible lapses; grants that never expire
    /// last; then the oldest.
    static func drawsBefore(_ lhs: MeterGrantRow, _ rhs: MeterGrantRow) -> Bool {
        switch (lhs.end, rhs.end) {
        case (let left?, let right?) where left != right: return left < right
        case (.some, nil): return true
        case (nil, .some): return false
        default: return (lhs.grantedAt, lhs.id) < (rhs.grantedAt, rhs.id)
        }
    }
}

/// How a user's usage of one meter was spread over its grants: each use, in
/// the order it was recorded, draws on the grants in force at its time
/// (`MeterGrantRow.drawsBefore`) and what they cannot cover falls to the
/// tier's allowance. Usage while the tier made the meter unlimited draws on
/// nothing: a grant is moot then and keeps its amount for later.
struct MeterGrantLedger {
    /// What each grant gave, by id.
    private(set) var drawn: [Int64: MeterAmount] = [:]
    /// What the grants gave to usage in the current period.
    private(set) var drawnInPeriod = MeterAmount.zero

    init(
        grants: [MeterGrantRow], uses: [MeterUse], periodStart: Date?, isUnlimited: (Date) -> Bool
    ) {
        let ordered = grants.sorted(by: MeterGrantRow.drawsBefore)
        for use in uses { record(use, ordered: ordered, periodStart: periodStart, isUnlimited: isUnlimited(use.at)) }
    }

    /// The ledger as kept (`MeterGrantDraws`): what each grant gave, and
    /// what they gave in the current period.
    init(drawn: [Int64: MeterAmount], drawnInPeriod: MeterAmount) {
        self.drawn = drawn
        self.drawnInPeriod = drawnInPeriod
    }

    /// Spreads one more use, later than (or as late as) every one before
    /// it, over `ordered` (the grants in `drawsBefore` order): the one step
    /// of the replay, shared by the replay and the kept draws, so both give
    /// the same amounts.
    mutating func record(_ use: MeterUse, ordered: [MeterGrantRow], periodStart: Date?, isUnlimited: Bool) {
        guard !isUnlimited else { return }
        var left = use.amount
        for grant in ordered where left.isPositive && grant.isInForce(at: use.at) {
            let available = grant.amount.remaining(after: drawn[grant.id] ?? .zero)
            let taken = min(available, left)
            guard taken.isPositive else { continue }
            drawn[grant.id] = (drawn[grant.id] ?? .zero).adding(taken) ?? .largest
            left = left.remaining(after: taken)
            if periodStart.map({ use.at >= $0 }) ?? true {
                drawnInPeriod = drawnInPeriod.adding(taken) ?? .largest
            }
        }
    }

    /// The grant as it stands at `now`. Stored times are kept to the
    /// millisecond, rounded (`Timestamp`): `now` is compared at that
    /// precision, so a grant given now is in force now.
    func standing(of grant: MeterGrantRow, now exactNow: Date) -> MeterGrant {
        let now = Timestamp.parse(Timestamp.format(exactNow)) ?? exactNow
        let used = drawn[grant.id] ?? .zero
        let left = grant.amount.remaining(after: used)
        let state: MeterGrantState =
            if let revoked = grant.revokedAt, revoked <= now, grant.expiresAt.map({ revoked < $0 }) ?? true {
                .revoked
            } else if let expiry = grant.expiresAt, expiry <= now {
                .expired
            } else if grant.grantedAt > now {
                .pending
            } else if left.isZero {
                .usedUp
            } else {
                .active
            }
        return MeterGrant(
            id: grant.id, userID: grant.userID, meter: grant.meter, amount: grant.amount, used: used,
            remaining: state == .active ? left : .zero, grantedAt: grant.grantedAt, expiresAt: grant.expiresAt,
            revokedAt: grant.revokedAt, reason: grant.reason, state: state)
    }
}

extension Profile {
    /// Where `used` (this period's usage) stands for a user of tier `level`
    /// holding `grants`, of which `drawnInPeriod` was spent this period:
    /// the allowance is the tier's plus what the grants gave this period plus
    /// what they still hold, and what remains is what the tier has left plus
    /// what the grants hold. An unlimited tier makes grants moot.
    func meterStatus(
        _ meter: Meter, tier level: TierLevel, used: MeterAmount, grants: [MeterGrant], drawnInPeriod: MeterAmount,
        now: Date
    ) -> MeterStatus {
        var base = meterStatus(meter, tier: level, used: used, now: now)
        let active = grants.filter { $0.state == .active }
        guard let tierAllowance = base.allowance else {
            base.grants = active
            return base
        }
        let held = MeterAmount.sum(active.map(\.remaining)) ?? .largest
        let granted = drawnInPeriod.adding(held) ?? .largest
        guard granted.isPositive else { return base }
        let allowance = tierAllowance.adding(granted) ?? .largest
        let tierUsed = used.remaining(after: drawnInPeriod)
        let remaining = tierAllowance.remaining(after: tierUsed).adding(held) ?? .largest
        return MeterStatus(
            meter: meter.name, unit: meter.unit, tier: level, used: used, allowance: allowance, remaining: remaining,
            percentUsed: Meter.percent(used, of: allowance),
            level: remaining.isZero
                ? .exhausted : meter.warningsReached(used: used, allowance: allowance).last?.level ?? .none,
            periodStart: base.periodStart, granted: granted, grants: active)
    }
}
