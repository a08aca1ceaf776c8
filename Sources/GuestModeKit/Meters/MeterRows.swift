import Foundation

/// The usage ledger of one transaction (see `StoreTransaction`).
public protocol MeterRows {
    /// The user's usage of `meter` recorded at or after `start` (all of it
    /// when nil), added up exactly. A total past what an amount can hold,
    /// or a stored amount past it, reads as `MeterAmount.largest`.
    func meterUsage(of userID: String, meter: String, since start: Date?) throws -> MeterAmount
}

extension StoreTransaction {
    /// The status of `meter` for `user` now: its usage in the current period
    /// against the allowance of the tier in force.
    func meterStatus(of user: User, meter: Meter, profile: Profile, now: Date) throws -> MeterStatus {
        let level = try tier(of: user, profile: profile, now: now)
        let used = try meterUsage(of: user.id, meter: meter.name, since: meter.reset.periodStart(containing: now))
        return profile.meterStatus(meter, tier: level, used: used, now: now)
    }
}
