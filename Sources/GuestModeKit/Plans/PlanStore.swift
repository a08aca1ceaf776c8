import Foundation

/// Granting and revoking plans; reading grants.
///
/// Each method is one whole use case in one transaction and returns the
/// user with every grant it ever held, oldest first, as that transaction
/// left them; whether a grant is in force is decided by the engine's pure
/// policy (`PlanGrant.status`, `Profile.tier(for:grants:now:)`), never by the
/// store. A missing user is reported as `.notFound` with code
/// `user_not_found`.
public protocol PlanStore: Sendable {
    /// Adds a grant. A trial (a grant with `trialEndsAt`) is granted once
    /// per user and plan: a second one is refused as a conflict with code
    /// `trial_already_used`, changing nothing. Queues a backup when the
    /// profile backs up on change.
    func grantPlan(_ grant: PlanGrant, to userID: String, profile: Profile, now: Date) throws -> UserPlans

    /// Marks every grant of `plan` not yet revoked as revoked at `now`.
    /// Refuses with `.notFound` code `plan_not_found` when there is none.
    /// Queues a backup when the profile backs up on change.
    func revokePlan(_ plan: String, of userID: String, profile: Profile, now: Date) throws -> UserPlans

    /// The user and its grants, read together.
    func plans(of userID: String) throws -> UserPlans
}

/// A user with every plan grant it ever held, oldest first.
public struct UserPlans: Sendable, Equatable {
    public var user: User
    public var grants: [PlanGrant]

    public init(user: User, grants: [PlanGrant]) {
        self.user = user
        self.grants = grants
    }
}
