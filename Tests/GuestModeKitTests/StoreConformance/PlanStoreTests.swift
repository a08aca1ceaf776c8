import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// Grants, trials and revocations, decided by the engine over each
/// backend's plan rows; the grants are read back through the same rows.
@Suite struct PlanStoreTests {
    private let week = TimeSpan(amount: 7, unit: .days)

    private func subscriptions(_ backend: StoreBackend, users: [String]) throws -> GuestMode {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        for id in users { try store.createUser(newUser(id), credentials: nil) }
        return GuestMode(profile: profile, store: store)
    }

    /// Every grant the user holds, as the store keeps them.
    private func grants(of userID: String, in engine: GuestMode) throws -> [PlanGrant] {
        try engine.store.read { transaction in try transaction.planGrants(of: userID) }
    }

    @Test(arguments: StoreBackend.allCases)
    func grantsAreKeptInTheOrderGranted(backend: StoreBackend) throws {
        let engine = try subscriptions(backend, users: ["u"])
        #expect(try engine.plans(user: "u", now: day(1)) == [])
        #expect(try grants(of: "u", in: engine) == [])

        let afterTrial = try engine.grantPlan(user: "u", plan: "premium", trial: week, until: nil, now: day(1))
        #expect(afterTrial.state == .trial)
        #expect(afterTrial.endsAt == day(8))
        let trial = PlanGrant(plan: "premium", grantedAt: day(1), trialEndsAt: day(8))
        #expect(try grants(of: "u", in: engine) == [trial])
        _ = try engine.grantPlan(user: "u", plan: "premium", trial: nil, until: day(20), now: day(9))
        let open = try engine.grantPlan(user: "u", plan: "premium", trial: nil, until: nil, now: day(10))
        #expect(open.state == .active)
        let term = PlanGrant(plan: "premium", grantedAt: day(9), endsAt: day(20))
        #expect(try grants(of: "u", in: engine) == [trial, term, PlanGrant(plan: "premium", grantedAt: day(10))])
        #expect(try engine.tier(user: "u", now: day(11)) == .premium)
    }

    @Test(arguments: StoreBackend.allCases)
    func aSecondTrialIsRefusedAndChangesNothing(backend: StoreBackend) throws {
        let engine = try subscriptions(backend, users: ["u", "other"])
        _ = try engine.grantPlan(user: "u", plan: "premium", trial: week, until: nil, now: day(1))
        let before = try grants(of: "u", in: engine)
        expectFailure(.conflict, code: .trialAlreadyUsed) {
            _ = try engine.grantPlan(user: "u", plan: "premium", trial: week, until: nil, now: day(9))
        }
        #expect(try grants(of: "u", in: engine) == before)
        // A paid grant after the trial is fine, and another user's trial is its own.
        _ = try engine.grantPlan(user: "u", plan: "premium", trial: nil, until: nil, now: day(9))
        #expect(
            try engine.grantPlan(user: "other", plan: "premium", trial: week, until: nil, now: day(9)).state == .trial)
        #expect(try grants(of: "other", in: engine).count == 1)
    }

    /// The refusal names the first trial's grant time in the one format
    /// every backend stores.
    @Test(arguments: StoreBackend.allCases)
    func aSecondTrialNamesTheFirst(backend: StoreBackend) throws {
        let engine = try subscriptions(backend, users: ["u"])
        _ = try engine.grantPlan(user: "u", plan: "premium", trial: week, until: nil, now: day(1))
        do {
            _ = try engine.grantPlan(user: "u", plan: "premium", trial: week, until: nil, now: day(9))
            Issue.record("a second trial was granted")
        } catch let error as GuestModeError {
            #expect(
                error.message
                    == "user 'u' already had a trial of premium (granted \(Timestamp.format(day(1)))); a trial is granted once"
            )
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func revokingMarksEveryGrantNotYetRevoked(backend: StoreBackend) throws {
        let engine = try subscriptions(backend, users: ["u"])
        _ = try engine.grantPlan(user: "u", plan: "premium", trial: nil, until: day(3), now: day(1))
        _ = try engine.grantPlan(user: "u", plan: "premium", trial: nil, until: nil, now: day(4))
        let revoked = try engine.revokePlan(user: "u", plan: "premium", now: day(5))
        #expect(revoked.state == .revoked)
        let afterRevoking = try grants(of: "u", in: engine)
        #expect(afterRevoking.map(\.revokedAt) == [day(5), day(5)])
        #expect(try engine.tier(user: "u", now: day(5)) == .guest)

        // Nothing left to revoke: not found, and the earlier revocation stands.
        expectFailure(.notFound, code: .planNotFound) {
            _ = try engine.revokePlan(user: "u", plan: "premium", now: day(6))
        }
        #expect(try grants(of: "u", in: engine) == afterRevoking)
        // A grant after a revocation is a new one.
        let regranted = try engine.grantPlan(user: "u", plan: "premium", trial: nil, until: nil, now: day(7))
        #expect(regranted.state == .active)
        #expect(try grants(of: "u", in: engine).last == PlanGrant(plan: "premium", grantedAt: day(7)))
        #expect(try engine.tier(user: "u", now: day(7)) == .premium)
    }

    @Test(arguments: StoreBackend.allCases)
    func revokingAPlanNeverHeldIsNotFound(backend: StoreBackend) throws {
        let engine = try subscriptions(backend, users: ["u", "other"])
        _ = try engine.grantPlan(user: "other", plan: "premium", trial: nil, until: nil, now: day(1))
        expectFailure(.notFound, code: .planNotFound) {
            _ = try engine.revokePlan(user: "u", plan: "premium", now: day(2))
        }
        expectFailure(.notFound, code: .planNotFound) {
            _ = try engine.revokePlan(user: "other", plan: "gold", now: day(2))
        }
        #expect(
            try grants(of: "other", in: engine) == [PlanGrant(plan: "premium", grantedAt: day(1))],
            "another user's plan stands")
    }

    @Test(arguments: StoreBackend.allCases)
    func plansOfAMissingUserAreNotFound(backend: StoreBackend) throws {
        let engine = try subscriptions(backend, users: [])
        expectFailure(.notFound, code: .userNotFound) { _ = try engine.plans(user: "nobody", now: day(1)) }
        expectFailure(.notFound, code: .userNotFound) { _ = try engine.tier(user: "nobody", now: day(1)) }
        expectFailure(.notFound, code: .userNotFound) {
            _ = try engine.grantPlan(user: "nobody", plan: "premium", trial: nil, until: nil, now: day(1))
        }
        expectFailure(.notFound, code: .userNotFound) {
            _ = try engine.revokePlan(user: "nobody", plan: "premium", now: day(1))
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func plansStayWithTheUserThroughALink(backend: StoreBackend) throws {
        let engine = try subscriptions(backend, users: ["u"])
        let store = engine.store
        _ = try engine.grantPlan(user: "u", plan: "premium", trial: nil, until: nil, now: day(1))
        _ = try IdentityStoreTests().link(
            store, engine.profile, LinkRequest(user: "u", provider: "apple", subject: "a", email: nil), now: day(2))
        #expect(try engine.user("u").state == .linked)
        #expect(try grants(of: "u", in: engine) == [PlanGrant(plan: "premium", grantedAt: day(1))])
        #expect(try engine.tier(user: "u", now: day(2)) == .premium)
    }
}
