/// The largest numbers guestmode writes, in one place, so every way in (the
/// command line, bulk files, archives) refuses the same values and the
/// engine's checked arithmetic on stored values uses the same limits.
///
/// A stored value past one of these is one guestmode could not have written:
/// an archive carrying it is refused (exit 65) rather than imported.
public enum Bounds {
    /// One event's count: `track --count` and `track --from` take 1...10^9.
    public static let maximumEventCount: Int64 = 1_000_000_000

    /// A counter's total, and the sum of one user's counts of one action:
    /// 2^53 - 1, the largest integer every JSON reader and a double hold
    /// exactly. Far below `Int64.max`, so one more event of the largest
    /// count can never overflow the 64-bit column: adding to a total is
    /// refused once it would pass this bound, never wrapped or turned into
    /// a floating-point value.
    public static let maximumCounterTotal: Int64 = 9_007_199_254_740_991

    /// One meter use: `MeterAmount.largestRequest`, what `meter use` takes.
    public static var maximumMeterAmount: Double {
        Double(MeterAmount.largestRequest.millionths) / Double(MeterAmount.scale)
    }

    /// How many failed pushes an outbox entry may count: `backup push
    /// --max-attempts` takes at most 1000, and an entry is held (no longer
    /// tried) once it reaches its maximum, so no push counts past it.
    public static let maximumOutboxAttempts: Int64 = 1_000

    /// A store-assigned id (events, meter usage, plans, prompt outcomes,
    /// the conflict archive, journals): the stores number rows from 1 and
    /// never come near 2^53 - 1; an archive's ids past it are refused.
    public static let maximumRowID: Int64 = 9_007_199_254_740_991
}
