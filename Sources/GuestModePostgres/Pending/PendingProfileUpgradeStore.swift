import Foundation
import GuestModeKit

// Pending: replaced by PostgresStore+ProfileUpgradeStore.swift when the area is ported; never shipped.
extension PostgresStore: ProfileUpgradeStore {
    public func planProfileUpgrade(from current: Profile, to new: Profile) throws -> ProfileUpgradePlan {
        throw PostgresStore.pending("ProfileUpgradeStore")
    }

    public func applyProfileUpgrade(from current: Profile, to new: ProfileCatalog.Source, now: Date) throws -> ProfileUpgradePlan {
        throw PostgresStore.pending("ProfileUpgradeStore")
    }
}
