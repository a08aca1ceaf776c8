import Foundation

/// Timestamps cross the store and the command line as ISO 8601 in UTC with
/// milliseconds, a fixed-width form whose text order is its time order, so
/// SQL can compare and sort them as strings and SQLite's date functions read
/// them directly.
public enum Timestamp {
    public static func format(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var seconds = time_t(milliseconds >= 0 ? milliseconds / 1000 : (milliseconds - 999) / 1000)
        let fraction = Int(milliseconds - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        // Built by hand: String(format:) dominated bulk ingestion.
        var bytes = [UInt8]()
        bytes.reserveCapacity(24)
        func digits(_ value: Int, _ width: Int) {
            var divisor = 1
            for _ in 1..<width { divisor *= 10 }
            var rest = value
            while divisor > 0 {
                bytes.append(UInt8(48 + rest / divisor % 10))
                rest %= divisor
                divisor /= 10
            }
        }
        digits(Int(parts.tm_year) + 1900, 4)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mon) + 1, 2)
        bytes.append(UInt8(ascii: "-"))
        digits(Int(parts.tm_mday), 2)
        bytes.append(UInt8(ascii: "T"))
        digits(Int(parts.tm_hour), 2)
        bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_min), 2)
        bytes.append(UInt8(ascii: ":"))
        digits(Int(parts.tm_sec), 2)
        bytes.append(UInt8(ascii: "."))
        digits(fraction, 3)
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Accepts `2026-11-22`, `2026-11-22T10:00:00Z`, fractional seconds and
    /// numeric offsets; anything else is nil so callers can say what they expected.
    public static func parse(_ text: String) -> Date? {
        if let date = parseUTC(text) { return date }
        let trimmed = text.trimmingCharacters(in: .whitespaces)
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

    /// The store's own form, `YYYY-MM-DDTHH:MM:SS[.fff]Z`, parsed without a
    /// formatter: event logs carry one per line and formatters are costly.
    private static func parseUTC(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.last == UInt8(ascii: "Z"), bytes[4] == UInt8(ascii: "-"),
            bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"),
            bytes[16] == UInt8(ascii: ":")
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                let digit = Int(bytes[index]) - 48
                guard (0...9).contains(digit) else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var fraction = 0.0
        if bytes.count > 20 {
            guard bytes[19] == UInt8(ascii: "."), bytes.count > 21, let digits = number(20..<(bytes.count - 1)) else {
                return nil
            }
            fraction = Double(digits) / pow(10, Double(bytes.count - 21))
        } else if bytes.count != 20 {
            return nil
        }
        var parts = tm()
        parts.tm_year = Int32(year - 1900)
        parts.tm_mon = Int32(month - 1)
        parts.tm_mday = Int32(day)
        parts.tm_hour = Int32(hour)
        parts.tm_min = Int32(minute)
        parts.tm_sec = Int32(second)
        let seconds = timegm(&parts)
        guard parts.tm_mday == Int32(day) else { return nil }
        return Date(timeIntervalSince1970: TimeInterval(seconds) + fraction)
    }

    public static func parseOrThrow(_ text: String, what: String) throws -> Date {
        guard let date = parse(text) else {
            throw GuestModeError.usage(
                "\(what): '\(text)' is not an ISO 8601 time; write it like 2026-11-22T09:30:00Z", code: "bad_time")
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
        // Fixed-length units are plain arithmetic in UTC; only months and
        // years need the calendar, which is costly when a replay asks for
        // cooldowns hundreds of thousands of times.
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
