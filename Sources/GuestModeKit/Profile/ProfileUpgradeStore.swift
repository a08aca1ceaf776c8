import Foundation

/// Moving a store to a new version of its profile. Each method is one whole
/// use case in one transaction.
public protocol ProfileUpgradeStore: Sendable {
    /// What moving the store from `current` to `new` would do
    /// (`ProfileUpgradePlan(upgrading:to:census:)` over the stored records);
    /// changes nothing.
    func planProfileUpgrade(from current: Profile, to new: Profile) throws -> ProfileUpgradePlan

    /// Plans and applies in one transaction, all-or-nothing: the new
    /// version's data steps, then binding the store to `new`'s text. A plan
    /// that is not applicable throws its `refusal` and changes nothing.
    func applyProfileUpgrade(
        from current: Profile, to new: ProfileCatalog.Source, now: Date
    ) throws -> ProfileUpgradePlan
}
