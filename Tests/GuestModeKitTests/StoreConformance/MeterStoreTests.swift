import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// The voice profile gives guests 60 api_minutes for life, warnings at 75%
/// and 90%, overage refused; the recipes profile gives 3 video_generations a
/// day, a warning at 66%. The gate, overage and warnings are decided by the
/// engine over each backend's transaction primitives.
@Suite("Meters conformance")
struct MeterStoreTests {
    private func voiceGuest(backend: StoreBackend) throws -> GuestMode {
        let (store, profile) = try backend.makeStore(profile: "voice")
        try makeGuests(["u1"], in: store, profile: profile)
        return GuestMode(profile: profile, store: store)
    }

    @Test(arguments: StoreBackend.allCases)
    func statusOfAFreshUser(backend: StoreBackend) throws {
        let engine = try voiceGuest(backend: backend)
        let status = try engine.meterStatus(user: "u1", meter: "api_minutes", now: day(1))
        #expect(
            status
                == MeterStatus(
                    meter: "api_minutes", unit: "minutes", tier: .guest, used: 0, allowance: 60, remaining: 60,
                    percentUsed: 0, level: .none, periodStart: nil))
    }

    @Test(arguments: StoreBackend.allCases)
    func usageAddsUpExactly(backend: StoreBackend) throws {
        let engine = try voiceGuest(backend: backend)
        for amount: MeterAmount in [12.2, 19.9, 12.9] + Array(repeating: 1, count: 15) {
            let result = try engine.useMeter(user: "u1", meter: "api_minutes", amount: amount, key: nil, now: day(1))
            #expect(result.isRecorded)
        }
        let status = try engine.meterStatus(user: "u1", meter: "api_minutes", now: day(1))
        #expect(status.used == 60)
        #expect(status.remaining == 0)
        #expect(status.level == .exhausted)
        #expect(status.percentUsed == 100)
        let gate = try engine.checkMeter(user: "u1", meter: "api_minutes", amount: nil, now: day(1))
        #expect(!gate.isAllowed)
        #expect(gate.requested == 0)
    }

    @Test(arguments: StoreBackend.allCases)
    func aRepeatedIdempotencyKeyCountsOnce(backend: StoreBackend) throws {
        let engine = try voiceGuest(backend: backend)
        let first = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 10, key: "call-1", now: day(1))
        #expect(first.isRecorded && !first.isDuplicate && first.isAllowed)
        let repeated = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 10, key: "call-1", now: day(1))
        #expect(!repeated.isRecorded)
        #expect(repeated.isDuplicate)
        #expect(repeated.isAllowed)
        #expect(repeated.status.used == 10)
        #expect(try engine.meterStatus(user: "u1", meter: "api_minutes", now: day(1)).used == 10)
        // Another amount under the same key is refused and records nothing;
        // the key stays bound to its first amount, in a later period too.
        expectFailure(.conflict, code: .idempotencyKeyReused) {
            _ = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 10.000001, key: "call-1", now: day(1))
        }
        #expect(try engine.meterStatus(user: "u1", meter: "api_minutes", now: day(1)).used == 10)
        #expect(
            try engine.useMeter(
                user: "u1", meter: "api_minutes", amount: 10, key: "call-1",
                now: day(30).addingTimeInterval(31 * 86_400)
            ).isDuplicate)
    }

    @Test(arguments: StoreBackend.allCases)
    func aRefusedUseRecordsNothing(backend: StoreBackend) throws {
        let engine = try voiceGuest(backend: backend)
        _ = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 56, key: nil, now: day(1))
        let countersBefore = try engine.counters(user: "u1")
        let refused = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 4.000001, key: "big", now: day(1))
        #expect(!refused.isAllowed)
        #expect(!refused.isRecorded)
        #expect(!refused.isDuplicate)
        #expect(refused.warnings.isEmpty)
        #expect(refused.status.used == 56)
        #expect(try engine.meterStatus(user: "u1", meter: "api_minutes", now: day(1)).used == 56)
        #expect(try engine.counters(user: "u1") == countersBefore, "no warning event either")
        // The refused key was not taken: the same key records once it fits.
        let fits = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 4, key: "big", now: day(1))
        #expect(fits.isRecorded)
        #expect(fits.status.remaining == 0)
    }

    @Test(arguments: StoreBackend.allCases)
    func warningsFireOncePerThresholdWithASystemEvent(backend: StoreBackend) throws {
        let engine = try voiceGuest(backend: backend)
        let fired = try [40, 5, 1, 8, 2].map { (amount: MeterAmount) in
            try engine.useMeter(user: "u1", meter: "api_minutes", amount: amount, key: nil, now: day(1)).warnings
        }
        #expect(
            fired == [
                [], [FiredWarning(meter: "api_minutes", percent: 75, level: .warning)], [],
                [FiredWarning(meter: "api_minutes", percent: 90, level: .critical)], [],
            ])
        #expect(try engine.counters(user: "u1")["meter_warning"] == 2)
    }

    @Test(arguments: StoreBackend.allCases)
    func oneUseCanCrossSeveralThresholdsAndAThresholdIsReachedExactly(backend: StoreBackend) throws {
        let engine = try voiceGuest(backend: backend)
        let justBelow = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 44.999999, key: nil, now: day(1))
        #expect(justBelow.warnings.isEmpty)
        let atThreshold = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 0.000001, key: nil, now: day(1))
        #expect(atThreshold.warnings.map(\.percent) == [75], "45 of 60 is exactly 75%")
        #expect(atThreshold.status.level == .warning)

        try makeGuests(["u2"], in: engine.store, profile: engine.profile)
        let both = try engine.useMeter(user: "u2", meter: "api_minutes", amount: 55, key: nil, now: day(1))
        #expect(both.warnings.map(\.level) == [.warning, .critical])
        #expect(try engine.counters(user: "u2")["meter_warning"] == 2)
    }

    @Test(arguments: StoreBackend.allCases)
    func checkNeverRecords(backend: StoreBackend) throws {
        let engine = try voiceGuest(backend: backend)
        _ = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 59.5, key: nil, now: day(1))
        let fits = try engine.checkMeter(user: "u1", meter: "api_minutes", amount: 0.5, now: day(1))
        #expect(fits.isAllowed)
        #expect(fits.requested == 0.5)
        #expect(fits.status.remaining == 0.5)
        #expect(
            try !engine.checkMeter(user: "u1", meter: "api_minutes", amount: 0.500001, now: day(1)).isAllowed)
        #expect(try engine.checkMeter(user: "u1", meter: "api_minutes", amount: nil, now: day(1)).isAllowed)
        #expect(try engine.meterStatus(user: "u1", meter: "api_minutes", now: day(1)).used == 59.5)
    }

    @Test(arguments: StoreBackend.allCases)
    func dailyMetersResetAndWarnAgainEachPeriod(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        try makeGuests(["u1"], in: store, profile: profile)
        let engine = GuestMode(profile: profile, store: store)
        let late = day(1, hour: 23)
        let first = try engine.useMeter(user: "u1", meter: "video_generations", amount: 3, key: "v1", now: late)
        #expect(first.warnings.map(\.percent) == [66])
        #expect(first.status.periodStart == Timestamp.parse("2026-11-01T00:00:00Z"))
        #expect(try !engine.checkMeter(user: "u1", meter: "video_generations", amount: 1, now: late).isAllowed)
        let nextDay = day(2, hour: 0)
        #expect(try engine.meterStatus(user: "u1", meter: "video_generations", now: nextDay).used == 0)
        let again = try engine.useMeter(user: "u1", meter: "video_generations", amount: 2, key: nil, now: nextDay)
        #expect(again.warnings.map(\.percent) == [66], "warnings fire again in a new period")
        // A key is remembered across periods, with its amount.
        #expect(
            try engine.useMeter(user: "u1", meter: "video_generations", amount: 3, key: "v1", now: nextDay).isDuplicate
        )
        expectFailure(.conflict, code: .idempotencyKeyReused) {
            _ = try engine.useMeter(user: "u1", meter: "video_generations", amount: 1, key: "v1", now: nextDay)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func everyMethodThrowsForAMissingUser(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "voice")
        let engine = GuestMode(profile: profile, store: store)
        let isUserNotFound: (any Error) -> Bool = { ($0 as? GuestModeError)?.code == .userNotFound }
        #expect { try engine.meterStatus(user: "ghost", meter: "api_minutes", now: day(1)) } throws: {
            isUserNotFound($0)
        }
        #expect { try engine.checkMeter(user: "ghost", meter: "api_minutes", amount: 1, now: day(1)) } throws: {
            isUserNotFound($0)
        }
        #expect {
            try engine.useMeter(user: "ghost", meter: "api_minutes", amount: 1, key: nil, now: day(1))
        } throws: {
            isUserNotFound($0)
        }
    }
}
