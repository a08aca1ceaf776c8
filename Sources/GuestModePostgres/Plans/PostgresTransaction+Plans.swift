import Foundation
import GuestModeKit

extension PostgresTransaction {
    func addPlanGrant(_ grant: PlanGrant, to userID: String) throws {
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
    }

    func revokePlanGrants(of userID: String, plan: String, at time: Date) throws -> Int {
        try connection.execute(
            "UPDATE plans SET revoked_at = $1 WHERE user_id = $2 AND plan = $3 AND revoked_at IS NULL",
            [PostgresValue(time), PostgresValue(userID), PostgresValue(plan)]
        ).changes
    }
}
