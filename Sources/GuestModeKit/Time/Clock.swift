import Foundation

/// Timestamps cross the store and the command line as ISO 8601 in UTC with
/// milliseconds, a fixed-width form whose text order is its time order, so
/// SQL can compare and sort them as strings and SQLite's date functions read
/// them directly.
public enum Timestamp {
    /// The instants a four-digit year can write: 0001-01-01 to 9999-12-31.
    static let representable: ClosedRange<TimeInterval> = -62_135_596_800...253_402_300_799.999

    /// Dates outside years 1–9999 are written as the nearest end of that
    /// range, so no date, however it was computed, makes formatting trap.
    public static func format(_ date: Date) -> String {
        withText(of: date) { String(decoding: $0, as: UTF8.self) }
    }

    /// The length of every formatted time: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    package static let textLength = 24

    /// Calls `body` with the UTF-8 bytes `format` would return, written on
    /// the stack: a bulk writer binds them to a statement without making a
    /// string per row (two allocations, a fifth of an event's formatting).
    package static func withText<Result>(
        of date: Date, _ body: (UnsafeBufferPointer<UInt8>) throws -> Result
    ) rethrows -> Result {
        let interval = date.timeIntervalSince1970
        let clamped = interval.isNaN ? 0 : min(max(interval, representable.lowerBound), representable.upperBound)
        // Nearest, not down: a time parsed from its own text then moved by 1 ms must print 1 ms later,
        // whatever the binary fraction of the Double.
        let milliseconds = Int64((clamped * 1000).rounded())
        let seconds = Int(milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000)
        let fraction = Int(milliseconds - Int64(seconds) * 1000)
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let time = seconds - days * 86_400
        // By day number, not gmtime_r (a lock and the time zone's state), which was half of formatting a time.
        let (year, month, day) = CivilDate.fromDays(days)
        // Built by hand: String(format:) dominated bulk ingestion.
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: textLength) { bytes in
            var position = 0
            func put(_ byte: UInt8) {
                bytes[position] = byte
                position += 1
            }
            func digits(_ value: Int, _ width: Int) {
                var divisor = 1
                for _ in 1..<width { divisor *= 10 }
                var rest = value
                while divisor > 0 {
                    put(UInt8(48 + rest / divisor % 10))
                    rest %= divisor
                    divisor /= 10
                }
            }
            digits(year, 4)
            put(UInt8(ascii: "-"))
            digits(month, 2)
            put(UInt8(ascii: "-"))
            digits(day, 2)
            put(UInt8(ascii: "T"))
            digits(time / 3600, 2)
            put(UInt8(ascii: ":"))
            digits(time / 60 % 60, 2)
            put(UInt8(ascii: ":"))
            digits(time % 60, 2)
            put(UInt8(ascii: "."))
            digits(fraction, 3)
            put(UInt8(ascii: "Z"))
            return try body(UnsafeBufferPointer(rebasing: bytes[0..<position]))
        }
    }

    /// Accepts exactly `YYYY-MM-DD` (midnight UTC) and
    /// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`. Everything else is nil, so
    /// callers can say what they expected: no lenient rollover of
    /// `2026-02-30` into March, no `+99:00` offset, no surrounding spaces.
    public static func parse(_ text: String) -> Date? {
        text.withUTF8Bytes(parse(bytes:))
    }

    // Every event of a log and every row of an archive has its times parsed:
    // no allocation, no libc time functions.
    package static func parse(bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        guard bytes.count >= 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count, !range.isEmpty else { return nil }
            var value = 0
            for index in range {
                let digit = Int(bytes[index]) - 48
                guard (0...9).contains(digit) else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), year >= 1,
            (1...12).contains(month), (1...daysInMonth(month, of: year)).contains(day)
        else { return nil }
        if bytes.count == 10 { return civilTime(year, month, day, 0, 0, 0, offsetSeconds: 0) }
        guard bytes.count >= 20, bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"),
            bytes[16] == UInt8(ascii: ":"), let hour = number(11..<13), let minute = number(14..<16),
            let second = number(17..<19), hour < 24, minute < 60, second < 60
        else { return nil }
        var index = 19
        var fraction = 0.0
        if bytes[index] == UInt8(ascii: ".") {
            let start = index + 1
            var end = start
            while end < bytes.count, (48...57).contains(bytes[end]) { end += 1 }
            guard end > start, end - start <= 9, let digits = number(start..<end) else { return nil }
            fraction = Double(digits) / powersOfTen[end - start]
            index = end
        }
        guard index < bytes.count else { return nil }
        var offsetSeconds = 0
        if bytes[index] == UInt8(ascii: "Z") {
            guard index + 1 == bytes.count else { return nil }
        } else {
            let sign = bytes[index]
            guard sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-"), index + 6 == bytes.count,
                bytes[index + 3] == UInt8(ascii: ":"), let hours = number((index + 1)..<(index + 3)),
                let minutes = number((index + 4)..<(index + 6)), hours <= 14, minutes < 60
            else { return nil }
            offsetSeconds = (hours * 3600 + minutes * 60) * (sign == UInt8(ascii: "+") ? 1 : -1)
        }
        return civilTime(year, month, day, hour, minute, second, offsetSeconds: offsetSeconds)
            .addingTimeInterval(fraction)
    }

    /// 10^0 through 10^9, each exact as a Double.
    private static let powersOfTen: [Double] = [1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9]

    private static func daysInMonth(_ month: Int, of year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// The time of a valid proleptic Gregorian date and time, as `timegm` gives it.
    private static func civilTime(
        _ year: Int, _ month: Int, _ day: Int, _ hour: Int, _ minute: Int, _ second: Int, offsetSeconds: Int
    ) -> Date {
        let days = CivilDate.days(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second
        return Date(timeIntervalSince1970: TimeInterval(seconds - offsetSeconds))
    }

    /// Parses an ISO 8601 time, or throws ``GuestModeError`` `bad_time` naming `what` was being read.
    public static func parseOrThrow(_ text: String, what: String) throws -> Date {
        guard let date = parse(text) else {
            throw GuestModeError(
                .badTime, "\(what): '\(text)' is not an ISO 8601 time; write it like 2026-11-22T09:30:00Z")
        }
        return date
    }
}

/// Proleptic Gregorian dates and their day numbers since 1970-01-01, as Howard Hinnant's `civil_from_days`
/// and `days_from_civil` compute them ("chrono-Compatible Low-Level Date Algorithms").
enum CivilDate {
    static func fromDays(_ days: Int) -> (year: Int, month: Int, day: Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1_460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthFromMarch = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthFromMarch + 2) / 5 + 1
        let month = monthFromMarch < 10 ? monthFromMarch + 3 : monthFromMarch - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func days(year: Int, month: Int, day: Int) -> Int {
        let year = month <= 2 ? year - 1 : year
        let era = (year >= 0 ? year : year - 399) / 400
        let yearOfEra = year - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }
}
