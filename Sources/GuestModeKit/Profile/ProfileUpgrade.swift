import Foundation

/// What moving a store to a new version of its profile would do.
public struct ProfileUpgradePlan: Codable, Sendable {
    /// One change to stored data the upgrade makes.
    public struct DataStep: Codable, Sendable {
        /// The change, in words.
        public var description: String
        /// Records it changes.
        public var records: Int
    }

    /// The profile's name.
    public var profile: String
    /// The version the store is bound to now.
    public var fromVersion: Int
    /// The version it would move to.
    public var toVersion: Int
    /// The changes to stored data, in order.
    public var dataSteps: [DataStep]
    /// Caps and allowances whose value changes, e.g. "guest subscriptions: 5 → 10".
    public var limitChanges: [String]
    /// Collections the new version adds.
    public var addedCollections: [String]
    /// Why the upgrade cannot be applied; empty when it can.
    public var refusals: [String]

    /// True when nothing refuses the upgrade.
    public var isApplicable: Bool { refusals.isEmpty }

    package init(
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

    /// The error thrown instead of applying a plan that is not applicable.
    public var refusal: GuestModeError? {
        guard !isApplicable else { return nil }
        return GuestModeError(
            .profileUpgradeRefused,
            "cannot move the store to \(profile) v\(toVersion): \(refusals.joined(separator: "; "))")
    }
}

extension GuestMode {
    /// What moving the store from its profile to `new` would do, over the
    /// stored records; changes nothing.
    public func planProfileUpgrade(to new: ProfileCatalog.Source) throws -> ProfileUpgradePlan {
        try store.read { transaction in
            try ProfileUpgradePlan(upgrading: profile, to: new.profile, census: transaction)
        }
    }

    /// Plans and applies the upgrade in one durable transaction,
    /// all-or-nothing: the new version's data steps, then binding the store
    /// to `new`'s text. A plan that is not applicable throws its `refusal`
    /// and changes nothing.
    public func applyProfileUpgrade(to new: ProfileCatalog.Source, now: Date) throws -> ProfileUpgradePlan {
        try store.write(durable: true) { transaction in
            try transaction.lockProfileBinding()
            let plan = try ProfileUpgradePlan(upgrading: profile, to: new.profile, census: transaction)
            if let refusal = plan.refusal { throw refusal }
            for step in new.profile.upgrade?.steps ?? [] {
                switch step {
                case .renameCollection(let from, let to):
                    try transaction.renameCollection(from, to: to)
                case .renameField(let collection, let from, let to):
                    try FieldRename(collection: collection, field: from, to: to).apply(transaction)
                }
            }
            try transaction.setBoundProfile(text: new.text, origin: new.origin, at: now)
            return plan
        }
    }
}

extension ProfileUpgradePlan {
    /// Plans moving a store from `profile` to `new`: the data steps the new
    /// version declares with the records each touches, the limits that
    /// change, and every reason to refuse. Pure but for `census`, the
    /// transaction that plans (or applies).
    package init(upgrading profile: Profile, to new: Profile, census: some ProfileRows) throws {
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
                let count = try census.countRecords(in: from)
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
                let (count, clashes) = try FieldRename(collection: collection, field: from, to: to).census(census)
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
            let count = try census.countRecords(in: collection)
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
