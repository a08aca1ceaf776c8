import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

@Suite struct PlanStoreTests {
    @Test(arguments: StoreBackend.allCases)
    func grantsAreKeptInTheOrderGranted(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try store.createUser(newUser("u"), credentials: nil)
        #expect(try store.plans(of: "u") == UserPlans(user: newUser("u"), grants: []))

        let trial = PlanGrant(plan: "premium", grantedAt: day(1), trialEndsAt: day(8))
        let afterTrial = try store.grantPlan(trial, to: "u", profile: profile, now: day(1))
        #expect(afterTrial.grants == [trial])
        #expect(afterTrial.user.id == "u")
        let term = PlanGrant(plan: "premium", grantedAt: day(9), endsAt: day(20))
        let open = PlanGrant(plan: "premium", grantedAt: day(10))
        _ = try store.grantPlan(term, to: "u", profile: profile, now: day(9))
        let held = try store.grantPlan(open, to: "u", profile: profile, now: day(10))
        #expect(held.grants == [trial, term, open])
        #expect(try store.plans(of: "u") == held)
        #expect(profile.tier(for: held.user.state, grants: held.grants, now: day(11)) == .premium)
    }

    @Test(arguments: StoreBackend.allCases)
    func aSecondTrialIsRefusedAndChangesNothing(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try store.createUser(newUser("u"), credentials: nil)
        try store.createUser(newUser("other"), credentials: nil)
        _ = try store.grantPlan(
            PlanGrant(plan: "premium", grantedAt: day(1), trialEndsAt: day(8)), to: "u", profile: profile, now: day(1))
        let before = try store.plans(of: "u")
        expectFailure(.conflict, code: .trialAlreadyUsed) {
            _ = try store.grantPlan(
                PlanGrant(plan: "premium", grantedAt: day(9), trialEndsAt: day(16)), to: "u", profile: profile,
                now: day(9))
        }
        #expect(try store.plans(of: "u") == before)
        // A paid grant after the trial is fine, and another user's trial is its own.
        _ = try store.grantPlan(PlanGrant(plan: "premium", grantedAt: day(9)), to: "u", profile: profile, now: day(9))
        #expect(
            try store.grantPlan(
                PlanGrant(plan: "premium", grantedAt: day(9), trialEndsAt: day(16)), to: "other", profile: profile,
                now: day(9)
            ).grants.count == 1)
    }

    @Test(arguments: StoreBackend.allCases)
    func revokingMarksEveryGrantNotYetRevoked(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try store.createUser(newUser("u"), credentials: nil)
        _ = try store.grantPlan(
            PlanGrant(plan: "premium", grantedAt: day(1), endsAt: day(3)), to: "u", profile: profile, now: day(1))
        _ = try store.grantPlan(PlanGrant(plan: "premium", grantedAt: day(4)), to: "u", profile: profile, now: day(4))
        let revoked = try store.revokePlan("premium", of: "u", profile: profile, now: day(5))
        #expect(revoked.grants.map(\.revokedAt) == [day(5), day(5)])
        #expect(try store.plans(of: "u") == revoked)
        #expect(profile.tier(for: .anonymous, grants: revoked.grants, now: day(5)) == .guest)

        // Nothing left to revoke: not found, and the earlier revocation stands.
        expectFailure(.notFound, code: .planNotFound) {
            _ = try store.revokePlan("premium", of: "u", profile: profile, now: day(6))
        }
        #expect(try store.plans(of: "u") == revoked)
        // A grant after a revocation is a new one.
        let regranted = try store.grantPlan(
            PlanGrant(plan: "premium", grantedAt: day(7)), to: "u", profile: profile, now: day(7))
        #expect(regranted.grants.last == PlanGrant(plan: "premium", grantedAt: day(7)))
        #expect(profile.tier(for: .anonymous, grants: regranted.grants, now: day(7)) == .premium)
    }

    @Test(arguments: StoreBackend.allCases)
    func revokingAPlanNeverHeldIsNotFound(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try store.createUser(newUser("u"), credentials: nil)
        try store.createUser(newUser("other"), credentials: nil)
        _ = try store.grantPlan(
            PlanGrant(plan: "premium", grantedAt: day(1)), to: "other", profile: profile, now: day(1))
        expectFailure(.notFound, code: .planNotFound) {
            _ = try store.revokePlan("premium", of: "u", profile: profile, now: day(2))
        }
        expectFailure(.notFound, code: .planNotFound) {
            _ = try store.revokePlan("gold", of: "other", profile: profile, now: day(2))
        }
        #expect(
            try store.plans(of: "other").grants == [PlanGrant(plan: "premium", grantedAt: day(1))],
            "another user's plan stands")
    }

    @Test(arguments: StoreBackend.allCases)
    func plansOfAMissingUserAreNotFound(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        expectFailure(.notFound, code: .userNotFound) { _ = try store.plans(of: "nobody") }
        expectFailure(.notFound, code: .userNotFound) {
            _ = try store.grantPlan(
                PlanGrant(plan: "premium", grantedAt: day(1)), to: "nobody", profile: profile, now: day(1))
        }
        expectFailure(.notFound, code: .userNotFound) {
            _ = try store.revokePlan("premium", of: "nobody", profile: profile, now: day(1))
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func plansStayWithTheUserThroughALink(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try store.createUser(newUser("u"), credentials: nil)
        _ = try store.grantPlan(PlanGrant(plan: "premium", grantedAt: day(1)), to: "u", profile: profile, now: day(1))
        _ = try IdentityStoreTests().link(
            store, profile, LinkRequest(user: "u", provider: "apple", subject: "a", email: nil), now: day(2))
        let held = try store.plans(of: "u")
        #expect(held.user.state == .linked)
        #expect(held.grants == [PlanGrant(plan: "premium", grantedAt: day(1))])
    }
}
