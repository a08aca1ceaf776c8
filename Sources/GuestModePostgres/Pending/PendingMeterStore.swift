import Foundation
import GuestModeKit

// Pending: replaced by PostgresStore+MeterStore.swift when the area is ported; never shipped.
extension PostgresStore: MeterStore {
    public func meterStatus(of userID: String, meter: Meter, profile: Profile, now: Date) throws -> MeterStatus {
        throw PostgresStore.pending("MeterStore")
    }

    public func checkMeter(of userID: String, meter: Meter, amount: MeterAmount?, profile: Profile, now: Date) throws -> MeterDecision {
        throw PostgresStore.pending("MeterStore")
    }

    public func useMeter(of userID: String, meter: Meter, amount: MeterAmount, key: String?, profile: Profile, now: Date) throws -> MeterUseResult {
        throw PostgresStore.pending("MeterStore")
    }
}
