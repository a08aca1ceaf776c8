import Foundation
import Testing

@testable import GuestModeKit

/// `Timestamp.parse` computes times itself (it runs for every event and
/// archive row); libc's `timegm` is the reference it must agree with.
@Suite struct TimestampParsingTests {
    private func reference(
        _ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int, _ second: Int
    )
        -> TimeInterval?
    {
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let seconds = timegm(&parts)
        guard parts.tm_mday == Int32(day), parts.tm_mon == Int32(month - 1) else { return nil }
        return TimeInterval(seconds)
    }

    private func padded(_ value: Int, _ width: Int) -> String {
        String(repeating: "0", count: max(0, width - String(value).count)) + String(value)
    }

    @Test("every date and time parses to what timegm gives, and a day the month lacks is refused")
    func parseAgreesWithTimegm() {
        var generator = SystemRandomNumberGenerator()
        var cases: [(Int, Int, Int)] = [
            (1, 1, 1), (1970, 1, 1), (1969, 12, 31), (2000, 2, 29), (1900, 2, 29), (2024, 2, 29), (2026, 2, 29),
            (2026, 4, 31), (2026, 12, 31), (9999, 12, 31), (1600, 2, 29), (1700, 2, 29),
        ]
        for _ in 0..<5_000 {
            cases.append(
                (
                    Int.random(in: 1...9999, using: &generator), Int.random(in: 1...12, using: &generator),
                    Int.random(in: 1...31, using: &generator)
                ))
        }
        for (year, month, day) in cases {
            let hour = Int.random(in: 0...23, using: &generator)
            let minute = Int.random(in: 0...59, using: &generator)
            let second = Int.random(in: 0...59, using: &generator)
            let date = "\(padded(year, 4))-\(padded(month, 2))-\(padded(day, 2))"
            let time = "\(date)T\(padded(hour, 2)):\(padded(minute, 2)):\(padded(second, 2))"
            let expected = reference(year, month, day, hour, minute, second)
            #expect(Timestamp.parse(time + "Z")?.timeIntervalSince1970 == expected, "\(time)Z")
            #expect(Timestamp.parse(time + ".250Z")?.timeIntervalSince1970 == expected.map { $0 + 0.25 }, "\(time)")
            #expect(Timestamp.parse(time + "+02:30")?.timeIntervalSince1970 == expected.map { $0 - 9000 }, "\(time)")
            #expect(
                Timestamp.parse(date)?.timeIntervalSince1970 == reference(year, month, day, 0, 0, 0), "\(date)")
        }
        #expect(
            Timestamp.parse("2026-11-22T09:30:00.123456789Z")
                == reference(2026, 11, 22, 9, 30, 0).map {
                    Date(timeIntervalSince1970: $0).addingTimeInterval(123_456_789 / 1e9)
                })
        for refused in [
            "2026-02-30", "2026-13-01", "0000-01-01", "2026-11-22T24:00:00Z", "2026-11-22T09:30:00",
            "2026-11-22T09:30:00+15:00", " 2026-11-22", "2026-11-22T09:30:00.Z", "2026-11-22T09:30:00.1234567890Z",
        ] {
            #expect(Timestamp.parse(refused) == nil, "\(refused)")
        }
    }
}

/// `Timestamp.format` computes the date itself (it runs for every event a
/// log appends); libc's `gmtime_r` is the reference it must agree with.
@Suite struct TimestampFormattingTests {
    private func reference(_ milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000)
        let fraction = Int(milliseconds - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func padded(_ value: Int32, _ width: Int) -> String {
            String(repeating: "0", count: max(0, width - String(value).count)) + String(value)
        }
        return "\(padded(parts.tm_year + 1900, 4))-\(padded(parts.tm_mon + 1, 2))-\(padded(parts.tm_mday, 2))T"
            + "\(padded(parts.tm_hour, 2)):\(padded(parts.tm_min, 2)):\(padded(parts.tm_sec, 2))."
            + "\(padded(Int32(fraction), 3))Z"
    }

    @Test("days from year 1 to 9999, at times moving through the day, format as gmtime_r gives them")
    func formatAgreesWithGmtime() {
        var mismatches: [String] = []
        // A day about every 114 days across the whole range, at a time that moves through the day.
        var milliseconds: Int64 = -62_135_596_800_000
        while milliseconds <= 253_402_300_799_999 {
            let expected = reference(milliseconds)
            let formatted = Timestamp.format(Date(timeIntervalSince1970: TimeInterval(milliseconds) / 1000))
            if formatted != expected { mismatches.append("\(formatted) != \(expected)") }
            milliseconds += 9_876_543_211
        }
        for edge in [
            "0001-01-01T00:00:00.000Z", "1969-12-31T23:59:59.999Z", "1970-01-01T00:00:00.000Z",
            "2000-02-29T12:00:00.500Z", "2100-03-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z",
        ] {
            let date = Timestamp.parse(edge)!
            if Timestamp.format(date) != edge { mismatches.append("\(Timestamp.format(date)) != \(edge)") }
        }
        #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
        // Past the range a four-digit year can write: its nearest end.
        #expect(Timestamp.format(Date(timeIntervalSince1970: -1e15)) == "0001-01-01T00:00:00.000Z")
        #expect(Timestamp.format(Date(timeIntervalSince1970: 1e15)) == "9999-12-31T23:59:59.999Z")
    }
}
