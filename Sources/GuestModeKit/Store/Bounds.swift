/// The bounds of every count guestmode stores. A value is refused where it
/// enters (arguments, bulk files, archives, requests) when the command line
/// could not have written it, and arithmetic on stored values is checked
/// against these bounds, so a store never holds a count that overflowed or
/// turned into a floating-point value (SQLite turns an overflowing integer
/// sum into a REAL; PostgreSQL refuses it with "bigint out of range").
public enum Bounds {
    /// The largest `count` one event may carry (`track --count`, a log
    /// line's `count`): 10^9. Documented in guestmode-track(1).
    public static let maximumEventCount = 1_000_000_000

    /// The largest total a counter may reach: the largest 64-bit integer,
    /// what both backends' integer columns hold. An event that would carry
    /// a counter past it is refused (`count_overflow`, exit 65).
    public static let maximumCounterTotal = Int64.max

    /// `total + count` for a counter, refused when the sum would pass
    /// ``maximumCounterTotal`` or either side is negative (a store changed
    /// outside guestmode).
    public static func addingToCounter(
        _ total: Int64, _ count: Int64, action: String, user: String
    ) throws -> Int64 {
        let (sum, overflow) = total.addingReportingOverflow(count)
        guard !overflow, total >= 0, count >= 0, sum <= maximumCounterTotal else {
            throw counterOverflow(action: action, user: user, total: "\(total)", adding: count)
        }
        return sum
    }

    /// The refusal of an addition that would carry a counter past its bound.
    public static func counterOverflow(
        action: String, user: String, total: String, adding count: Int64
    )
        -> GuestModeError
    {
        guard let stored = Int64(total), stored >= 0 else {
            // A total no addition of guestmode's could have left: a REAL or a negative number.
            return GuestModeError.badData(
                "the counter '\(action)' of user '\(user)' holds \(total), not a whole number from 0 to \(maximumCounterTotal): the store was changed outside guestmode; nothing was written (run 'guestmode db check')",
                code: .corruptStore)
        }
        return GuestModeError.badData(
            "the counter '\(action)' of user '\(user)' holds \(stored); adding \(count) would pass \(maximumCounterTotal), the largest count a store holds; nothing was written",
            code: .countOverflow)
    }
}
