import Foundation
import Testing

@testable import GuestModeKit
@testable import GuestModeSQLite

/// Midday UTC of the `number`th day from 1 November 2026, past the month's end too.
private func at(_ number: Int) -> Date { day(1).addingTimeInterval(Double(number - 1) * 86_400) }

/// A store's word on a plan (`applyStorePlanChange`) over each backend: each
/// kind of change, once per event, never over a newer change, and the meter
/// gate following the plan.
@Suite struct StorePurchaseStoreTests {
    private func voice(_ backend: StoreBackend) throws -> GuestMode {
        let (store, profile) = try backend.makeStore(profile: "voice")
        for id in ["a", "b"] { try store.createUser(newUser(id), credentials: nil) }
        return GuestMode(profile: profile, store: store)
    }

    private func change(
        _ kind: StorePlanChange.Kind, event: String, signed: Date, users: [String] = ["a"],
        original: String = "1000", source: StorePlanChange.Source = .appStore
    ) -> StorePlanChange {
        StorePlanChange(
            source: source, eventID: event, originalTransactionID: original, transactionID: "t-" + event,
            signedAt: signed, environment: .production, users: users, kind: kind)
    }

    private func grants(of userID: String, in engine: GuestMode) throws -> [PlanGrant] {
        try engine.store.read { transaction in try transaction.planGrants(of: userID) }
    }

    /// Thirty minutes more after 45 used: over the guest's 60, within premium's unlimited.
    private func allowsHalfAnHour(_ engine: GuestMode, _ user: String, at now: Date) throws -> Bool {
        try engine.checkMeter(user: user, meter: "api_minutes", amount: 30, now: now).isAllowed
    }

    @Test(arguments: StoreBackend.allCases)
    func aTrialThenARenewalKeepThePlanAndNameTheirOrigin(backend: StoreBackend) throws {
        let engine = try voice(backend)
        _ = try engine.useMeter(user: "a", meter: "api_minutes", amount: 45, key: nil, now: at(1))
        #expect(try !allowsHalfAnHour(engine, "a", at: at(1)))

        let trial = try engine.applyStorePlanChange(
            change(.activate(plan: "premium", expiresAt: at(31), trial: true), event: "e1", signed: at(1)),
            now: at(1))
        #expect(trial.outcome == .applied)
        #expect(trial.userID == "a")
        #expect(trial.status?.state == .trial)
        #expect(trial.status?.endsAt == at(31))
        #expect(trial.status?.source == "app_store")
        #expect(trial.status?.sourceID == "t-e1")
        #expect(try allowsHalfAnHour(engine, "a", at: at(2)))

        let renewal = try engine.applyStorePlanChange(
            change(.activate(plan: "premium", expiresAt: at(61), trial: false), event: "e2", signed: at(31)),
            now: at(31))
        #expect(renewal.status?.state == .active)
        #expect(renewal.status?.endsAt == at(61))
        #expect(renewal.status?.sourceID == "t-e2")
        #expect(try engine.tier(user: "a", now: at(40)) == .premium)
        #expect(try engine.plans(user: "a", now: at(40)).map(\.source) == ["app_store"])
        #expect(try engine.tier(user: "a", now: at(62)) == .guest)
    }

    @Test(arguments: StoreBackend.allCases)
    func theSameEventTwiceChangesNothingTheSecondTime(backend: StoreBackend) throws {
        let engine = try voice(backend)
        let purchase = change(.activate(plan: "premium", expiresAt: at(31), trial: false), event: "e1", signed: at(1))
        #expect(try engine.applyStorePlanChange(purchase, now: at(1)).outcome == .applied)
        let before = try grants(of: "a", in: engine)
        let again = try engine.applyStorePlanChange(purchase, now: at(2))
        #expect(again.outcome == .duplicate)
        #expect(again.status?.state == .active)
        #expect(try grants(of: "a", in: engine) == before)
    }

    /// StoreKit signs a transaction anew each time the app reads it: sent again, it is a new event
    /// that says nothing new.
    @Test(arguments: StoreBackend.allCases)
    func theSameTermSignedAgainGrantsNothingMore(backend: StoreBackend) throws {
        let engine = try voice(backend)
        let term = StorePlanChange.Kind.activate(plan: "premium", expiresAt: at(31), trial: true)
        _ = try engine.applyStorePlanChange(change(term, event: "t@1", signed: at(1)), now: at(1))
        let before = try grants(of: "a", in: engine)
        let again = try engine.applyStorePlanChange(change(term, event: "t@2", signed: at(2)), now: at(2))
        #expect(again.outcome == .applied)
        #expect(again.status?.state == .trial)
        #expect(again.status?.grantedAt == at(1))
        #expect(again.status?.source == "app_store")
        #expect(try grants(of: "a", in: engine) == before)
        // A longer term is a change.
        _ = try engine.applyStorePlanChange(
            change(.activate(plan: "premium", expiresAt: at(61), trial: false), event: "t@3", signed: at(3)),
            now: at(3))
        #expect(try grants(of: "a", in: engine).count == 2)
    }

    @Test(arguments: StoreBackend.allCases)
    func anOlderChangeAfterANewerOneChangesNothing(backend: StoreBackend) throws {
        let engine = try voice(backend)
        _ = try engine.applyStorePlanChange(
            change(.activate(plan: "premium", expiresAt: at(31), trial: false), event: "e1", signed: at(1)),
            now: at(1))
        // The expiry signed on day 10 arrives before a renewal signed on day 5.
        #expect(
            try engine.applyStorePlanChange(change(.expire(plan: "premium"), event: "e3", signed: at(10)), now: at(10))
                .outcome == .applied)
        let before = try grants(of: "a", in: engine)
        let late = try engine.applyStorePlanChange(
            change(.activate(plan: "premium", expiresAt: at(60), trial: false), event: "e2", signed: at(5)),
            now: at(11))
        #expect(late.outcome == .superseded)
        #expect(late.status?.state == .expired)
        #expect(try grants(of: "a", in: engine) == before)
        #expect(try engine.tier(user: "a", now: at(12)) == .guest)
    }

    @Test(arguments: StoreBackend.allCases)
    func aChangeForNobodyKnownIsAnOutcomeAndChangesNothing(backend: StoreBackend) throws {
        let engine = try voice(backend)
        let stray = change(
            .activate(plan: "premium", expiresAt: at(31), trial: false), event: "e1", signed: at(1),
            users: ["nobody"])
        let result = try engine.applyStorePlanChange(stray, now: at(1))
        #expect(result == StorePlanResult(outcome: .unknownUser, userID: nil, status: nil))
        // Not remembered as applied: once the user is known the same event applies.
        var known = stray
        known.users = ["nobody", "b"]
        #expect(try engine.applyStorePlanChange(known, now: at(2)).outcome == .applied)
        #expect(try grants(of: "a", in: engine) == [])
    }

    @Test(arguments: StoreBackend.allCases)
    func aLaterNotificationFindsTheSubscriptionsOwner(backend: StoreBackend) throws {
        let engine = try voice(backend)
        _ = try engine.applyStorePlanChange(
            change(.activate(plan: "premium", expiresAt: at(31), trial: false), event: "e1", signed: at(1)),
            now: at(1))
        let refund = try engine.applyStorePlanChange(
            change(.revoke(plan: "premium"), event: "e2", signed: at(3), users: []), now: at(3))
        #expect(refund.outcome == .applied)
        #expect(refund.userID == "a")
        #expect(refund.status?.state == .revoked)
        #expect(refund.status?.revokedAt == at(3))
        #expect(try engine.tier(user: "a", now: at(4)) == .guest)
    }

    @Test(arguments: StoreBackend.allCases)
    func aGracePeriodKeepsThePlanUntilItEnds(backend: StoreBackend) throws {
        let engine = try voice(backend)
        _ = try engine.useMeter(user: "a", meter: "api_minutes", amount: 45, key: nil, now: at(1))
        _ = try engine.applyStorePlanChange(
            change(.activate(plan: "premium", expiresAt: at(31), trial: false), event: "e1", signed: at(1)),
            now: at(1))
        let grace = try engine.applyStorePlanChange(
            change(.gracePeriod(plan: "premium", until: at(47)), event: "e2", signed: at(31)), now: at(31))
        #expect(grace.status?.state == .active)
        #expect(grace.status?.endsAt == at(47))
        #expect(try engine.tier(user: "a", now: at(40)) == .premium)
        // GRACE_PERIOD_EXPIRED early: the plan stops at once.
        let over = try engine.applyStorePlanChange(
            change(.expire(plan: "premium"), event: "e3", signed: at(45)), now: at(45))
        #expect(over.status?.state == .expired)
        #expect(over.status?.endsAt == at(45))
        #expect(try engine.tier(user: "a", now: at(45)) == .guest)
    }

    @Test(arguments: StoreBackend.allCases)
    func anExpiryClosesTheGate(backend: StoreBackend) throws {
        let engine = try voice(backend)
        _ = try engine.useMeter(user: "a", meter: "api_minutes", amount: 45, key: nil, now: at(1))
        _ = try engine.applyStorePlanChange(
            change(.activate(plan: "premium", expiresAt: nil, trial: false), event: "e1", signed: at(1)), now: at(1))
        #expect(try allowsHalfAnHour(engine, "a", at: at(1)))
        let expired = try engine.applyStorePlanChange(
            change(.expire(plan: "premium"), event: "e2", signed: at(1).addingTimeInterval(60)),
            now: at(1).addingTimeInterval(60))
        #expect(expired.outcome == .applied)
        #expect(expired.status?.state == .expired)
        #expect(try !allowsHalfAnHour(engine, "a", at: at(1).addingTimeInterval(120)))
        // An expiry of a plan already over changes no grant.
        let before = try grants(of: "a", in: engine)
        _ = try engine.applyStorePlanChange(change(.expire(plan: "premium"), event: "e3", signed: at(2)), now: at(2))
        #expect(try grants(of: "a", in: engine) == before)
    }

    @Test(arguments: StoreBackend.allCases)
    func aTransferMovesThePlanAndTheGateFollows(backend: StoreBackend) throws {
        let engine = try voice(backend)
        for user in ["a", "b"] {
            _ = try engine.useMeter(user: user, meter: "api_minutes", amount: 45, key: nil, now: at(1))
        }
        _ = try engine.applyStorePlanChange(
            change(
                .activate(plan: "premium", expiresAt: at(31), trial: false), event: "e1", signed: at(1),
                source: .revenueCat), now: at(1))
        #expect(try allowsHalfAnHour(engine, "a", at: at(2)))
        #expect(try !allowsHalfAnHour(engine, "b", at: at(2)))

        // RevenueCat names the users, not the transaction.
        let moved = try engine.applyStorePlanChange(
            change(.transfer(from: ["a"], to: ["b"]), event: "e2", signed: at(3), original: "", source: .revenueCat),
            now: at(3))
        #expect(moved.outcome == .applied)
        #expect(moved.userID == "b")
        #expect(moved.status?.state == .active)
        #expect(moved.status?.endsAt == at(31))
        #expect(try !allowsHalfAnHour(engine, "a", at: at(4)))
        #expect(try allowsHalfAnHour(engine, "b", at: at(4)))
        #expect(try engine.plans(user: "a", now: at(4)).map(\.state) == [.revoked])

        // The next renewal finds the new owner by the subscription.
        let renewal = try engine.applyStorePlanChange(
            change(
                .activate(plan: "premium", expiresAt: at(61), trial: false), event: "e3", signed: at(31), users: [],
                source: .revenueCat), now: at(31))
        #expect(renewal.userID == "b")
        #expect(try engine.tier(user: "b", now: at(40)) == .premium)
        #expect(try engine.tier(user: "a", now: at(40)) == .guest)
    }

    @Test(arguments: StoreBackend.allCases)
    func aPurchaseNamingAnotherUserMovesTheSubscription(backend: StoreBackend) throws {
        let engine = try voice(backend)
        _ = try engine.applyStorePlanChange(
            change(.activate(plan: "premium", expiresAt: at(31), trial: false), event: "e1", signed: at(1)),
            now: at(1))
        // Restored on another account: the App Store's word names b.
        let restored = try engine.applyStorePlanChange(
            change(
                .activate(plan: "premium", expiresAt: at(31), trial: false), event: "e2", signed: at(2),
                users: ["b"]), now: at(2))
        #expect(restored.userID == "b")
        #expect(try engine.tier(user: "b", now: at(3)) == .premium)
        #expect(try engine.tier(user: "a", now: at(3)) == .guest)
    }

    /// The guest bought premium, then signed in on a device whose account it merges into: the plan and
    /// the subscription go with it, so the App Store's next word finds the account.
    @Test(arguments: StoreBackend.allCases)
    func aMergeTakesTheSubscriptionToTheAccount(backend: StoreBackend) throws {
        let engine = try voice(backend)
        let guest = try engine.createGuest(device: nil, now: at(1)).id
        let account = try engine.createGuest(device: nil, now: at(1)).id
        _ = try engine.link(user: account, provider: "apple", subject: "s-1", email: nil, now: at(1))
        _ = try engine.applyStorePlanChange(
            change(
                .activate(plan: "premium", expiresAt: at(31), trial: false), event: "e1", signed: at(1),
                users: [guest]), now: at(1))
        _ = try engine.merge(guest: guest, into: account, policy: .union, dryRun: false, now: at(2))
        #expect(try engine.tier(user: account, now: at(3)) == .premium)
        let renewal = try engine.applyStorePlanChange(
            change(
                .activate(plan: "premium", expiresAt: at(61), trial: false), event: "e2", signed: at(31), users: []),
            now: at(31))
        #expect(renewal.userID == account)
        #expect(renewal.status?.endsAt == at(61))
        #expect(try engine.plans(user: account, now: at(40)).first?.source == "app_store")
    }

    @Test(arguments: StoreBackend.allCases)
    func aPlanTheProfileDoesNotHaveIsRefusedAndChangesNothing(backend: StoreBackend) throws {
        let engine = try voice(backend)
        expectFailure(.usage, code: .unknownPlan) {
            _ = try engine.applyStorePlanChange(
                change(.activate(plan: "gold", expiresAt: nil, trial: false), event: "e1", signed: at(1)),
                now: at(1))
        }
        #expect(try grants(of: "a", in: engine) == [])
    }

    @Test func aProductMappedToTwoPlansIsAProfileError() throws {
        let text = """
            name: demo
            version: 1
            tiers: { guest: }
            plans:
              premium:
                price: 4.99
                app_store_products: [com.example.premium]
                revenuecat_entitlements: [pro]
              gold:
                price: 9.99
                app_store_products: [com.example.gold, com.example.premium]
                revenuecat_entitlements: [gold]
            """
        do {
            _ = try ProfileLoader.parse(text, file: "demo.yaml")
            Issue.record("expected the profile to be refused")
        } catch let error as InvalidProfileError {
            #expect(
                error.diagnostics.map(\.message) == [
                    "the App Store product 'com.example.premium' is mapped to two plans, 'premium' and 'gold' (app_store_products); a purchase must name one plan: keep it under one of them"
                ])
        }
        let fine = try ProfileLoader.parse(
            text.replacingOccurrences(of: ", com.example.premium]", with: "]"), file: "demo.yaml")
        #expect(fine.plan(appStoreProduct: "com.example.gold")?.name == "gold")
        #expect(fine.plan(revenueCatEntitlement: "pro")?.name == "premium")
        #expect(fine.plan(appStoreProduct: "com.example.other") == nil)
    }
}
