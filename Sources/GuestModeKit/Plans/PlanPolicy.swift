import Foundation

/// One grant of a plan, as a store keeps it. Whether it is in force is a
/// pure function of the grant and the clock, so every backend agrees.
package struct PlanGrant: Sendable, Equatable {
    package var plan: String
    package var grantedAt: Date
    package var trialEndsAt: Date?
    package var endsAt: Date?
    package var revokedAt: Date?

    package init(plan: String, grantedAt: Date, trialEndsAt: Date? = nil, endsAt: Date? = nil, revokedAt: Date? = nil) {
        self.plan = plan
        self.grantedAt = grantedAt
        self.trialEndsAt = trialEndsAt
        self.endsAt = endsAt
        self.revokedAt = revokedAt
    }

    /// Where the grant stands at `now`: a revocation wins, then a trial's end,
    /// then a fixed term's end.
    package func status(in profile: Profile, now: Date) -> PlanStatus {
        let state: PlanState
        if let revokedAt, revokedAt <= now {
            state = .revoked
        } else if let trialEndsAt {
            state = now < trialEndsAt ? .trial : .expired
        } else if let endsAt, now >= endsAt {
            state = .expired
        } else {
            state = .active
        }
        return PlanStatus(
            plan: plan, state: state, tier: profile.plan(named: plan)?.tier ?? .account,
            grantedAt: grantedAt, endsAt: trialEndsAt ?? endsAt, revokedAt: revokedAt)
    }
}

extension Profile {
    /// The tier whose caps and allowances apply now: the highest of the
    /// user's state (guest or account) and any plan in force.
    package func tier(for state: UserState, grants: [PlanGrant], now: Date) -> TierLevel {
        var level: TierLevel = state == .linked ? .account : .guest
        for grant in grants {
            let status = grant.status(in: self, now: now)
            if status.isInForce && status.tier > level { level = status.tier }
        }
        return level
    }

    /// One status per plan the user ever held: the grant in force if any,
    /// else the latest. `grants` are in the order they were granted.
    package func planStatuses(of grants: [PlanGrant], now: Date) -> [PlanStatus] {
        var byPlan: [String: PlanStatus] = [:]
        var order: [String] = []
        for grant in grants {
            let status = grant.status(in: self, now: now)
            if byPlan[status.plan] == nil { order.append(status.plan) }
            if let current = byPlan[status.plan], current.isInForce, !status.isInForce { continue }
            byPlan[status.plan] = status
        }
        return order.compactMap { byPlan[$0] }
    }
}
