import Foundation
import GuestModeKit

// Pending: replaced by PostgresStore+PlanStore.swift when the area is ported; never shipped.
extension PostgresStore: PlanStore {
    public func grantPlan(_ grant: PlanGrant, to userID: String, profile: Profile, now: Date) throws -> UserPlans {
        throw PostgresStore.pending("PlanStore")
    }

    public func revokePlan(_ plan: String, of userID: String, profile: Profile, now: Date) throws -> UserPlans {
        throw PostgresStore.pending("PlanStore")
    }

    public func plans(of userID: String) throws -> UserPlans {
        throw PostgresStore.pending("PlanStore")
    }
}
