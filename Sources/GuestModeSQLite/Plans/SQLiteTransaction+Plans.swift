import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteTransaction {
    func addPlanGrant(_ grant: PlanGrant, to userID: String) throws {
        try db.execute(
            sql: """
                INSERT INTO plans (user_id, plan, granted_at, trial_ends_at, ends_at, revoked_at)
                VALUES (?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                userID, grant.plan, Timestamp.format(grant.grantedAt), grant.trialEndsAt.map(Timestamp.format),
                grant.endsAt.map(Timestamp.format), grant.revokedAt.map(Timestamp.format),
            ])
    }

    func revokePlanGrants(of userID: String, plan: String, at time: Date) throws -> Int {
        try db.execute(
            sql: "UPDATE plans SET revoked_at = ? WHERE user_id = ? AND plan = ? AND revoked_at IS NULL",
            arguments: [Timestamp.format(time), userID, plan])
        return db.changesCount
    }
}
