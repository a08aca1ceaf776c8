import Foundation

/// What moving a store to a new version of its profile would do.
public struct ProfileUpgradePlan: Codable, Sendable {
    public struct DataStep: Codable, Sendable {
        public var description: String
        public var records: Int
    }

    public var profile: String
    public var fromVersion: Int
    public var toVersion: Int
    public var dataSteps: [DataStep]
    /// Caps and allowances whose value changes, e.g. "guest subscriptions: 5 → 10".
    public var limitChanges: [String]
    public var addedCollections: [String]
    /// Why the upgrade cannot be applied; empty when it can.
    public var refusals: [String]

    public var isApplicable: Bool { refusals.isEmpty }

    public init(
        profile: String, fromVersion: Int, toVersion: Int, dataSteps: [DataStep], limitChanges: [String],
        addedCollections: [String], refusals: [String]
    ) {
        self.profile = profile
        self.fromVersion = fromVersion
        self.toVersion = toVersion
        self.dataSteps = dataSteps
        self.limitChanges = limitChanges
        self.addedCollections = addedCollections
        self.refusals = refusals
    }

    /// The error a backend throws instead of applying a plan that is not applicable.
    public var refusal: GuestModeError? {
        guard !isApplicable else { return nil }
        return GuestModeError.badData(
            "cannot move the store to \(profile) v\(toVersion): \(refusals.joined(separator: "; "))",
            code: .profileUpgradeRefused)
    }
}

extension GuestMode {
    public func planProfileUpgrade(to new: ProfileCatalog.Source) throws -> ProfileUpgradePlan {
        try store.planProfileUpgrade(from: profile, to: new.profile)
    }

    /// Applies the upgrade all-or-nothing: data steps and the new profile in
    /// one transaction. Refused plans change nothing.
    public func applyProfileUpgrade(to new: ProfileCatalog.Source, now: Date) throws -> ProfileUpgradePlan {
        try store.applyProfileUpgrade(from: profile, to: new, now: now)
    }
}

/// Counts of stored records that planning a profile upgrade needs.
public protocol ProfileUpgradeCensus {
    /// Records of every owner in `collection`.
    func recordCount(in collection: String) throws -> Int
    /// Records of every owner in `collection` whose JSON object has all of
    /// `fields` at its top level.
    func recordCount(in collection: String, havingFields fields: [String]) throws -> Int
}

extension ProfileUpgradePlan {
    /// Plans moving a store from `profile` to `new`: the data steps the new
    /// version declares with the records each touches, the limits that
    /// change, and every reason to refuse. Pure but for `census`, which a
    /// backend answers inside the transaction that plans (or applies).
    public init(upgrading profile: Profile, to new: Profile, census: some ProfileUpgradeCensus) throws {
        var refusals: [String] = []
        if new.name != profile.name {
            refusals.append("the store is bound to profile '\(profile.name)', not '\(new.name)'")
        }
        if new.version <= profile.version {
            refusals.append(
                "the store is already at version \(profile.version); the new profile must have a higher version than that"
            )
        }
        let steps = new.upgrade?.steps ?? []
        if let from = new.upgrade?.fromVersion, from != profile.version, !steps.isEmpty {
            refusals.append(
                "its upgrade steps start from version \(from), but the store is at version \(profile.version)")
        }
        var collectionsAfter = Set(profile.collections.map(\.name))
        var dataSteps: [ProfileUpgradePlan.DataStep] = []
        for step in steps {
            switch step {
            case .renameCollection(let from, let to):
                let count = try census.recordCount(in: from)
                if !collectionsAfter.contains(from) {
                    refusals.append("collection '\(from)' to rename is not in the store's profile")
                }
                if collectionsAfter.contains(to) && to != from {
                    refusals.append(
                        "collection '\(to)' already exists; renaming '\(from)' onto it would mix their records")
                }
                collectionsAfter.remove(from)
                collectionsAfter.insert(to)
                dataSteps.append(.init(description: "rename collection \(from) → \(to)", records: count))
            case .renameField(let collection, let from, let to):
                let count = try census.recordCount(in: collection, havingFields: [from])
                let clashes = try census.recordCount(in: collection, havingFields: [from, to])
                if clashes > 0 {
                    refusals.append(
                        "\(clashes) records of \(collection) already have a field '\(to)'; renaming '\(from)' would overwrite it"
                    )
                }
                dataSteps.append(.init(description: "rename field \(collection).\(from) → \(to)", records: count))
            }
        }
        let newCollections = Set(new.collections.map(\.name))
        for collection in collectionsAfter.subtracting(newCollections).sorted() {
            let count = try census.recordCount(in: collection)
            if count > 0 {
                refusals.append(
                    "collection '\(collection)' is dropped by the new profile but holds \(count) records; rename it with an upgrade step"
                )
            }
        }
        var limitChanges: [String] = []
        for level in TierLevel.allCases {
            let (old, updated) = (profile.tier(level), new.tier(level))
            for collection in Set(old.caps.keys).union(updated.caps.keys).sorted()
            where old.caps[collection] != updated.caps[collection] {
                limitChanges.append(
                    "\(level.rawValue) \(collection): \(old.caps[collection].map(String.init) ?? "unlimited") → \(updated.caps[collection].map(String.init) ?? "unlimited")"
                )
            }
            for meter in Set(old.allowances.keys).union(updated.allowances.keys).sorted()
            where old.allowances[meter] != updated.allowances[meter] {
                limitChanges.append(
                    "\(level.rawValue) \(meter): \(old.allowances[meter].map { String($0) } ?? "unlimited") → \(updated.allowances[meter].map { String($0) } ?? "unlimited")"
                )
            }
        }
        self.init(
            profile: new.name, fromVersion: profile.version, toVersion: new.version, dataSteps: dataSteps,
            limitChanges: limitChanges, addedCollections: newCollections.subtracting(collectionsAfter).sorted(),
            refusals: refusals)
    }
}
