import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// The subscriptions profile (plan `premium`, tier premium) plus a plan
/// `supporter` that lifts only to the account tier.
private func plansProfile() throws -> Profile {
    var profile = try ProfileLoader.parse(try template("subscriptions"), file: "subscriptions.yaml")
    profile.plans.append(
        Plan(
            name: "supporter", price: 1, currency: "USD", billingPeriod: TimeSpan(amount: 1, unit: .months), trial: nil,
            tier: .account))
    return profile
}

@Suite struct PlanGrantStatusTests {
    @Test func anOpenEndedGrantIsActiveFromTheStart() throws {
        let profile = try plansProfile()
        let status = PlanGrant(plan: "premium", grantedAt: day(1)).status(in: profile, now: day(1))
        #expect(status.state == .active)
        #expect(status.isInForce)
        #expect(status.tier == .premium)
        #expect(status.endsAt == nil)
        #expect(status.grantedAt == day(1))
    }

    @Test func aTrialIsInForceUntilItEndsThenExpired() throws {
        let profile = try plansProfile()
        let grant = PlanGrant(plan: "premium", grantedAt: day(1), trialEndsAt: day(8))
        #expect(grant.status(in: profile, now: day(1)).state == .trial)
        #expect(grant.status(in: profile, now: day(8).addingTimeInterval(-1)).state == .trial)
        #expect(grant.status(in: profile, now: day(8)).state == .expired, "the end is exclusive")
        #expect(!grant.status(in: profile, now: day(9)).isInForce)
        #expect(grant.status(in: profile, now: day(1)).endsAt == day(8))
    }

    @Test func aFixedTermExpiresAtItsEnd() throws {
        let profile = try plansProfile()
        let grant = PlanGrant(plan: "premium", grantedAt: day(1), endsAt: day(10))
        #expect(grant.status(in: profile, now: day(9)).state == .active)
        #expect(grant.status(in: profile, now: day(10)).state == .expired)
        #expect(grant.status(in: profile, now: day(9)).endsAt == day(10))
    }

    @Test func aRevocationWinsOverEverythingOnceItIsDue() throws {
        let profile = try plansProfile()
        let trial = PlanGrant(plan: "premium", grantedAt: day(1), trialEndsAt: day(8), revokedAt: day(3))
        #expect(trial.status(in: profile, now: day(2)).state == .trial, "not revoked before the revocation")
        #expect(trial.status(in: profile, now: day(3)).state == .revoked)
        let expired = PlanGrant(plan: "premium", grantedAt: day(1), endsAt: day(2), revokedAt: day(3))
        #expect(expired.status(in: profile, now: day(4)).state == .revoked)
        #expect(expired.status(in: profile, now: day(4)).revokedAt == day(3))
    }

    @Test func aPlanTheProfileNoLongerNamesCountsAsAccount() throws {
        let profile = try plansProfile()
        #expect(PlanGrant(plan: "retired", grantedAt: day(1)).status(in: profile, now: day(1)).tier == .account)
    }
}

@Suite struct PlanStatusesTests {
    @Test func theGrantInForceWinsOverALaterEndedOne() throws {
        let profile = try plansProfile()
        let grants = [
            PlanGrant(plan: "premium", grantedAt: day(1)),
            PlanGrant(plan: "premium", grantedAt: day(2), endsAt: day(3)),
        ]
        let statuses = profile.planStatuses(of: grants, now: day(5))
        #expect(statuses.count == 1)
        #expect(statuses.first?.state == .active)
        #expect(statuses.first?.grantedAt == day(1))
    }

    @Test func withoutAGrantInForceTheLatestIsReported() throws {
        let profile = try plansProfile()
        let grants = [
            PlanGrant(plan: "premium", grantedAt: day(1), trialEndsAt: day(2)),
            PlanGrant(plan: "premium", grantedAt: day(3), revokedAt: day(4)),
        ]
        let status = profile.planStatuses(of: grants, now: day(5)).first
        #expect(status?.state == .revoked)
        #expect(status?.grantedAt == day(3))
    }

    @Test func aLaterGrantInForceReplacesAnEndedOne() throws {
        let profile = try plansProfile()
        let grants = [
            PlanGrant(plan: "premium", grantedAt: day(1), trialEndsAt: day(2)),
            PlanGrant(plan: "premium", grantedAt: day(3)),
        ]
        #expect(profile.planStatuses(of: grants, now: day(5)).map(\.state) == [.active])
    }

    @Test func onePlanEachInTheOrderFirstGranted() throws {
        let profile = try plansProfile()
        let grants = [
            PlanGrant(plan: "supporter", grantedAt: day(1)),
            PlanGrant(plan: "premium", grantedAt: day(2)),
            PlanGrant(plan: "supporter", grantedAt: day(3), endsAt: day(4)),
        ]
        #expect(profile.planStatuses(of: grants, now: day(5)).map(\.plan) == ["supporter", "premium"])
        #expect(profile.planStatuses(of: [], now: day(5)).isEmpty)
    }
}

@Suite struct TierPolicyTests {
    @Test func withoutPlansTheStateDecides() throws {
        let profile = try plansProfile()
        #expect(profile.tier(for: .anonymous, grants: [], now: day(1)) == .guest)
        #expect(profile.tier(for: .linked, grants: [], now: day(1)) == .account)
    }

    @Test func theTierIsTheHighestOfStateAndPlansInForce() throws {
        let profile = try plansProfile()
        let supporter = PlanGrant(plan: "supporter", grantedAt: day(1))
        let premium = PlanGrant(plan: "premium", grantedAt: day(1))
        #expect(profile.tier(for: .anonymous, grants: [supporter], now: day(2)) == .account)
        #expect(profile.tier(for: .linked, grants: [supporter], now: day(2)) == .account, "a plan never lowers")
        #expect(profile.tier(for: .anonymous, grants: [premium], now: day(2)) == .premium)
        #expect(profile.tier(for: .linked, grants: [supporter, premium], now: day(2)) == .premium)
        #expect(
            profile.tier(for: .anonymous, grants: [premium, supporter], now: day(2)) == .premium,
            "order does not matter")
    }

    @Test func plansNotInForceDoNotCount() throws {
        let profile = try plansProfile()
        let grants = [
            PlanGrant(plan: "premium", grantedAt: day(1), trialEndsAt: day(8)),
            PlanGrant(plan: "premium", grantedAt: day(1), endsAt: day(5)),
            PlanGrant(plan: "premium", grantedAt: day(1), revokedAt: day(2)),
        ]
        #expect(profile.tier(for: .anonymous, grants: grants, now: day(3)) == .premium, "the trial is in force")
        #expect(profile.tier(for: .anonymous, grants: grants, now: day(9)) == .guest)
        #expect(profile.tier(for: .linked, grants: grants, now: day(9)) == .account)
    }
}

@Suite struct TimestampTests {
    @Test func aParsedTimeMovedOneMillisecondPrintsOneMillisecondLater() throws {
        for text in ["2026-11-02T00:00:10.001Z", "2026-11-02T23:59:59.998Z", "2026-01-01T00:00:00.000Z"] {
            let parsed = try #require(Timestamp.parse(text))
            #expect(Timestamp.format(parsed) == text)
            let next = Timestamp.format(parsed.addingTimeInterval(0.001))
            #expect(next > text, "\(text) + 1 ms printed as \(next)")
        }
    }
}
