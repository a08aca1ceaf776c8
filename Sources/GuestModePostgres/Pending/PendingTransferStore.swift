import Foundation
import GuestModeKit

// Pending: replaced by PostgresStore+TransferStore.swift when the area is ported; never shipped.
extension PostgresStore: TransferStore {
    public func checkTransfer(of guest: String, into account: String) throws {
        throw PostgresStore.pending("TransferStore")
    }

    public func previewTransfer(of guest: String, into account: String, steps: [TransferStep], profile: Profile) throws -> [TransferStepPreview] {
        throw PostgresStore.pending("TransferStore")
    }

    public func mergeGuest(_ guest: String, into account: String, policy: MergePolicy, dryRun: Bool, profile: Profile, now: Date) throws -> MergeReport {
        throw PostgresStore.pending("TransferStore")
    }

    public func adoptOwnerlessRecords(user: String, profile: Profile, now: Date) throws -> AdoptReport {
        throw PostgresStore.pending("TransferStore")
    }
}
