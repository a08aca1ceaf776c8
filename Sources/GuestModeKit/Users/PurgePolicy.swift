import Foundation

/// Which inactive guests a purge removes. Only anonymous users last seen
/// before `cutoff` are candidates. Of those, a guest holding a plan in force
/// is always kept, since it paid (or is in a trial it was promised); a guest
/// owning records is kept unless `includesUsersWithRecords`, since its data
/// may still be adopted by an account. Everyone else is deleted.
///
/// A pure function of its inputs, applied by the engine to what the store
/// reads; the store only gathers the facts and deletes.
package struct PurgePolicy: Sendable {
    package var profile: Profile
    /// Candidates were last seen strictly before this time.
    package var cutoff: Date
    package var includesUsersWithRecords: Bool
    /// The time plans are judged at.
    package var now: Date

    package init(profile: Profile, cutoff: Date, includesUsersWithRecords: Bool, now: Date) {
        self.profile = profile
        self.cutoff = cutoff
        self.includesUsersWithRecords = includesUsersWithRecords
        self.now = now
    }

    package enum Decision: Sendable, Equatable {
        case delete
        case keep(KeepReason)
    }

    package enum KeepReason: String, Sendable, Equatable {
        case isNotAnonymous = "not_anonymous"
        case isRecentlyActive = "recently_active"
        case holdsPlanInForce = "holds_plan_in_force"
        case ownsRecords = "owns_records"
    }

    /// The state of every candidate: only guests are ever purged.
    package static let candidateState = UserState.anonymous

    /// What to do with one user, given how many records it owns and every
    /// plan grant it ever held.
    package func decision(state: UserState, lastSeenAt: Date, records: Int, grants: [PlanGrant]) -> Decision {
        if state != Self.candidateState { return .keep(.isNotAnonymous) }
        if lastSeenAt >= cutoff { return .keep(.isRecentlyActive) }
        if grants.contains(where: { $0.status(in: profile, now: now).isInForce }) { return .keep(.holdsPlanInForce) }
        if records > 0 && !includesUsersWithRecords { return .keep(.ownsRecords) }
        return .delete
    }
}
