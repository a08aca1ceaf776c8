import Foundation
import GRDB

public enum PlanState: String, Codable, Sendable {
    case active, trial, expired, revoked
}

public struct PlanStatus: Codable, Sendable, Equatable {
    public var plan: String
    public var state: PlanState
    public var tier: TierLevel
    public var grantedAt: Date
    /// When a trial or a fixed-term plan ends; nil for an open-ended plan.
    public var endsAt: Date?
    public var revokedAt: Date?

    public var isInForce: Bool { state == .active || state == .trial }
}

extension GuestMode {
    /// Grants a plan: open-ended, as a trial ending after `trial`, or until
    /// `until`. A plan granted to a guest belongs to the user id, so it
    /// survives linking an identity.
    public func grantPlan(
        user userID: String, plan planName: String, trial: TimeSpan?, until: Date?, now: Date
    ) throws -> PlanStatus {
        guard let plan = profile.plan(named: planName) else {
            throw GuestModeError.usage(
                "no plan '\(planName)' in profile \(profile.name); plans: \(profile.plans.map(\.name).joined(separator: ", "))",
                code: "unknown_plan")
        }
        if trial != nil && until != nil {
            throw GuestModeError.usage("give either --trial or --until, not both")
        }
        if let until, until <= now {
            throw GuestModeError.usage("--until \(Timestamp.format(until)) is not after now (\(Timestamp.format(now)))")
        }
        let trialEnd = trial.map { $0.added(to: now) }
        try store.write { db in
            _ = try store.requireUser(userID, db)
            if trial != nil, let used = try String.fetchOne(
                db, sql: "SELECT granted_at FROM plans WHERE user_id = ? AND plan = ? AND trial_ends_at IS NOT NULL",
                arguments: [userID, plan.name])
            {
                throw GuestModeError.conflict(
                    "user '\(userID)' already had a trial of \(plan.name) (granted \(used)); a trial is granted once",
                    code: "trial_already_used")
            }
            try db.execute(
                sql: "INSERT INTO plans (user_id, plan, granted_at, trial_ends_at, ends_at) VALUES (?, ?, ?, ?, ?)",
                arguments: [
                    userID, plan.name, Timestamp.format(now), trialEnd.map(Timestamp.format), until.map(Timestamp.format),
                ])
            try store.noteChange(of: userID, profile: profile, now: now, db)
        }
        return try plans(of: userID, now: now).first { $0.plan == plan.name }!
    }

    /// Revokes every grant of the plan that is still in force.
    public func revokePlan(user userID: String, plan planName: String, now: Date) throws -> PlanStatus {
        let nowText = Timestamp.format(now)
        try store.write { db in
            _ = try store.requireUser(userID, db)
            try db.execute(
                sql: "UPDATE plans SET revoked_at = ? WHERE user_id = ? AND plan = ? AND revoked_at IS NULL",
                arguments: [nowText, userID, planName])
            if db.changesCount == 0 {
                throw GuestModeError.notFound("user '\(userID)' holds no plan '\(planName)' to revoke", code: "plan_not_found")
            }
            try store.noteChange(of: userID, profile: profile, now: now, db)
        }
        return try plans(of: userID, now: now).first { $0.plan == planName }!
    }

    /// One status per plan the user ever held: the grant in force if any,
    /// else the latest.
    public func plans(of userID: String, now: Date) throws -> [PlanStatus] {
        let grants = try store.read { db in
            _ = try store.requireUser(userID, db)
            return try store.planGrants(of: userID, db)
        }
        return profile.planStatuses(of: grants, now: now)
    }

    /// The tier whose caps and allowances apply now: the highest of the
    /// user's state (guest or account) and any plan in force.
    public func tier(of userID: String, now: Date) throws -> TierLevel {
        try store.read { db in try store.tier(of: try store.requireUser(userID, db), profile: profile, now: now, db) }
    }
}
