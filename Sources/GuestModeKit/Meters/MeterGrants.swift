import Foundation

/// Where a meter grant stands.
public enum MeterGrantState: String, Codable, Sendable, CaseIterable {
    /// In force with something left: usage draws on it.
    case active
    /// Granted to start later than now.
    case pending
    /// In force, but usage has drawn all of it.
    case usedUp = "used_up"
    /// Past its expiry: what was left of it lapsed.
    case expired
    /// Revoked before its expiry: what was left of it lapsed then.
    case revoked
}

/// When a grant expires.
public enum MeterGrantExpiry: Sendable, Equatable {
    /// Never: the grant lasts until used up or revoked.
    case never
    /// This long after it is granted.
    case after(TimeSpan)
    /// At this time.
    case at(Date)
}

/// Extra allowance on one meter, given to one user on top of the tier's.
public struct MeterGrant: Codable, Sendable, Equatable {
    /// The grant's id, for revoking it.
    public var id: Int64
    /// Whose grant it is.
    public var userID: String
    /// The meter it adds to.
    public var meter: String
    /// How much it gives.
    public var amount: MeterAmount
    /// How much usage drew on it so far.
    public var used: MeterAmount
    /// How much it still gives; zero once used up, expired or revoked.
    public var remaining: MeterAmount
    /// When it was granted.
    public var grantedAt: Date
    /// When what is left of it lapses; nil: never.
    public var expiresAt: Date?
    /// When it was revoked; nil unless it was.
    public var revokedAt: Date?
    /// Why it was given, as told.
    public var reason: String?
    /// Where it stands now.
    public var state: MeterGrantState

    package init(
        id: Int64, userID: String, meter: String, amount: MeterAmount, used: MeterAmount, remaining: MeterAmount,
        grantedAt: Date, expiresAt: Date?, revokedAt: Date?, reason: String?, state: MeterGrantState
    ) {
        self.id = id
        self.userID = userID
        self.meter = meter
        self.amount = amount
        self.used = used
        self.remaining = remaining
        self.grantedAt = grantedAt
        self.expiresAt = expiresAt
        self.revokedAt = revokedAt
        self.reason = reason
        self.state = state
    }
}

/// What granting or revoking did.
public struct MeterGrantResult: Codable, Sendable, Equatable {
    /// False when nothing changed: the idempotency key was seen before with
    /// the same grant, or the grant was already revoked.
    public var isChanged: Bool
    /// The grant now.
    public var grant: MeterGrant
    /// The meter now, grants included.
    public var status: MeterStatus

    package init(isChanged: Bool, grant: MeterGrant, status: MeterStatus) {
        self.isChanged = isChanged
        self.grant = grant
        self.status = status
    }
}

extension GuestMode {
    /// Gives a user `amount` of `meter` on top of the tier's allowance,
    /// lapsing at `expiry`. Usage draws on the grant that expires soonest
    /// first, then on the tier's allowance. A repeated `key` with the same
    /// grant changes nothing and answers as the first time; with another
    /// meter, amount, expiry or reason it throws `idempotency_key_reused`.
    ///
    /// ```swift
    /// let bonus = try engine.grantMeter(
    ///     user: guest.id, meter: "api_minutes", amount: 30, expiry: .after(TimeSpan(amount: 30, unit: .days)),
    ///     reason: "referral", key: "referral-42", now: now)
    /// // bonus.status.allowance == 90 for a guest with 60 free minutes
    /// ```
    public func grantMeter(
        user userID: String, meter: String, amount: MeterAmount, expiry: MeterGrantExpiry, reason: String?,
        key: String?, now: Date
    ) throws -> MeterGrantResult {
        try TextRule.check([
            "the user id": userID, "the meter": meter, "the reason": reason, "the idempotency key": key,
        ])
        let definition = try requireMeter(meter)
        try requireValid(amount)
        let expiresAt = try expiry.date(grantedAt: now)
        return try store.write { transaction in
            let user = try transaction.requireUser(userID, locking: true)
            if let key, let stored = try transaction.meterGrant(of: userID, key: key) {
                // The key is checked before anything is written, so a refused
                // retry changes nothing; a matching one answers as the first.
                guard stored.meter == meter, stored.amount == amount, stored.reason == reason,
                    expiry.matches(stored)
                else {
                    throw GuestModeError(
                        .idempotencyKeyReused,
                        "idempotency key '\(key)' of user '\(userID)' was already used for grant \(stored.id) (\(stored.amount) of meter '\(stored.meter)'), which differs from this one; keys identify one grant"
                    )
                }
                return try result(
                    of: stored.id, user: user, meter: definition, isChanged: false, now: now, in: transaction)
            }
            let id = try transaction.addMeterGrant(
                MeterGrantRow(
                    id: 0, userID: userID, meter: meter, amount: amount, grantedAt: now, expiresAt: expiresAt,
                    revokedAt: nil, reason: reason, idempotencyKey: key))
            try transaction.noteChange(of: userID, profile: profile, now: now)
            return try result(of: id, user: user, meter: definition, isChanged: true, now: now, in: transaction)
        }
    }

    /// The user's grants (of `meter` only, when given), oldest first, each
    /// as it stands now.
    ///
    /// ```swift
    /// let grants = try engine.meterGrants(user: guest.id, meter: "api_minutes", now: now)
    /// // grants.first?.remaining
    /// ```
    public func meterGrants(user userID: String, meter: String?, now: Date) throws -> [MeterGrant] {
        try TextRule.check(["the user id": userID, "the meter": meter])
        let meters = try meter.map { [try requireMeter($0)] } ?? profile.meters
        return try store.read { transaction in
            let user = try transaction.requireUser(userID)
            // Read once, by the first meter with grants: a user without any needs no plans.
            var plans: [PlanGrant]?
            var grants: [MeterGrant] = []
            for meter in meters {
                let rows = try transaction.meterGrants(of: userID, meter: meter.name)
                guard !rows.isEmpty else { continue }
                let held = try plans ?? transaction.planGrants(of: userID)
                plans = held
                let ledger = try transaction.grantLedger(
                    of: user, meter: meter, grants: rows, plans: held, profile: profile, now: now)
                grants += rows.map { ledger.standing(of: $0, now: now) }
            }
            return grants.sorted { ($0.grantedAt, $0.id) < ($1.grantedAt, $1.id) }
        }
    }

    /// Revokes a grant now: what is left of it lapses; what usage already
    /// drew on it stays drawn. Revoking a grant already revoked changes
    /// nothing (`isChanged` false).
    ///
    /// ```swift
    /// let revoked = try engine.revokeMeterGrant(id: bonus.grant.id, now: now)
    /// // revoked.grant.state == .revoked
    /// ```
    public func revokeMeterGrant(id: Int64, now: Date) throws -> MeterGrantResult {
        let notFound = GuestModeError(.grantNotFound, "no meter grant \(id) in this store")
        guard let owner = try store.read({ try $0.meterGrant(id: id) })?.userID else { throw notFound }
        return try store.write { transaction in
            let user = try transaction.requireUser(owner, locking: true)
            guard let grant = try transaction.meterGrant(id: id), grant.userID == owner else { throw notFound }
            let meter = try requireMeter(grant.meter)
            let isChanged = try transaction.revokeMeterGrant(id: id, at: now)
            if isChanged { try transaction.noteChange(of: owner, profile: profile, now: now) }
            return try result(of: id, user: user, meter: meter, isChanged: isChanged, now: now, in: transaction)
        }
    }

    private func result(
        of id: Int64, user: User, meter: Meter, isChanged: Bool, now: Date, in transaction: any StoreTransaction
    ) throws -> MeterGrantResult {
        let rows = try transaction.meterGrants(of: user.id, meter: meter.name)
        guard let row = rows.first(where: { $0.id == id }) else {
            throw GuestModeError(.grantNotFound, "no meter grant \(id) in this store")
        }
        // A new or revoked grant changes what every use drew: the kept draws are rebuilt with it.
        let plans = try transaction.planGrants(of: user.id)
        if isChanged {
            try transaction.rebuildGrantDraws(of: user, meter: meter, grants: rows, plans: plans, profile: profile)
        }
        let ledger = try transaction.grantLedger(
            of: user, meter: meter, grants: rows, plans: plans, profile: profile, now: now)
        return MeterGrantResult(
            isChanged: isChanged, grant: ledger.standing(of: row, now: now),
            status: try transaction.meterStatus(of: user, meter: meter, profile: profile, now: now))
    }
}

extension MeterGrantExpiry {
    /// The expiry of a grant given at `grantedAt`; it must come after it.
    func date(grantedAt: Date) throws -> Date? {
        let expiry: Date
        switch self {
        case .never: return nil
        case .after(let span):
            guard !span.isZero, !span.components.contains(where: { $0.amount < 0 }) else {
                throw GuestModeError(
                    .badDuration,
                    "a grant's lifetime of '\(span)' is not positive; give a positive duration (e.g. 30d, P1M)")
            }
            expiry = span.added(to: grantedAt)
        case .at(let date): expiry = date
        }
        guard expiry > grantedAt else {
            throw GuestModeError(
                .endNotAfterNow,
                "the grant's expiry \(Timestamp.format(expiry)) is not after now (\(Timestamp.format(grantedAt))); give a later time"
            )
        }
        return expiry
    }

    /// Whether a stored grant was given with this expiry: a lifetime is
    /// compared with the one the grant had when given, so a retry later
    /// with the same request matches.
    func matches(_ grant: MeterGrantRow) -> Bool {
        switch self {
        case .never: grant.expiresAt == nil
        case .after(let span):
            grant.expiresAt.map(Timestamp.format) == Timestamp.format(span.added(to: grant.grantedAt))
        case .at(let date): grant.expiresAt.map(Timestamp.format) == Timestamp.format(date)
        }
    }
}
