import Foundation
import GuestModeKit

/// Grants and revocations lock the user's row first: "a trial is granted
/// once" is a decision about the user, and two machines granting the same
/// trial at once must take turns so the second sees the first.
extension PostgresStore: PlanStore {
    public func grantPlan(_ grant: PlanGrant, to userID: String, profile: Profile, now: Date) throws -> UserPlans {
        try write { connection in
            let user = try requireUser(userID, locking: true, connection)
            if grant.trialEndsAt != nil,
                let used = try connection.execute(
                    """
                    SELECT granted_at FROM plans WHERE user_id = $1 AND plan = $2 AND trial_ends_at IS NOT NULL
                    ORDER BY granted_at, id LIMIT 1
                    """,
                    [PostgresValue(userID), PostgresValue(grant.plan)]
                ).first?.string("granted_at")
            {
                throw GuestModeError(
                    .conflict, code: .trialAlreadyUsed,
                    "user '\(userID)' already had a trial of \(grant.plan) (granted \(used)); a trial is granted once")
            }
            try connection.execute(
                """
                INSERT INTO plans (user_id, plan, granted_at, trial_ends_at, ends_at, revoked_at)
                VALUES ($1, $2, $3, $4, $5, $6)
                """,
                [
                    PostgresValue(userID), PostgresValue(grant.plan), PostgresValue(grant.grantedAt),
                    grant.trialEndsAt.map { PostgresValue($0) }, grant.endsAt.map { PostgresValue($0) },
                    grant.revokedAt.map { PostgresValue($0) },
                ])
            try noteChange(of: userID, profile: profile, now: now, connection)
            return UserPlans(user: user, grants: try planGrants(of: userID, connection))
        }
    }

    public func revokePlan(_ plan: String, of userID: String, profile: Profile, now: Date) throws -> UserPlans {
        try write { connection in
            let user = try requireUser(userID, locking: true, connection)
            let revoked = try connection.execute(
                "UPDATE plans SET revoked_at = $1 WHERE user_id = $2 AND plan = $3 AND revoked_at IS NULL",
                [PostgresValue(now), PostgresValue(userID), PostgresValue(plan)]
            ).changes
            if revoked == 0 {
                throw GuestModeError(
                    .notFound, code: .planNotFound, "user '\(userID)' holds no plan '\(plan)' to revoke")
            }
            try noteChange(of: userID, profile: profile, now: now, connection)
            return UserPlans(user: user, grants: try planGrants(of: userID, connection))
        }
    }

    public func plans(of userID: String) throws -> UserPlans {
        try read { connection in
            UserPlans(user: try requireUser(userID, connection), grants: try planGrants(of: userID, connection))
        }
    }
}
