import Foundation

/// The usage ledger, warnings fired once, the gate.
/// Each method is one whole use case in one transaction.
public protocol MeterStore: Sendable {
    /// The status of `meter` for the user now: usage in the current period
    /// (`meter.reset.periodStart(containing:)`) against the allowance of the
    /// tier in force (`profile.meterStatus(_:tier:used:now:)`). Throws when
    /// the user does not exist.
    func meterStatus(of userID: String, meter: Meter, profile: Profile, now: Date) throws -> MeterStatus

    /// The gate before a paid call: the status now and whether `amount` fits
    /// (`MeterStatus.admits`); nil asks whether anything remains. Records
    /// nothing. Throws when the user does not exist.
    func checkMeter(
        of userID: String, meter: Meter, amount: MeterAmount?, profile: Profile, now: Date
    ) throws
        -> MeterDecision

    /// Records a use of `meter` in one transaction, in this order:
    /// - a `key` already recorded for this user and meter records nothing
    ///   and reports a duplicate (allowed, with the status now);
    /// - a use that does not fit (`MeterStatus.admits`) is, with `overage`
    ///   `.refuse`, refused whole and writes nothing at all; with `.allow`
    ///   it is recorded like any other (and reported as `overage`, not
    ///   allowed), unless the new total is past what a sum can count;
    /// - otherwise the usage is recorded, the user's last-seen moves, a
    ///   backup is queued when the profile asks for it, and each warning the
    ///   new total reached (`Meter.warningsReached`) that was not yet fired
    ///   in this period fires once: it is returned and appended as a
    ///   `meter_warning` system event.
    /// Throws when the user does not exist.
    func useMeter(
        of userID: String, meter: Meter, amount: MeterAmount, key: String?, overage: MeterOverage, profile: Profile,
        now: Date
    ) throws -> MeterUseResult
}

extension MeterStore {
    /// A use whose overage is refused.
    public func useMeter(
        of userID: String, meter: Meter, amount: MeterAmount, key: String?, profile: Profile, now: Date
    ) throws -> MeterUseResult {
        try useMeter(of: userID, meter: meter, amount: amount, key: key, overage: .refuse, profile: profile, now: now)
    }
}
