import Foundation

/// A span of time: the one duration type of every option and profile field.
///
/// Written either as an ISO 8601 duration (`P1M`, `P1Y`, `P7D`, `P2W`,
/// `PT24H`, `PT30M`, `P1Y2M10DT2H30M`) or as one or more numbers with a unit
/// (`90s`, `30m`, `24h`, `7d`, `2w`, `1 week`, `1 month`, `2 months`,
/// `1 year`, `1h30m`). Months and years are calendar units in UTC, so a
/// one-month trial granted on 31 January ends on the last day of February,
/// and one granted on 22 November ends on 22 December.
///
/// Refused, with a message naming the accepted forms (see `parse(_:)`): the
/// empty text, a unit-less number, fractions, signs, spans of zero length,
/// and `M` alone after a number (`1M`), which reads as a month to some and a
/// minute to others.
public struct TimeSpan: Codable, Sendable, Hashable, CustomStringConvertible {
    /// A unit a span is counted in.
    public enum Unit: String, Codable, Sendable, CaseIterable, Comparable {
        case seconds, minutes, hours, days, weeks, months, years

        /// Largest first, the order spans are written in.
        var rank: Int {
            switch self {
            case .years: 0
            case .months: 1
            case .weeks: 2
            case .days: 3
            case .hours: 4
            case .minutes: 5
            case .seconds: 6
            }
        }

        /// Orders units from the largest.
        public static func < (lhs: Unit, rhs: Unit) -> Bool { lhs.rank > rhs.rank }

        /// Seconds in one unit; nil for the calendar units.
        var fixedSeconds: Int? {
            switch self {
            case .seconds: 1
            case .minutes: 60
            case .hours: 3600
            case .days: 86_400
            case .weeks: 604_800
            case .months, .years: nil
            }
        }

        /// Seconds in one unit, months and years at their longest (31 and
        /// 366 days), for checking bounds only.
        var longestSeconds: Int { fixedSeconds ?? (self == .months ? 2_678_400 : 31_622_400) }
    }

    /// A number of one unit.
    public struct Component: Codable, Sendable, Hashable {
        /// How many.
        public var amount: Int
        /// Of which unit.
        public var unit: Unit
        /// `amount` of `unit`.
        public init(amount: Int, unit: Unit) {
            self.amount = amount
            self.unit = unit
        }
    }

    /// At most one component per unit, largest unit first, none zero
    /// (except the single component of a zero span built in code).
    public private(set) var components: [Component]

    /// A span of `amount` of one unit, such as 7 days.
    public init(amount: Int, unit: Unit) {
        components = [Component(amount: amount, unit: unit)]
    }

    /// Components in any order; equal units are added. Nil when two
    /// amounts of one unit overflow.
    public init?(components parts: [Component]) {
        // One sum per unit by its rank, not a dictionary keyed by unit: the dictionary's first use asked
        // at run time whether a unit is hashable, a scan of the binary's conformance records on every
        // command's start-up (bench/results.md, "Start-up").
        var sums = [Int](repeating: 0, count: Unit.allCases.count)
        for part in parts {
            let (sum, overflow) = sums[part.unit.rank].addingReportingOverflow(part.amount)
            if overflow { return nil }
            sums[part.unit.rank] = sum
        }
        let byRank = Unit.allCases.sorted { $0.rank < $1.rank }
        components = byRank.filter { sums[$0.rank] != 0 }.map { Component(amount: sums[$0.rank], unit: $0) }
        if components.isEmpty { components = [Component(amount: 0, unit: parts.first?.unit ?? .seconds)] }
    }

    /// The amount of a single-unit span (`24h` → 24); for a span of several
    /// units, the amount of its largest.
    public var amount: Int { components.first?.amount ?? 0 }
    /// The unit of a single-unit span; for a span of several units, its largest.
    public var unit: Unit { components.first?.unit ?? .seconds }

    /// True for a span of no length.
    public var isZero: Bool { components.allSatisfy { $0.amount == 0 } }

    /// The span in whole days when it is made of days and weeks only (`90d`, `2w`); nil for hours or
    /// calendar months and years, whose length in days depends on when they start.
    public var wholeDays: Int? {
        guard components.allSatisfy({ $0.unit == .days || $0.unit == .weeks }) else { return nil }
        return components.reduce(0) { $0 + $1.amount * ($1.unit == .weeks ? 7 : 1) }
    }

    /// The accepted forms, as every refusal names them.
    public static let acceptedForms =
        "write an ISO 8601 duration (P1M, P1Y, P7D, PT24H, PT30M, P1DT12H) or a number and a unit (30m, 24h, 7d, 2w, 1 month, 2 months, 1 year)"

    /// The longest span accepted, about 10,000 years: far beyond any trial,
    /// cooldown or inactivity, and well inside what dates can hold.
    public static let largestSeconds = 315_576_000_000

    /// Why a text is not a duration.
    public enum Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        case empty
        case ambiguousMonthOrMinute(String)
        case notADuration(String)
        case zero(String)
        case negative(String)
        case tooLong(String)

        private static func ambiguity(_ text: String) -> String {
            let number = String(text.prefix(while: { $0.isNumber }))
            let months = number == "1" ? "1 month" : "\(number) months"
            return
                "'\(text)' is ambiguous (M may mean months or minutes); write P\(number)M or \(months) for months, PT\(number)M or \(number)m for minutes"
        }

        /// The span in its short form, such as `7d` or `1h30m`.
        public var description: String {
            switch self {
            case .empty:
                "the duration is empty; \(TimeSpan.acceptedForms)"
            case .ambiguousMonthOrMinute(let text):
                Self.ambiguity(text)
            case .notADuration(let text):
                "'\(text)' is not a duration; \(TimeSpan.acceptedForms)"
            case .zero(let text):
                "'\(text)' is a duration of zero; give a positive duration (e.g. 7d, P1M)"
            case .negative(let text):
                "'\(text)' is negative; give a positive duration (e.g. 7d, P1M)"
            case .tooLong(let text):
                "'\(text)' is longer than 10,000 years; give a shorter duration"
            }
        }
    }

    /// Parses every accepted form; zero and negative spans are refused.
    public static func parse(_ text: String) -> Result<TimeSpan, Refusal> {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty { return .failure(.empty) }
        if trimmed.hasPrefix("-") { return .failure(.negative(text)) }
        let parsed: Result<TimeSpan, Refusal>
        if let first = trimmed.first, first == "P" || first == "p" {
            parsed = parseISO(trimmed, original: text)
        } else {
            parsed = parseShort(trimmed, original: text)
        }
        guard case .success(let span) = parsed else { return parsed }
        if span.isZero { return .failure(.zero(text)) }
        var total = 0
        for part in span.components {
            let (seconds, overflow) = part.amount.multipliedReportingOverflow(by: part.unit.longestSeconds)
            let (sum, overflowSum) = total.addingReportingOverflow(seconds)
            if overflow || overflowSum || sum > largestSeconds { return .failure(.tooLong(text)) }
            total = sum
        }
        return .success(span)
    }

    /// A positive span, or nil (see `parse(_:)` for why).
    public init?(parsing text: String) {
        guard case .success(let span) = TimeSpan.parse(text) else { return nil }
        self = span
    }

    /// A positive span, or a usage error naming `what` and the accepted forms.
    public static func parseOrThrow(_ text: String, what: String) throws -> TimeSpan {
        switch parse(text) {
        case .success(let span): return span
        case .failure(let refusal):
            throw GuestModeError(.badDuration, "\(what): \(refusal)")
        }
    }

    /// `P[nY][nM][nW][nD][T[nH][nM][nS]]`, whole numbers only.
    private static func parseISO(_ text: String, original: String) -> Result<TimeSpan, Refusal> {
        let body = text.dropFirst().uppercased()
        var parts: [Component] = []
        var inTime = false
        var digits = ""
        var sawDesignator = false
        var lastRank = -1
        for character in body {
            if character.isASCII, character.isNumber {
                digits.append(character)
                continue
            }
            if character == "T" {
                guard !inTime, digits.isEmpty else { return .failure(.notADuration(original)) }
                inTime = true
                continue
            }
            let unit: Unit? =
                switch (character, inTime) {
                case ("Y", false): .years
                case ("M", false): .months
                case ("W", false): .weeks
                case ("D", false): .days
                case ("H", true): .hours
                case ("M", true): .minutes
                case ("S", true): .seconds
                default: nil
                }
            guard let unit, !digits.isEmpty, digits.count <= 12, let amount = Int(digits), unit.rank > lastRank
            else { return .failure(.notADuration(original)) }
            lastRank = unit.rank
            parts.append(Component(amount: amount, unit: unit))
            digits = ""
            sawDesignator = true
        }
        guard digits.isEmpty, sawDesignator, !(inTime && parts.last.map { $0.unit.rank < Unit.hours.rank } ?? true)
        else { return .failure(.notADuration(original)) }
        guard let span = TimeSpan(components: parts) else { return .failure(.tooLong(original)) }
        return .success(span)
    }

    private static let shortUnits: [String: Unit] = [
        "s": .seconds, "sec": .seconds, "secs": .seconds, "second": .seconds, "seconds": .seconds,
        "m": .minutes, "min": .minutes, "mins": .minutes, "minute": .minutes, "minutes": .minutes,
        "h": .hours, "hr": .hours, "hrs": .hours, "hour": .hours, "hours": .hours,
        "d": .days, "day": .days, "days": .days,
        "w": .weeks, "wk": .weeks, "wks": .weeks, "week": .weeks, "weeks": .weeks,
        "mo": .months, "month": .months, "months": .months,
        "y": .years, "yr": .years, "yrs": .years, "year": .years, "years": .years,
    ]

    /// One or more `<number>[ ]<unit>` groups: `7d`, `1 month`, `1h30m`,
    /// `1 year 2 months`.
    private static func parseShort(_ text: String, original: String) -> Result<TimeSpan, Refusal> {
        var rest = Substring(text)
        var parts: [Component] = []
        while !rest.isEmpty {
            let digits = rest.prefix(while: { $0.isASCII && $0.isNumber })
            guard !digits.isEmpty, digits.count <= 12, let amount = Int(digits) else {
                return .failure(.notADuration(original))
            }
            rest = rest.dropFirst(digits.count).drop(while: { $0 == " " })
            let word = rest.prefix(while: { $0.isLetter })
            // `1M` means a month to some and a minute to others.
            if word == "M" {
                return .failure(
                    parts.isEmpty && rest.count == 1 ? .ambiguousMonthOrMinute("\(digits)M") : .notADuration(original))
            }
            guard let unit = shortUnits[word.lowercased()] else { return .failure(.notADuration(original)) }
            parts.append(Component(amount: amount, unit: unit))
            rest = rest.dropFirst(word.count).drop(while: { $0 == " " || $0 == "," })
        }
        guard !parts.isEmpty, Set(parts.map(\.unit)).count == parts.count else {
            return .failure(.notADuration(original))
        }
        guard let span = TimeSpan(components: parts) else { return .failure(.tooLong(original)) }
        return .success(span)
    }

    /// The short form, parseable again: `24h`, `1 month`, `1 year 2 months 3d`.
    public var description: String {
        let short: [Unit: String] = [.seconds: "s", .minutes: "m", .hours: "h", .days: "d", .weeks: "w"]
        return components.map { part in
            if let suffix = short[part.unit] { return "\(part.amount)\(suffix)" }
            let word = part.unit == .months ? "month" : "year"
            return "\(part.amount) \(word)\(part.amount == 1 ? "" : "s")"
        }.joined(separator: " ")
    }

    /// The span as an ISO 8601 duration: `P1M`, `PT24H`, `P1Y2M3DT4H`.
    public var iso8601: String {
        var date = "P"
        var time = ""
        for part in components {
            switch part.unit {
            case .years: date += "\(part.amount)Y"
            case .months: date += "\(part.amount)M"
            case .weeks: date += "\(part.amount)W"
            case .days: date += "\(part.amount)D"
            case .hours: time += "\(part.amount)H"
            case .minutes: time += "\(part.amount)M"
            case .seconds: time += "\(part.amount)S"
            }
        }
        return time.isEmpty ? date : date + "T" + time
    }

    /// `date` moved forward by the span: years and months by the UTC
    /// calendar (the day clamped to the month's last), then the fixed units.
    public func added(to date: Date) -> Date { moved(date, by: 1) }

    /// `date` moved back by the span, the same way.
    public func subtracted(from date: Date) -> Date { moved(date, by: -1) }

    private func moved(_ date: Date, by sign: Int) -> Date {
        // Fixed-length units are plain arithmetic in UTC; only months and
        // years need the calendar, which is costly when a replay asks for
        // cooldowns hundreds of thousands of times.
        var months = 0
        var seconds = 0.0
        for part in components {
            switch part.unit {
            case .years: months += part.amount * 12
            case .months: months += part.amount
            default: seconds += Double(part.amount) * Double(part.unit.fixedSeconds ?? 0)
            }
        }
        var result = date
        if months != 0 {
            var calendar = Calendar(identifier: .gregorian)
            if let utc = TimeZone(identifier: "UTC") { calendar.timeZone = utc }
            result = calendar.date(byAdding: .month, value: sign * months, to: result) ?? result
        }
        return result.addingTimeInterval(Double(sign) * seconds)
    }

    /// Reads a span written in any accepted form.
    public init(from decoder: Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let span = TimeSpan(parsing: text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "not a time span: \(text)"))
        }
        self = span
    }

    /// Writes the span in its short form.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// A time written relative to another: a sign and a duration (`+30d`,
/// `-1h`, `+P1M`).
package enum RelativeTime {
    /// The time `text` names relative to `reference`, nil when `text` has no
    /// leading sign; a sign followed by something that is not a positive
    /// duration is refused.
    package static func resolve(_ text: String, from reference: Date) -> Result<Date, TimeSpan.Refusal>? {
        guard let sign = text.first, sign == "+" || sign == "-" else { return nil }
        switch TimeSpan.parse(String(text.dropFirst())) {
        case .success(let span):
            return .success(sign == "+" ? span.added(to: reference) : span.subtracted(from: reference))
        case .failure(let refusal): return .failure(refusal)
        }
    }
}
