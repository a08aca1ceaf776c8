import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

@Suite struct PurgePolicyTests {
    func policy(includingRecords: Bool = false, now: Date = day(25)) throws -> PurgePolicy {
        let profile = try ProfileLoader.parse(try template("subscriptions"), file: "subscriptions.yaml")
        return PurgePolicy(profile: profile, cutoff: day(15), includesUsersWithRecords: includingRecords, now: now)
    }

    @Test func anIdleGuestWithNothingIsDeleted() throws {
        #expect(try policy().decision(state: .anonymous, lastSeenAt: day(1), records: 0, grants: []) == .delete)
    }

    @Test func onlyAnonymousUsersInactiveSinceBeforeTheCutoffAreCandidates() throws {
        let policy = try policy()
        #expect(policy.decision(state: .anonymous, lastSeenAt: day(14), records: 0, grants: []) == .delete)
        #expect(policy.decision(state: .linked, lastSeenAt: day(1), records: 0, grants: []) == .keep(.isNotAnonymous))
        #expect(
            policy.decision(state: .anonymous, lastSeenAt: day(15), records: 0, grants: []) == .keep(.isRecentlyActive),
            "the cutoff itself is recent enough")
    }

    @Test func usersWithRecordsAreKeptUnlessToldOtherwise() throws {
        #expect(
            try policy().decision(state: .anonymous, lastSeenAt: day(1), records: 3, grants: []) == .keep(.ownsRecords))
        #expect(
            try policy(includingRecords: true).decision(state: .anonymous, lastSeenAt: day(1), records: 3, grants: [])
                == .delete)
    }

    @Test func aPlanInForceAlwaysKeepsTheUser() throws {
        let open = PlanGrant(plan: "premium", grantedAt: day(1))
        let trial = PlanGrant(plan: "premium", grantedAt: day(1), trialEndsAt: day(30))
        for grants in [[open], [trial]] {
            #expect(
                try policy(includingRecords: true).decision(
                    state: .anonymous, lastSeenAt: day(1), records: 2, grants: grants)
                    == .keep(.holdsPlanInForce))
            #expect(
                try policy().decision(state: .anonymous, lastSeenAt: day(1), records: 0, grants: grants)
                    == .keep(.holdsPlanInForce))
        }
    }

    @Test func plansNoLongerInForceDoNotKeepTheUser() throws {
        let grants = [
            PlanGrant(plan: "premium", grantedAt: day(1), trialEndsAt: day(8)),
            PlanGrant(plan: "premium", grantedAt: day(1), endsAt: day(10)),
            PlanGrant(plan: "premium", grantedAt: day(1), revokedAt: day(2)),
        ]
        #expect(try policy().decision(state: .anonymous, lastSeenAt: day(1), records: 0, grants: grants) == .delete)
        // The same grants judged earlier: the trial was still running.
        #expect(
            try policy(now: day(5)).decision(state: .anonymous, lastSeenAt: day(1), records: 0, grants: grants)
                == .keep(.holdsPlanInForce))
    }
}
