import Foundation
import Testing

@testable import GuestModeKit

/// The voice profile gives guests 60 api_minutes for life (warnings at 75%
/// and 90%) and premium unlimited ones; recipes gives 3 video_generations a
/// day. Grants add to that, decided by the engine over each backend's rows.
@Suite("Meter grants conformance")
struct MeterGrantStoreTests {
    private func engine(_ backend: StoreBackend, profile name: String = "voice") throws -> GuestMode {
        let (store, profile) = try backend.makeStore(profile: name)
        try makeGuests(["u1", "u2"], in: store, profile: profile)
        return GuestMode(profile: profile, store: store)
    }

    private func grant(
        _ engine: GuestMode, _ amount: MeterAmount, expiry: MeterGrantExpiry = .never, key: String? = nil,
        reason: String? = nil, user: String = "u1", meter: String = "api_minutes", now: Date = day(1)
    ) throws -> MeterGrantResult {
        try engine.grantMeter(
            user: user, meter: meter, amount: amount, expiry: expiry, reason: reason, key: key, now: now)
    }

    @Test(arguments: StoreBackend.allCases)
    func aGrantAddsToTheTiersAllowanceAndIsSpentFirst(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let bonus = try grant(engine, 30, reason: "referral")
        #expect(bonus.isChanged)
        #expect(bonus.grant.state == .active && bonus.grant.remaining == 30 && bonus.grant.reason == "referral")
        #expect(bonus.status.allowance == 90 && bonus.status.remaining == 90 && bonus.status.granted == 30)
        let used = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 20, key: nil, now: day(2))
        #expect(used.status.used == 20 && used.status.remaining == 70 && used.status.allowance == 90)
        let grants = try engine.meterGrants(user: "u1", meter: nil, now: day(2))
        #expect(grants.map(\.used) == [20] && grants.map(\.remaining) == [10])
        // The other user's meter is untouched.
        #expect(try engine.meterStatus(user: "u2", meter: "api_minutes", now: day(2)).allowance == 60)
    }

    @Test(arguments: StoreBackend.allCases)
    func usageDrawsOnTheGrantThatExpiresSoonestFirst(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let lasting = try grant(engine, 10)
        let late = try grant(engine, 10, expiry: .at(day(20)))
        let soon = try grant(engine, 10, expiry: .after(TimeSpan(amount: 5, unit: .days)))
        _ = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 15, key: nil, now: day(2))
        let used = Dictionary(
            uniqueKeysWithValues: try engine.meterGrants(user: "u1", meter: "api_minutes", now: day(2)).map {
                ($0.id, $0.used)
            })
        #expect(used[soon.grant.id] == 10 && used[late.grant.id] == 5 && used[lasting.grant.id] == 0)
        let status = try engine.meterStatus(user: "u1", meter: "api_minutes", now: day(2))
        #expect(status.grants.map(\.id) == [late.grant.id, lasting.grant.id], "used-up grants leave the list")
    }

    @Test(arguments: StoreBackend.allCases)
    func whatIsLeftOfAnExpiredGrantLapses(backend: StoreBackend) throws {
        let engine = try engine(backend)
        _ = try grant(engine, 30, expiry: .at(day(10)))
        _ = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 20, key: nil, now: day(2))
        let before = try engine.meterStatus(user: "u1", meter: "api_minutes", now: day(9))
        #expect(before.remaining == 70)
        let after = try engine.meterStatus(user: "u1", meter: "api_minutes", now: day(10))
        // The 20 drawn stay drawn from the grant; its last 10 lapsed; the free 60 are whole.
        #expect(after.remaining == 60 && after.allowance == 80 && after.granted == 20 && after.grants.isEmpty)
        #expect(try engine.meterGrants(user: "u1", meter: nil, now: day(10)).map(\.state) == [.expired])
        let gate = try engine.checkMeter(user: "u1", meter: "api_minutes", amount: 60.000001, now: day(10))
        #expect(!gate.isAllowed)
    }

    @Test(arguments: StoreBackend.allCases)
    func theGateAndTheWarningsSeeTheTotal(backend: StoreBackend) throws {
        let engine = try engine(backend)
        _ = try grant(engine, 40)
        // 60 would exhaust the free minutes alone and pass both thresholds: of 100 it is 60 %.
        let used = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 60, key: nil, now: day(2))
        #expect(used.isAllowed && used.warnings.isEmpty && used.status.level == MeterLevel.none)
        let warned = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 15, key: nil, now: day(2))
        #expect(warned.warnings.map(\.percent) == [75])
        #expect(try engine.checkMeter(user: "u1", meter: "api_minutes", amount: 25, now: day(2)).isAllowed)
        #expect(try !engine.checkMeter(user: "u1", meter: "api_minutes", amount: 25.000001, now: day(2)).isAllowed)
        let last = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 25, key: nil, now: day(2))
        #expect(last.status.level == .exhausted && last.status.remaining == 0)
    }

    @Test(arguments: StoreBackend.allCases)
    func aGrantIsMootUnderAnUnlimitedPlanAndKeepsItsAmount(backend: StoreBackend) throws {
        let engine = try engine(backend)
        _ = try grant(engine, 30)
        _ = try engine.grantPlan(user: "u1", plan: "premium", trial: nil, until: day(5), now: day(1))
        let premium = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 100, key: nil, now: day(2))
        #expect(premium.status.allowance == nil && premium.status.grants.map(\.remaining) == [30])
        #expect(try engine.meterGrants(user: "u1", meter: nil, now: day(2)).map(\.used) == [0])
        // Once premium ends the grant is whole; the 100 minutes used under it exhaust the free ones.
        let after = try engine.meterStatus(user: "u1", meter: "api_minutes", now: day(6))
        #expect(after.remaining == 30)
    }

    @Test(arguments: StoreBackend.allCases)
    func aGrantOutlivesTheMetersPeriod(backend: StoreBackend) throws {
        let engine = try engine(backend, profile: "recipes")
        _ = try grant(engine, 2, meter: "video_generations")
        _ = try engine.useMeter(user: "u1", meter: "video_generations", amount: 4, key: nil, now: day(1))
        let first = try engine.meterStatus(user: "u1", meter: "video_generations", now: day(1))
        #expect(first.allowance == 5 && first.remaining == 1)
        // The next day the free 3 are back; the grant was spent the day before.
        let next = try engine.meterStatus(user: "u1", meter: "video_generations", now: day(2))
        #expect(next.used == 0 && next.allowance == 3 && next.remaining == 3 && next.granted == 0)
    }

    @Test(arguments: StoreBackend.allCases)
    func aRepeatedKeyAnswersAsTheFirstTimeAndAnotherPayloadIsRefused(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let span = MeterGrantExpiry.after(TimeSpan(amount: 30, unit: .days))
        let first = try grant(engine, 30, expiry: span, key: "referral-1", reason: "referral")
        let again = try grant(engine, 30, expiry: span, key: "referral-1", reason: "referral", now: day(3))
        #expect(!again.isChanged && again.grant == first.grant, "a retry later matches: the lifetime is compared")
        for other: (MeterAmount, MeterGrantExpiry, String?, String) in [
            (31, span, "referral", "api_minutes"), (30, .never, "referral", "api_minutes"),
            (30, span, "refund", "api_minutes"), (30, span, nil, "api_minutes"),
        ] {
            expectFailure(.conflict, code: .idempotencyKeyReused) {
                _ = try grant(engine, other.0, expiry: other.1, key: "referral-1", reason: other.2, meter: other.3)
            }
        }
        #expect(try engine.meterGrants(user: "u1", meter: nil, now: day(3)).count == 1)
        // Keys are per user.
        #expect(try grant(engine, 5, key: "referral-1", user: "u2").isChanged)
    }

    @Test(arguments: StoreBackend.allCases)
    func aFailureAfterTheKeyCheckTakesNoKeySoTheRetryGrantsOnce(backend: StoreBackend) throws {
        let engine = try engine(backend)
        struct Crash: Error {}
        // The key is the grant row's own column: whatever fails after the
        // check and the insert rolls both back.
        #expect(throws: Crash.self) {
            try engine.store.write { transaction in
                #expect(try transaction.meterGrant(of: "u1", key: "k") == nil)
                _ = try transaction.addMeterGrant(
                    MeterGrantRow(
                        id: 0, userID: "u1", meter: "api_minutes", amount: 30, grantedAt: day(1), expiresAt: nil,
                        revokedAt: nil, reason: nil, idempotencyKey: "k"))
                throw Crash()
            }
        }
        #expect(try grant(engine, 30, key: "k").isChanged)
        #expect(try !grant(engine, 30, key: "k").isChanged)
        #expect(try engine.meterGrants(user: "u1", meter: nil, now: day(1)).count == 1)
        #expect(try engine.meterStatus(user: "u1", meter: "api_minutes", now: day(1)).allowance == 90)
    }

    @Test(arguments: StoreBackend.allCases)
    func revokingLapsesWhatIsLeft(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let bonus = try grant(engine, 30)
        _ = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 10, key: nil, now: day(2))
        let revoked = try engine.revokeMeterGrant(id: bonus.grant.id, now: day(3))
        #expect(revoked.isChanged && revoked.grant.state == .revoked && revoked.grant.used == 10)
        #expect(revoked.status.remaining == 60 && revoked.status.allowance == 70)
        #expect(try !engine.revokeMeterGrant(id: bonus.grant.id, now: day(4)).isChanged)
        expectFailure(.notFound, code: .grantNotFound) { _ = try engine.revokeMeterGrant(id: 999, now: day(4)) }
    }

    @Test(arguments: StoreBackend.allCases)
    func badGrantsAreRefusedBeforeAnythingIsWritten(backend: StoreBackend) throws {
        let engine = try engine(backend)
        expectFailure(.usage, code: .endNotAfterNow) { _ = try grant(engine, 5, expiry: .at(day(1))) }
        expectFailure(.usage, code: .unknownMeter) { _ = try grant(engine, 5, meter: "nope") }
        expectFailure(.notFound, code: .userNotFound) { _ = try grant(engine, 5, user: "ghost") }
        expectFailure(.usage, code: .invalidAmount) { _ = try grant(engine, 0) }
        #expect(try engine.meterGrants(user: "u1", meter: nil, now: day(1)).isEmpty)
    }

    @Test(arguments: StoreBackend.allCases)
    func aTrackedKeyWithAnotherCountOrPropertiesIsRefused(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        try makeGuests(["u1"], in: store, profile: profile)
        let event = TrackedEvent(
            user: "u1", action: "paywall_viewed", at: day(1), count: 1, idempotencyKey: "e1",
            properties: ["source": "settings"])
        _ = try engine.track(event, now: day(1))
        let before = try engine.counters(user: "u1")
        var retried = event
        retried.at = day(2)
        #expect(try !engine.track(retried, now: day(2)).isCounted, "the same payload later is a retry")
        var counted = event
        counted.count = 5
        var described = event
        described.properties = ["source": "home"]
        for other in [counted, described] {
            expectFailure(.conflict, code: .idempotencyKeyReused) { _ = try engine.track(other, now: day(2)) }
            expectFailure(.conflict, code: .idempotencyKeyReused) {
                _ = try applyEvents([other], creatingUsers: false, in: store, profile: profile, now: day(2))
            }
        }
        #expect(try engine.counters(user: "u1") == before)
    }
}
