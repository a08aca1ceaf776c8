import Foundation

/// An exact amount of a meter's unit: a whole number of millionths.
///
/// Meters add up many small uses (12.2 + 19.9 + 12.9 + 15 × 1 minutes) and a
/// gate compares the sum with an allowance, so binary floating point is the
/// wrong tool: its sum reads 59.99999999999999, which is neither 60 used nor
/// exhausted. Millionths in an `Int64` add exactly, compare exactly and print
/// as the decimal that was written (`12.2`, `60`, `0`). Arithmetic never
/// traps: sums report overflow instead.
public struct MeterAmount: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// Digits after the decimal point an amount may have.
    public static let fractionDigits = 6
    /// Millionths per unit.
    public static let scale: Int64 = 1_000_000
    /// The largest amount one use, check or allowance written by hand may
    /// name: 999,999,999.999999 units. Fifteen significant digits, so the
    /// amount also survives a trip through a binary double exactly.
    public static let largestRequest = MeterAmount(millionths: 999_999_999_999_999)
    /// The largest amount a sum can reach.
    public static let largest = MeterAmount(millionths: .max)
    /// Nothing.
    public static let zero = MeterAmount(millionths: 0)

    /// The amount in millionths of the unit.
    public let millionths: Int64

    /// An amount of `millionths` millionths of a unit.
    public init(millionths: Int64) {
        self.millionths = millionths
    }

    /// A whole number of units; saturates at `largest` (and at its negative).
    public init(units: Int) {
        let (product, overflow) = Int64(units).multipliedReportingOverflow(by: MeterAmount.scale)
        millionths = overflow ? (units < 0 ? -Int64.max : .max) : product
    }

    /// The nearest amount to a double, for values that come from binary
    /// floating point (profile allowances, thresholds): a double read from a
    /// decimal with at most six fractional digits and fifteen significant
    /// digits converts back to exactly that decimal. Clamped to
    /// `0...largest`; NaN is zero.
    public init(approximating value: Double) {
        guard value > 0 else {
            millionths = 0
            return
        }
        let scaled = (value * Double(MeterAmount.scale)).rounded()
        // 2^63 is the first double past Int64.max.
        millionths = scaled >= 9_223_372_036_854_775_808.0 ? .max : Int64(scaled)
    }

    /// True for exactly zero.
    public var isZero: Bool { millionths == 0 }
    /// True for more than zero.
    public var isPositive: Bool { millionths > 0 }

    /// A binary approximation, for display arithmetic only (percentages).
    public var doubleValue: Double { Double(millionths) / Double(MeterAmount.scale) }

    /// The exact sum, or nil when it would not fit.
    public func adding(_ other: MeterAmount) -> MeterAmount? {
        let (sum, overflow) = millionths.addingReportingOverflow(other.millionths)
        return overflow ? nil : MeterAmount(millionths: sum)
    }

    /// What is left of `self` after `other`, never below zero.
    public func remaining(after other: MeterAmount) -> MeterAmount {
        let (difference, overflow) = millionths.subtractingReportingOverflow(other.millionths)
        if overflow { return other.millionths < 0 ? .largest : .zero }
        return MeterAmount(millionths: max(0, difference))
    }

    /// A sum a store added up in two parts that cannot overflow in SQL (the
    /// whole units and the leftover millionths of each use, each use at most
    /// `largestRequest`); saturates at `largest`, as a meter's usage does.
    public static func summed(units: Int64, millionths: Int64) -> MeterAmount {
        let (whole, overflow) = units.multipliedReportingOverflow(by: scale)
        guard !overflow, units >= 0, millionths >= 0 else { return .largest }
        return MeterAmount(millionths: whole).adding(MeterAmount(millionths: millionths)) ?? .largest
    }

    /// The exact sum of `amounts`, or nil when it would not fit.
    public static func sum<Amounts: Sequence>(_ amounts: Amounts) -> MeterAmount? where Amounts.Element == MeterAmount {
        var total = MeterAmount.zero
        for amount in amounts {
            guard let next = total.adding(amount) else { return nil }
            total = next
        }
        return total
    }

    /// Compares amounts exactly.
    public static func < (lhs: MeterAmount, rhs: MeterAmount) -> Bool { lhs.millionths < rhs.millionths }

    /// Plain decimal notation without trailing zeros: `60`, `0`, `12.2`, `0.000001`.
    public var description: String { withText { String(decoding: $0, as: UTF8.self) } }

    /// Calls `body` with the UTF-8 bytes `description` returns, written on the stack: a served answer writes its
    /// amounts without making a string of each (bench/results.md, "Serving, round 20").
    package func withText<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        // A sign, 13 whole digits of `Int64.max` millionths, a point and 6 fraction digits.
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { buffer in
            var end = buffer.count
            func prepend(_ byte: UInt8) {
                end -= 1
                buffer[end] = byte
            }
            let magnitude = millionths.magnitude
            var whole = magnitude / UInt64(MeterAmount.scale)
            var fraction = magnitude % UInt64(MeterAmount.scale)
            if fraction > 0 {
                var digits = MeterAmount.fractionDigits
                while fraction % 10 == 0 {
                    fraction /= 10
                    digits -= 1
                }
                for _ in 0..<digits {
                    prepend(UInt8(ascii: "0") + UInt8(fraction % 10))
                    fraction /= 10
                }
                prepend(UInt8(ascii: "."))
            }
            repeat {
                prepend(UInt8(ascii: "0") + UInt8(whole % 10))
                whole /= 10
            } while whole > 0
            if millionths < 0 { prepend(UInt8(ascii: "-")) }
            return try body(UnsafeBufferPointer(rebasing: buffer[end...]))
        }
    }

    /// The amount as a `Decimal`, exactly.
    public var decimalValue: Decimal {
        Decimal(sign: .plus, exponent: -MeterAmount.fractionDigits, significand: Decimal(millionths))
    }
}

// MARK: - Parsing

extension MeterAmount {
    /// Why a text is not an amount.
    public struct ParseFailure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The amount in decimal, without trailing zeros (`1.5`, `20`).
        public var description: String
    }

    /// Reads an amount a person or program wrote: plain decimal notation
    /// (`12.2`, `15`, `0.5`), finite, greater than zero, at most six digits
    /// after the point and at most `largestRequest`. Exponents, hexadecimal,
    /// signs, `nan` and `inf` are refused rather than guessed at. This is the
    /// one place amounts are parsed.
    public init(parsing text: String) throws(ParseFailure) {
        if text.hasPrefix("-"), (try? MeterAmount.parseNonNegative(String(text.dropFirst()))) != nil {
            throw ParseFailure(
                description: "the amount must be positive, not '\(text)'; usage is only ever added, never taken back")
        }
        let amount = try MeterAmount.parseNonNegative(text)
        guard amount.isPositive else {
            throw ParseFailure(description: "the amount must be greater than zero, not '\(text)'")
        }
        self = amount
    }

    /// Like `init(parsing:)`, but zero is allowed.
    static func parseNonNegative(_ text: String) throws(ParseFailure) -> MeterAmount {
        let plain = "write a plain decimal number such as 12.2, 15 or 0.5"
        guard !text.isEmpty else { throw ParseFailure(description: "the amount is empty; \(plain)") }
        let parts = text.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let wholeText = parts[0]
        let fractionText = parts.count > 1 ? parts[1] : nil
        let isDigit: (Character) -> Bool = { ("0"..."9").contains($0) }
        guard !wholeText.isEmpty, wholeText.allSatisfy(isDigit),
            fractionText.map({ !$0.isEmpty && $0.allSatisfy(isDigit) }) ?? true
        else {
            throw ParseFailure(description: "'\(text)' is not an amount; \(plain)")
        }
        if let fractionText, fractionText.count > fractionDigits {
            throw ParseFailure(
                description:
                    "'\(text)' has more than \(fractionDigits) digits after the decimal point; amounts are exact to a millionth"
            )
        }
        let significant = wholeText.drop { $0 == "0" }
        let largestWhole = largestRequest.millionths / scale
        guard significant.count <= String(largestWhole).count,
            let whole = Int64(significant.isEmpty ? "0" : significant),
            whole <= largestWhole
        else {
            throw ParseFailure(description: "'\(text)' is too large; an amount is at most \(largestRequest)")
        }
        // Filled in Swift, not with NSString's padding, whose first use costs a command about 1 M instructions
        // of first-time generic instantiations (bench/results.md, "Start-up"). At most `fractionDigits` long, as checked.
        let written = fractionText.map(String.init) ?? ""
        let padded = written + String(repeating: "0", count: fractionDigits - written.count)
        let fraction = Int64(padded) ?? 0
        return MeterAmount(millionths: whole * scale + fraction)
    }
}

// MARK: - Literals and coding

extension MeterAmount: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral {
    /// A whole number of units written as a literal.
    public init(integerLiteral value: Int) { self.init(units: value) }
    /// For constants in code and tests; rounds to the nearest millionth.
    public init(floatLiteral value: Double) { self.init(approximating: value) }
}

/// Amounts are JSON numbers in plain notation (`60`, `12.2`), never a
/// binary approximation such as `59.99999999999999`.
extension MeterAmount: Codable {
    /// Reads a JSON number exactly, without going through binary floating point.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let decimal = try container.decode(Decimal.self)
        do {
            self = try MeterAmount.parseNonNegative("\(decimal)")
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    /// Writes the amount as a JSON number, exactly.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(decimalValue)
    }
}
