import Foundation

extension Profile {
    /// Where a user of tier `level` holding `used` records stands against a
    /// collection's cap; a new record is refused once `used` reaches the cap.
    package func collectionLimit(_ collection: String, tier level: TierLevel, used: Int?) -> CollectionLimit {
        let tier = tier(level)
        let cap = tier.cap(for: collection)
        let outcome: CapOutcome = cap.map { (used ?? 0) >= $0 ? tier.whenCapped : .allowed } ?? .allowed
        return CollectionLimit(collection: collection, tier: level, used: used, cap: cap, outcome: outcome)
    }
}

extension CollectionLimit {
    /// Whether a write may go ahead: replacing an existing key never counts
    /// against the cap; a new key needs the outcome to be `allowed`.
    package func admits(isReplacement: Bool) -> Bool {
        isReplacement || outcome == .allowed
    }
}
