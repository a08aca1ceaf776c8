import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

@Suite("Meter policy")
struct MeterPolicyTests {
    /// 60 minutes for guests, warnings at 75% and 90%, unlimited for premium.
    let voice: Profile
    let minutes: Meter

    init() throws {
        voice = try ProfileLoader.parse(try template("voice"), file: "voice.yaml")
        minutes = try #require(voice.meter(named: "api_minutes"))
    }

    @Test func allowancesAreExactAndNilIsUnlimited() {
        #expect(voice.tier(.guest).exactAllowance(for: "api_minutes") == 60)
        #expect(voice.tier(.premium).exactAllowance(for: "api_minutes") == nil)
        var tier = voice.tier(.guest)
        tier.allowances["api_minutes"] = 12.2
        #expect(tier.exactAllowance(for: "api_minutes") == MeterAmount(millionths: 12_200_000))
    }

    @Test func statusAddsRemainingPercentAndLevel() {
        let status = voice.meterStatus(minutes, tier: .guest, used: 45, now: day(1))
        #expect(
            status
                == MeterStatus(
                    meter: "api_minutes", unit: "minutes", tier: .guest, used: 45, allowance: 60, remaining: 15,
                    percentUsed: 75, level: .warning, periodStart: nil))
        #expect(voice.meterStatus(minutes, tier: .guest, used: 12.2, now: day(1)).percentUsed == 20.333333)
    }

    @Test func levelsFollowTheThresholdsExactly() {
        #expect(minutes.level(used: 0, allowance: 60) == .none)
        #expect(minutes.level(used: 44.999999, allowance: 60) == .none)
        #expect(minutes.level(used: 45, allowance: 60) == .warning)
        #expect(minutes.level(used: 53.999999, allowance: 60) == .warning)
        #expect(minutes.level(used: 54, allowance: 60) == .critical)
        #expect(minutes.level(used: 59.999999, allowance: 60) == .critical)
        #expect(minutes.level(used: 60, allowance: 60) == .exhausted)
        #expect(minutes.level(used: 61, allowance: 60) == .exhausted, "an allowance lowered below usage")
        #expect(minutes.level(used: 0, allowance: 0) == .exhausted)
        #expect(minutes.level(used: 1_000_000, allowance: nil) == .none)
    }

    @Test func remainingNeverGoesBelowZero() {
        let status = minutes.status(tier: .guest, used: 70, allowance: 60, periodStart: nil)
        #expect(status.remaining == 0)
        #expect(status.percentUsed == 116.666667)
        #expect(minutes.status(tier: .guest, used: 0, allowance: 0, periodStart: nil).percentUsed == 100)
        #expect(minutes.status(tier: .premium, used: 5, allowance: nil, periodStart: nil).remaining == nil)
    }

    @Test func warningsReachedByATotal() {
        #expect(minutes.warningsReached(used: 44.999999, allowance: 60).isEmpty)
        #expect(minutes.warningsReached(used: 45, allowance: 60).map(\.percent) == [75])
        #expect(minutes.warningsReached(used: 55, allowance: 60).map(\.level) == [.warning, .critical])
        #expect(minutes.warningsReached(used: 0, allowance: 0).count == 2, "a zero allowance has reached every warning")
        #expect(minutes.warningsReached(used: 1_000, allowance: nil).isEmpty)
        // Products past 64 bits still compare exactly.
        #expect(minutes.warningsReached(used: .largest, allowance: .largest).count == 2)
        #expect(minutes.warningsReached(used: MeterAmount(millionths: .max / 4), allowance: .largest).isEmpty)
    }

    @Test func aRequestFitsWhenTheNewTotalStaysWithinTheAllowance() {
        let status = minutes.status(tier: .guest, used: 59.5, allowance: 60, periodStart: nil)
        #expect(status.admits(0.5))
        #expect(!status.admits(0.500001))
        #expect(status.admits(nil), "without an amount: anything remains")
        let exhausted = minutes.status(tier: .guest, used: 60, allowance: 60, periodStart: nil)
        #expect(!exhausted.admits(nil))
        #expect(!exhausted.admits(0.000001))
        let unlimited = minutes.status(tier: .premium, used: 1_000, allowance: nil, periodStart: nil)
        #expect(unlimited.admits(nil))
        #expect(unlimited.admits(.largestRequest))
        let full = minutes.status(tier: .premium, used: .largest, allowance: nil, periodStart: nil)
        #expect(!full.admits(1), "a sum that would overflow is refused, never wrapped")
    }

    @Test func periodsStartAtUTCDaysAndMonths() {
        let now = Timestamp.parse("2026-11-22T23:30:00Z") ?? .distantPast
        #expect(MeterReset.never.periodStart(containing: now) == nil)
        #expect(MeterReset.daily.periodStart(containing: now) == Timestamp.parse("2026-11-22T00:00:00Z"))
        #expect(MeterReset.monthly.periodStart(containing: now) == Timestamp.parse("2026-11-01T00:00:00Z"))
        let midnight = Timestamp.parse("2026-12-01T00:00:00Z") ?? .distantPast
        #expect(MeterReset.daily.periodStart(containing: midnight) == midnight)
        #expect(MeterReset.monthly.periodStart(containing: midnight) == midnight)
    }

    @Test func periodsStartWhereFoundationsUTCCalendarPutsThem() {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(secondsFromGMT: 0) ?? calendar.timeZone
        var generator = SystemRandomNumberGenerator()
        // 1600 to 2400, leap days and century years included, and times just before and after midnight.
        var times: [Double] = [0, -1, 86_399.999, 86_400, 951_782_400, 951_868_799.5, 4_107_542_400]
        times += (0..<5_000).map { _ in Double.random(in: -11_676_096_000...13_569_465_600, using: &generator) }
        for time in times {
            let now = Date(timeIntervalSince1970: time)
            // Before 1582-10-15 Foundation's calendar is Julian; an ISO 8601 timestamp's is Gregorian there too.
            #expect(MeterReset.daily.periodStart(containing: now) == calendar.startOfDay(for: now), "\(now)")
            #expect(
                MeterReset.monthly.periodStart(containing: now)
                    == calendar.date(from: calendar.dateComponents([.year, .month], from: now)), "\(now)")
        }
    }

    @Test func periodsBeforeTheGregorianReformAreISOsGregorianOnes() {
        let now = Timestamp.parse("0001-01-01T12:00:00Z") ?? .distantFuture
        #expect(MeterReset.monthly.periodStart(containing: now) == Timestamp.parse("0001-01-01T00:00:00Z"))
        #expect(MeterReset.daily.periodStart(containing: now) == Timestamp.parse("0001-01-01T00:00:00Z"))
    }

    @Test func aFiredWarningBecomesASystemEvent() {
        #expect(FiredWarning.eventAction == "meter_warning")
        #expect(
            FiredWarning(meter: "api_minutes", percent: 75, level: .warning).eventProperties
                == ["meter": "api_minutes", "percent": "75", "level": "warning"])
        #expect(FiredWarning(meter: "m", percent: 66.5, level: .critical).eventProperties["percent"] == "66.5")
    }
}
