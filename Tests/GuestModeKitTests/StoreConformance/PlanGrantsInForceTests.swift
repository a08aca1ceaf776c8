import Foundation
import Testing

@testable import GuestModeKit

/// The tier is decided from the plan grants that may be in force
/// (`planGrants(of:mayBeInForceAt:)`), on every backend: exactly the grants
/// in force at every moment, so a subscriber's past renewals are not read.
@Suite struct PlanGrantsInForceTests {
    /// Grants of `premium` over 40 days from a fixed seed, every time on the hour so that moments fall on
    /// them exactly: terms that end and that do not, trials that end before and after the term, revocations
    /// past and to come, grants made later than the moments asked about.
    static func grants(seed: UInt64) -> [PlanGrant] {
        var random = SplitMix64(state: seed)
        func hour(_ bound: Int) -> Date {
            day(1).addingTimeInterval(Double(Int.random(in: 0..<bound, using: &random)) * 3600)
        }
        func sometimes(_ chance: Int, _ time: () -> Date) -> Date? {
            Int.random(in: 0..<100, using: &random) < chance ? time() : nil
        }
        return (0..<60).map { _ in
            let grantedAt = hour(40 * 24)
            return PlanGrant(
                plan: "premium", grantedAt: grantedAt,
                trialEndsAt: sometimes(30) {
                    grantedAt.addingTimeInterval(Double(Int.random(in: 0..<200, using: &random)) * 3600)
                },
                endsAt: sometimes(80) {
                    grantedAt.addingTimeInterval(Double(Int.random(in: 0..<400, using: &random)) * 3600)
                },
                revokedAt: sometimes(20) { hour(45 * 24) })
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func theGrantsReadAreThoseInForce(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        let users = ["renewing": Self.grants(seed: 5), "churned": Self.grants(seed: 9), "never-paid": []]
        for (user, grants) in users {
            try store.createUser(newUser(user, device: user), credentials: nil)
            try store.write { transaction in
                for grant in grants { try transaction.addPlanGrant(grant, to: user) }
            }
        }
        var moments = 0
        var seenInForce = 0
        var seenEnded = 0
        for user in users.keys.sorted() {
            let whole = try store.read { try $0.planGrants(of: user) }
            #expect(whole.count == users[user]?.count)
            for hours in stride(from: 0, through: 50 * 24, by: 5) {
                let now = day(1).addingTimeInterval(Double(hours) * 3600)
                let read = try store.read { try $0.planGrants(of: user, mayBeInForceAt: now) }
                let inForce = whole.filter { $0.status(in: profile, now: now).isInForce }
                #expect(read == inForce, "\(user) at \(Timestamp.format(now))")
                #expect(
                    profile.tier(for: .anonymous, grants: read, now: now)
                        == profile.tier(for: .anonymous, grants: whole, now: now))
                seenInForce += inForce.count
                seenEnded += whole.count - inForce.count
                moments += 1
            }
        }
        #expect(moments == 3 * (50 * 24 / 5 + 1))
        // The seeds give both kinds at once, so leaving out too many or too few fails.
        #expect(seenInForce > 1000 && seenEnded > 1000, "\(seenInForce) in force, \(seenEnded) ended")
    }

    @Test(
        "a grant ending exactly now is over; one revoked in the future or ending in its trial still counts",
        arguments: StoreBackend.allCases)
    func theBoundaries(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        let now = day(10)
        let grants = [
            PlanGrant(plan: "premium", grantedAt: day(1), endsAt: now),
            PlanGrant(plan: "premium", grantedAt: day(2), revokedAt: now),
            PlanGrant(plan: "premium", grantedAt: day(3), trialEndsAt: now),
            // A trial's end decides before the term's, both ways.
            PlanGrant(plan: "premium", grantedAt: day(4), trialEndsAt: day(11), endsAt: day(5)),
            PlanGrant(plan: "premium", grantedAt: day(5), trialEndsAt: day(6), endsAt: day(20)),
            PlanGrant(plan: "premium", grantedAt: day(6), endsAt: day(10, hour: 13), revokedAt: day(11)),
            PlanGrant(plan: "premium", grantedAt: day(12)),
        ]
        try store.createUser(newUser("u", device: "u"), credentials: nil)
        try store.write { transaction in
            for grant in grants { try transaction.addPlanGrant(grant, to: "u") }
        }
        let read = try store.read { try $0.planGrants(of: "u", mayBeInForceAt: now) }
        #expect(read == [grants[3], grants[5], grants[6]])
        #expect(read == grants.filter { $0.status(in: profile, now: now).isInForce })
    }
}
