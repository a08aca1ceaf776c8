import Foundation

/// The usage ledger and the fired warnings of one transaction (see
/// `StoreTransaction`).
package protocol MeterRows {
    /// The user's usage of `meter` recorded at or after `start` (all of it
    /// when nil), added up exactly. A total past what an amount can hold,
    /// or a stored amount past it, reads as `MeterAmount.largest`.
    func meterUsage(of userID: String, meter: String, since start: Date?) throws -> MeterAmount

    /// The amount of the user's use of `meter` recorded under the
    /// idempotency key `key`, in any period; nil when there is none.
    func meterUseAmount(of userID: String, meter: String, key: String) throws -> MeterAmount?

    /// Records one use of `meter` at `time`, under `key` when one is given.
    func appendMeterUse(of userID: String, meter: String, amount: MeterAmount, at time: Date, key: String?) throws

    /// Stores that the warning at `percent` of `meter` fired at `time` in the
    /// period starting at `periodStart` (nil: the meter never resets), unless
    /// that warning of that period is stored already: then nothing changes
    /// and the result is false.
    func addFiredWarning(
        of userID: String, meter: String, periodStart: Date?, percent: Double, level: MeterLevel, at time: Date
    ) throws -> Bool
}
