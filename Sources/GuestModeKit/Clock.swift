import Foundation

/// Timestamps cross the store and the command line as ISO 8601 in UTC with
/// milliseconds, a fixed-width form whose text order is its time order, so
/// SQL can compare and sort them as strings and SQLite's date functions read
/// them directly.
public enum Timestamp {
    /// Computed with integer civil-calendar arithmetic rather than a
    /// `Calendar`: replays format and parse times hundreds of thousands of
    /// times, and UTC needs no time-zone rules.
    public static func format(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        let (days, millisecondOfDay) = milliseconds.floorDivided(by: 86_400_000)
        let (year, month, day) = CivilDate.fromDays(days)
        let secondOfDay = millisecondOfDay / 1000
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
            Int(year), Int(month), Int(day), Int(secondOfDay / 3600), Int(secondOfDay / 60 % 60),
            Int(secondOfDay % 60), Int(millisecondOfDay % 1000))
    }

    /// Accepts `2026-11-22`, `2026-11-22T10:00:00Z`, fractional seconds and
    /// numeric offsets; anything else is nil so callers can say what they expected.
    public static func parse(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let date = parseCanonical(trimmed) { return date }
        let withFraction = ISO8601DateFormatter()
        withFraction.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = withFraction.date(from: trimmed) { return date }
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        if let date = plain.date(from: trimmed) { return date }
        let dayOnly = ISO8601DateFormatter()
        dayOnly.formatOptions = [.withFullDate]
        if trimmed.count == 10, let date = dayOnly.date(from: trimmed) { return date }
        return nil
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` and `YYYY-MM-DDTHH:MM:SS.mmmZ`, the forms the
    /// store writes and logs mostly hold, read digit by digit; nil for
    /// anything else, which the general parser then handles.
    static func parseCanonical(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 20 || bytes.count == 24, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            bytes[bytes.count - 1] == UInt8(ascii: "Z"), bytes.count == 20 || bytes[19] == UInt8(ascii: ".")
        else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for index in range {
                let digit = Int64(bytes[index]) - 48
                guard (0...9).contains(digit) else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            let millisecond = bytes.count == 24 ? number(20..<23) : 0,
            (1...12).contains(month), (1...CivilDate.daysIn(month: month, year: year)).contains(day),
            hour < 24, minute < 60, second < 60
        else { return nil }
        let days = CivilDate.toDays(year: year, month: month, day: day)
        let milliseconds = ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millisecond
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    public static func parseOrThrow(_ text: String, what: String) throws -> Date {
        guard let date = parse(text) else {
            throw GuestModeError.usage(
                "\(what): '\(text)' is not an ISO 8601 time; write it like 2026-11-22T09:30:00Z")
        }
        return date
    }
}

/// A span of time written as a number and a unit: `90s`, `15m`, `24h`,
/// `3d`, `2w`, `1 month`, `1y`. Months and years are calendar units, so a
/// one-month trial granted on 31 January ends on the last day of February.
public struct TimeSpan: Codable, Sendable, Equatable, CustomStringConvertible {
    public enum Unit: String, Codable, Sendable, CaseIterable {
        case seconds, minutes, hours, days, weeks, months, years
    }

    public var amount: Int
    public var unit: Unit

    public init(amount: Int, unit: Unit) {
        self.amount = amount
        self.unit = unit
    }

    public init?(parsing text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces).lowercased()
        let digits = trimmed.prefix(while: \.isNumber)
        guard let amount = Int(digits), amount >= 0 else { return nil }
        let suffix = trimmed.dropFirst(digits.count).trimmingCharacters(in: .whitespaces)
        let units: [String: Unit] = [
            "s": .seconds, "sec": .seconds, "second": .seconds, "seconds": .seconds,
            "m": .minutes, "min": .minutes, "minute": .minutes, "minutes": .minutes,
            "h": .hours, "hour": .hours, "hours": .hours,
            "d": .days, "day": .days, "days": .days,
            "w": .weeks, "week": .weeks, "weeks": .weeks,
            "mo": .months, "month": .months, "months": .months,
            "y": .years, "year": .years, "years": .years,
        ]
        guard let unit = units[suffix] else { return nil }
        self.init(amount: amount, unit: unit)
    }

    public var description: String {
        let short: [Unit: String] = [.seconds: "s", .minutes: "m", .hours: "h", .days: "d", .weeks: "w"]
        if let suffix = short[unit] { return "\(amount)\(suffix)" }
        let word = unit == .months ? "month" : "year"
        return "\(amount) \(word)\(amount == 1 ? "" : "s")"
    }

    public func added(to date: Date) -> Date {
        // Fixed-length units are plain arithmetic in UTC; only months and years need the calendar.
        let fixedSeconds: Double? = switch unit {
        case .seconds: 1
        case .minutes: 60
        case .hours: 3600
        case .days: 86_400
        case .weeks: 604_800
        case .months, .years: nil
        }
        if let fixedSeconds { return date.addingTimeInterval(Double(amount) * fixedSeconds) }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        let component: Calendar.Component
        switch unit {
        case .seconds: component = .second
        case .minutes: component = .minute
        case .hours: component = .hour
        case .days: component = .day
        case .weeks: component = .weekOfYear
        case .months: component = .month
        case .years: component = .year
        }
        return calendar.date(byAdding: component, value: amount, to: date) ?? date
    }

    public func subtracted(from date: Date) -> Date {
        TimeSpan(amount: -amount, unit: unit).added(to: date)
    }

    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let span = TimeSpan(parsing: text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "not a time span: \(text)"))
        }
        self = span
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}


/// Days since 1970-01-01 in the proleptic Gregorian calendar and back
/// (Howard Hinnant's `days_from_civil` and `civil_from_days`).
enum CivilDate {
    static func toDays(year: Int64, month: Int64, day: Int64) -> Int64 {
        let shiftedYear = month <= 2 ? year - 1 : year
        let era = (shiftedYear >= 0 ? shiftedYear : shiftedYear - 399) / 400
        let yearOfEra = shiftedYear - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func fromDays(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

extension Int64 {
    /// Quotient and remainder rounded towards negative infinity, so times
    /// before 1970 split into a day and a non-negative time of day.
    func floorDivided(by divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let remainder = self % divisor
        return remainder < 0 ? (self / divisor - 1, remainder + divisor) : (self / divisor, remainder)
    }
}
