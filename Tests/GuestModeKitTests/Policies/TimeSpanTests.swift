import Foundation
import Testing

@testable import GuestModeKit

/// The one duration parser.
@Suite("TimeSpan: one parser for every duration")
struct TimeSpanTests {
    let november22 = Timestamp.parse("2026-11-22T09:30:00Z")!
    let january31 = Timestamp.parse("2026-01-31T10:00:00Z")!

    @Test func isoAndShortFormsAgree() {
        let pairs: [(String, String)] = [
            ("P1M", "1 month"), ("P2M", "2 months"), ("P1Y", "1 year"), ("P7D", "7d"), ("PT24H", "24h"),
            ("PT30M", "30m"), ("P2W", "2w"), ("P1W", "1 week"), ("PT90S", "90s"), ("P1DT12H", "1d 12h"),
            ("P1Y2M", "1 year 2 months"), ("PT1H30M", "1h30m"),
        ]
        for (iso, short) in pairs {
            let a = TimeSpan(parsing: iso)
            let b = TimeSpan(parsing: short)
            #expect(a != nil && a == b, "\(iso) vs \(short)")
            #expect(a?.iso8601 == iso)
            #expect(a.flatMap { TimeSpan(parsing: $0.description) } == a, "description parses back: \(iso)")
        }
    }

    @Test func calendarUnitsAreCalendarAware() {
        #expect(TimeSpan(parsing: "P1M")?.added(to: november22) == Timestamp.parse("2026-12-22T09:30:00Z"))
        #expect(TimeSpan(parsing: "P1M")?.added(to: january31) == Timestamp.parse("2026-02-28T10:00:00Z"))
        #expect(TimeSpan(parsing: "P1Y")?.added(to: november22) == Timestamp.parse("2027-11-22T09:30:00Z"))
        #expect(TimeSpan(parsing: "P1MT1H")?.added(to: january31) == Timestamp.parse("2026-02-28T11:00:00Z"))
        #expect(TimeSpan(parsing: "1 month")?.subtracted(from: november22) == Timestamp.parse("2026-10-22T09:30:00Z"))
        #expect(TimeSpan(parsing: "24h")?.added(to: november22) == Timestamp.parse("2026-11-23T09:30:00Z"))
    }

    @Test func ambiguousEmptyZeroAndNegativeAreRefusedWithTheAcceptedForms() {
        guard case .failure(let refusal) = TimeSpan.parse("1M") else {
            Issue.record("1M was accepted")
            return
        }
        #expect(refusal.description.contains("P1M") && refusal.description.contains("1 month"))
        #expect(refusal.description.contains("PT1M") && refusal.description.contains("1m"))
        if case .failure(let twelve) = TimeSpan.parse("12M") { #expect(twelve.description.contains("12 months")) }
        for text in [
            "", " ", "0d", "P0D", "PT0S", "0 months", "-1d", "-P1D", "7", "d", "1.5h", "P1.5M", "PT", "P",
            "P1DT", "P1H", "PT1D", "P1M1Y", "1x", "soon", "7d7d", "1 monthly", "99999999999999y",
        ] {
            #expect(TimeSpan(parsing: text) == nil, "'\(text)' accepted")
        }
        if case .failure(let zero) = TimeSpan.parse("0d") { #expect(zero == .zero("0d")) }
        if case .failure(let negative) = TimeSpan.parse("-5d") { #expect(negative == .negative("-5d")) }
        if case .failure(let other) = TimeSpan.parse("soon") {
            #expect(other.description.contains("P1M") && other.description.contains("1 month"))
        }
        #expect(errorKind { _ = try TimeSpan.parseOrThrow("1M", what: "trial") } == .badDuration)
    }

    @Test func relativeTimes() {
        #expect(
            RelativeTime.resolve("+30d", from: november22) == .success(Timestamp.parse("2026-12-22T09:30:00Z")!))
        #expect(RelativeTime.resolve("-1h", from: november22) == .success(Timestamp.parse("2026-11-22T08:30:00Z")!))
        #expect(RelativeTime.resolve("+P1M", from: january31) == .success(Timestamp.parse("2026-02-28T10:00:00Z")!))
        #expect(RelativeTime.resolve("2026-11-22T09:30:00Z", from: november22) == nil)
        if case .failure? = RelativeTime.resolve("+1M", from: november22) {} else { Issue.record("+1M accepted") }
        if case .failure? = RelativeTime.resolve("+0d", from: november22) {} else { Issue.record("+0d accepted") }
    }

    private func errorKind(_ body: () throws -> Void) -> GuestModeError.Code? {
        do {
            try body()
            return nil
        } catch let error as GuestModeError {
            return error.code
        } catch {
            return nil
        }
    }
}
