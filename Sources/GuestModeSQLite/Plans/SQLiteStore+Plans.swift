import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteStore: PlanStore {
    public func grantPlan(_ grant: PlanGrant, to userID: String, profile: Profile, now: Date) throws -> UserPlans {
        try write { db in
            let user = try requireUser(userID, db)
            if grant.trialEndsAt != nil,
                let used = try String.fetchOne(
                    db,
                    sql: "SELECT granted_at FROM plans WHERE user_id = ? AND plan = ? AND trial_ends_at IS NOT NULL",
                    arguments: [userID, grant.plan])
            {
                throw GuestModeError(
                    .conflict, code: .trialAlreadyUsed,
                    "user '\(userID)' already had a trial of \(grant.plan) (granted \(used)); a trial is granted once")
            }
            try db.execute(
                sql: """
                    INSERT INTO plans (user_id, plan, granted_at, trial_ends_at, ends_at, revoked_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    userID, grant.plan, Timestamp.format(grant.grantedAt), grant.trialEndsAt.map(Timestamp.format),
                    grant.endsAt.map(Timestamp.format), grant.revokedAt.map(Timestamp.format),
                ])
            try noteChange(of: userID, profile: profile, now: now, db)
            return UserPlans(user: user, grants: try planGrants(of: userID, db))
        }
    }

    public func revokePlan(_ plan: String, of userID: String, profile: Profile, now: Date) throws -> UserPlans {
        try write { db in
            let user = try requireUser(userID, db)
            try db.execute(
                sql: "UPDATE plans SET revoked_at = ? WHERE user_id = ? AND plan = ? AND revoked_at IS NULL",
                arguments: [Timestamp.format(now), userID, plan])
            if db.changesCount == 0 {
                throw GuestModeError(
                    .notFound, code: .planNotFound, "user '\(userID)' holds no plan '\(plan)' to revoke")
            }
            try noteChange(of: userID, profile: profile, now: now, db)
            return UserPlans(user: user, grants: try planGrants(of: userID, db))
        }
    }

    public func plans(of userID: String) throws -> UserPlans {
        try read { db in
            UserPlans(user: try requireUser(userID, db), grants: try planGrants(of: userID, db))
        }
    }
}
