/// The largest numbers guestmode writes, in one place, so every way in (the
/// command line, bulk files, archives) refuses the same values and the
/// engine's checked arithmetic on stored values uses the same limits.
///
/// A stored value past one of these is one guestmode could not have written:
/// an archive carrying it is refused (exit 65) rather than imported.
package enum Bounds {
    /// One event's count: `track --count` and `track --from` take 1...10^9.
    package static let maximumEventCount: Int64 = 1_000_000_000

    /// A counter's total, and the sum of one user's counts of one action:
    /// the largest 64-bit integer, what both backends' integer columns
    /// hold. An addition that would pass it is refused (`count_overflow`,
    /// exit 65), never wrapped or turned into a floating-point value, so
    /// every total a store holds is one an archive may carry back.
    package static let maximumCounterTotal = Int64.max

    /// One meter use: `MeterAmount.largestRequest`, what `meter use` takes.
    package static var maximumMeterAmount: Double {
        Double(MeterAmount.largestRequest.millionths) / Double(MeterAmount.scale)
    }

    /// How many failed pushes an outbox entry may count: `backup push
    /// --max-attempts` takes at most 1000, and an entry is held (no longer
    /// tried) once it reaches its maximum, so no push counts past it.
    package static let maximumOutboxAttempts: Int64 = 1_000

    /// A store-assigned id (events, meter usage, plans, prompt outcomes,
    /// the conflict archive, journals): the stores number rows from 1 and
    /// never come near 2^53 - 1; an archive's ids past it are refused.
    package static let maximumRowID: Int64 = 9_007_199_254_740_991

    /// `total + count` for a counter, refused when the sum would pass
    /// ``maximumCounterTotal`` or either side is negative (a store changed
    /// outside guestmode).
    package static func addingToCounter(
        _ total: Int64, _ count: Int64, action: String, user: String
    ) throws -> Int64 {
        let (sum, overflow) = total.addingReportingOverflow(count)
        guard !overflow, total >= 0, count >= 0, sum <= maximumCounterTotal else {
            throw counterOverflow(action: action, user: user, total: "\(total)", adding: count)
        }
        return sum
    }

    /// The refusal of an addition that would carry a counter past its bound.
    package static func counterOverflow(
        action: String, user: String, total: String, adding count: Int64
    )
        -> GuestModeError
    {
        guard let stored = Int64(total), stored >= 0 else {
            // A total no addition of guestmode's could have left: a REAL or a negative number.
            return GuestModeError(
                .corruptStore,
                "the counter '\(action)' of user '\(user)' holds \(total), not a whole number from 0 to \(maximumCounterTotal): the store was changed outside guestmode; nothing was written"
            )
        }
        return GuestModeError(
            .countOverflow,
            "the counter '\(action)' of user '\(user)' holds \(stored); adding \(count) would pass \(maximumCounterTotal), the largest count a store holds; nothing was written"
        )
    }
}
