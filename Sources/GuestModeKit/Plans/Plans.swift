import Foundation

/// Where a plan grant stands.
public enum PlanState: String, Codable, Sendable {
    case active, trial, expired, revoked
}

/// One plan a user holds or held.
public struct PlanStatus: Codable, Sendable, Equatable {
    /// The plan's name.
    public var plan: String
    /// Where the grant stands now.
    public var state: PlanState
    /// The tier the plan lifts its holder to.
    public var tier: TierLevel
    /// When the plan was granted.
    public var grantedAt: Date
    /// When a trial or a fixed-term plan ends; nil for an open-ended plan.
    public var endsAt: Date?
    /// When the plan was revoked; nil unless it was.
    public var revokedAt: Date?
    /// Who granted the grant shown: `app_store`, `revenuecat` or `import`
    /// (a store's purchase, see `GuestMode.applyStorePlanChange`); nil for
    /// `plan grant`.
    public var source: String?
    /// The store's transaction (or event) that made the grant; nil when `source` is.
    public var sourceID: String?

    package init(
        plan: String, state: PlanState, tier: TierLevel, grantedAt: Date, endsAt: Date?, revokedAt: Date?,
        source: String? = nil, sourceID: String? = nil
    ) {
        self.plan = plan
        self.state = state
        self.tier = tier
        self.grantedAt = grantedAt
        self.endsAt = endsAt
        self.revokedAt = revokedAt
        self.source = source
        self.sourceID = sourceID
    }

    /// True while the plan lifts the user's tier (active or in trial).
    public var isInForce: Bool { state == .active || state == .trial }
}

extension GuestMode {
    /// Grants a plan: open-ended, as a trial ending after `trial`, or until
    /// `until`. A plan granted to a guest belongs to the user id, so it
    /// survives linking an identity.
    ///
    /// ```swift
    /// let status = try engine.grantPlan(
    ///     user: guest.id, plan: "premium", trial: TimeSpan(amount: 7, unit: .days), until: nil, now: now)
    /// // status.state == .trial
    /// ```
    public func grantPlan(
        user userID: String, plan planName: String, trial: TimeSpan?, until: Date?, now: Date
    ) throws -> PlanStatus {
        try TextRule.check(["the user id": userID, "the plan": planName])
        guard let plan = profile.plan(named: planName) else {
            throw GuestModeError(
                .unknownPlan,
                "no plan '\(planName)' in profile \(profile.name); plans: \(profile.plans.map(\.name).joined(separator: ", "))"
            )
        }
        if trial != nil && until != nil {
            throw GuestModeError(
                .conflictingPlanTerms, "a plan is granted either as a trial or until a time, not both")
        }
        if let trial, trial.isZero || trial.components.contains(where: { $0.amount < 0 }) {
            throw GuestModeError(
                .badDuration, "a trial of '\(trial)' is not positive; give a positive duration (e.g. 7d, P1M)")
        }
        if let until, until <= now {
            throw GuestModeError(
                .endNotAfterNow,
                "the plan's end \(Timestamp.format(until)) is not after now (\(Timestamp.format(now))); give a later time"
            )
        }
        let grant = PlanGrant(
            plan: plan.name, grantedAt: now, trialEndsAt: trial.map { $0.added(to: now) }, endsAt: until)
        let grants = try store.write { transaction in
            _ = try transaction.requireUser(userID, locking: true)
            // A trial is granted once per user and plan, whatever became of it.
            if grant.trialEndsAt != nil,
                let used = try transaction.planGrants(of: userID).first(where: {
                    $0.plan == grant.plan && $0.trialEndsAt != nil
                })
            {
                throw GuestModeError(
                    .trialAlreadyUsed,
                    "user '\(userID)' already had a trial of \(grant.plan) (granted \(Timestamp.format(used.grantedAt))); a trial is granted once"
                )
            }
            try transaction.addPlanGrant(grant, to: userID)
            try transaction.noteChange(of: userID, profile: profile, now: now)
            try transaction.raisePlanWebhooks(of: grant, user: userID, profile: profile, now: now)
            return try transaction.planGrants(of: userID)
        }
        return try status(of: plan.name, of: userID, in: grants, now: now)
    }

    /// Revokes every grant of the plan that is not revoked yet; refused as
    /// `plan_not_found` when there is none.
    public func revokePlan(user userID: String, plan planName: String, now: Date) throws -> PlanStatus {
        try TextRule.check(["the user id": userID, "the plan": planName])
        let grants = try store.write { transaction in
            _ = try transaction.requireUser(userID, locking: true)
            guard try transaction.revokePlanGrants(of: userID, plan: planName, at: now) > 0 else {
                throw GuestModeError(
                    .planNotFound, "user '\(userID)' holds no plan '\(planName)' to revoke")
            }
            try transaction.noteChange(of: userID, profile: profile, now: now)
            // A revoked plan no longer expires.
            _ = try transaction.cancelScheduledWebhooks(
                user: userID, type: WebhookEventType.planExpired.rawValue, scope: planName, after: now)
            try transaction.raiseWebhook(
                .planRevoked, user: userID, data: ["plan": .string(planName)], at: now, profile: profile,
                scope: planName)
            return try transaction.planGrants(of: userID)
        }
        return try status(of: planName, of: userID, in: grants, now: now)
    }

    /// One status per plan the user ever held: the grant in force if any,
    /// else the latest.
    public func plans(user userID: String, now: Date) throws -> [PlanStatus] {
        try TextRule.check(userID, what: "the user id")
        return try store.read { transaction in
            _ = try transaction.requireUser(userID)
            return try GuestMode.annotated(
                profile.planStatuses(of: try transaction.planGrants(of: userID), now: now), of: userID,
                in: transaction)
        }
    }

    /// The tier whose caps and allowances apply now: the highest of the
    /// user's state (guest or account) and any plan in force.
    ///
    /// ```swift
    /// let tier = try engine.tier(user: guest.id, now: now)  // .guest, .account or .premium
    /// ```
    public func tier(user userID: String, now: Date) throws -> TierLevel {
        try TextRule.check(userID, what: "the user id")
        return try store.read { transaction in
            try transaction.tier(of: try transaction.requireUser(userID), profile: profile, now: now)
        }
    }

    private func status(
        of planName: String, of userID: String, in grants: [PlanGrant], now: Date
    ) throws
        -> PlanStatus
    {
        guard let status = profile.planStatuses(of: grants, now: now).first(where: { $0.plan == planName }) else {
            throw GuestModeError(
                .internalFailure,
                "the store returned no grant of '\(planName)' for user '\(userID)'")
        }
        return status
    }
}

extension StoreTransaction {
    /// `plan.granted` now and, for a grant that ends, `plan.expired`
    /// scheduled at its end: the outbox does not send an event before its
    /// time, and a revocation cancels it. The expiry is raised with the grant
    /// because nothing is written when a plan runs out.
    func raisePlanWebhooks(of grant: PlanGrant, user userID: String, profile: Profile, now: Date) throws {
        let ends = grant.trialEndsAt ?? grant.endsAt
        var data: [String: JSONValue] = ["plan": .string(grant.plan), "trial": .bool(grant.trialEndsAt != nil)]
        data["ends_at"] = ends.map { .string(Timestamp.format($0)) } ?? .null
        try raiseWebhook(.planGranted, user: userID, data: data, at: now, profile: profile, scope: grant.plan)
        if let ends {
            try raiseWebhook(
                .planExpired, user: userID,
                data: ["plan": .string(grant.plan), "trial": .bool(grant.trialEndsAt != nil)], at: ends,
                profile: profile, scope: grant.plan)
        }
    }
}
