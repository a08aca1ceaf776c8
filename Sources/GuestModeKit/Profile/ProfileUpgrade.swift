import Foundation
import GRDB

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
}

extension GuestMode {
    public func planProfileUpgrade(to new: ProfileCatalog.Source) throws -> ProfileUpgradePlan {
        try store.read { db in try plan(upgradingTo: new.profile, db) }
    }

    /// Applies the upgrade all-or-nothing: data steps and the new profile in
    /// one transaction. Refused plans change nothing.
    public func applyProfileUpgrade(to new: ProfileCatalog.Source, now: Date) throws -> ProfileUpgradePlan {
        try store.write { db in
            let plan = try plan(upgradingTo: new.profile, db)
            guard plan.isApplicable else {
                throw GuestModeError.badData(
                    "cannot move the store to \(new.profile.name) v\(new.profile.version): \(plan.refusals.joined(separator: "; "))",
                    code: "profile_upgrade_refused")
            }
            for step in new.profile.upgrade?.steps ?? [] {
                switch step {
                case .renameCollection(let from, let to):
                    try db.execute(sql: "UPDATE records SET collection = ? WHERE collection = ?", arguments: [to, from])
                case .renameField(let collection, let from, let to):
                    try db.execute(
                        sql: """
                            UPDATE records SET data = json_remove(json_set(data, ?, json(data -> ?)), ?)
                            WHERE collection = ? AND json_type(data, ?) IS NOT NULL
                            """,
                        arguments: ["$.\(to)", "$.\(from)", "$.\(from)", collection, "$.\(from)"])
                }
            }
            for (key, value) in [
                ("profile_text", new.text), ("profile_origin", new.origin), ("bound_at", Timestamp.format(now)),
            ] {
                try db.execute(
                    sql: "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    arguments: [key, value])
            }
            return plan
        }
    }

    private func plan(upgradingTo new: Profile, _ db: Database) throws -> ProfileUpgradePlan {
        var refusals: [String] = []
        if new.name != profile.name {
            refusals.append("the store is bound to profile '\(profile.name)', not '\(new.name)'")
        }
        if new.version <= profile.version {
            refusals.append("the store is already at version \(profile.version); the new profile must have a higher version than that")
        }
        let steps = new.upgrade?.steps ?? []
        if let from = new.upgrade?.fromVersion, from != profile.version, !steps.isEmpty {
            refusals.append("its upgrade steps start from version \(from), but the store is at version \(profile.version)")
        }
        var collectionsAfter = Set(profile.collections.map(\.name))
        var dataSteps: [ProfileUpgradePlan.DataStep] = []
        for step in steps {
            switch step {
            case .renameCollection(let from, let to):
                let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM records WHERE collection = ?", arguments: [from]) ?? 0
                if !collectionsAfter.contains(from) {
                    refusals.append("collection '\(from)' to rename is not in the store's profile")
                }
                if collectionsAfter.contains(to) && to != from {
                    refusals.append("collection '\(to)' already exists; renaming '\(from)' onto it would mix their records")
                }
                collectionsAfter.remove(from)
                collectionsAfter.insert(to)
                dataSteps.append(.init(description: "rename collection \(from) → \(to)", records: count))
            case .renameField(let collection, let from, let to):
                let count = try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM records WHERE collection = ? AND json_type(data, ?) IS NOT NULL",
                    arguments: [collection, "$.\(from)"]) ?? 0
                let clashes = try Int.fetchOne(
                    db,
                    sql: "SELECT COUNT(*) FROM records WHERE collection = ? AND json_type(data, ?) IS NOT NULL AND json_type(data, ?) IS NOT NULL",
                    arguments: [collection, "$.\(from)", "$.\(to)"]) ?? 0
                if clashes > 0 {
                    refusals.append("\(clashes) records of \(collection) already have a field '\(to)'; renaming '\(from)' would overwrite it")
                }
                dataSteps.append(.init(description: "rename field \(collection).\(from) → \(to)", records: count))
            }
        }
        let newCollections = Set(new.collections.map(\.name))
        for collection in collectionsAfter.subtracting(newCollections).sorted() {
            let count = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM records WHERE collection = ?", arguments: [collection]) ?? 0
            if count > 0 {
                refusals.append("collection '\(collection)' is dropped by the new profile but holds \(count) records; rename it with an upgrade step")
            }
        }
        var limitChanges: [String] = []
        for level in TierLevel.allCases {
            let (old, updated) = (profile.tier(level), new.tier(level))
            for collection in Set(old.caps.keys).union(updated.caps.keys).sorted() where old.caps[collection] != updated.caps[collection] {
                limitChanges.append("\(level.rawValue) \(collection): \(old.caps[collection].map(String.init) ?? "unlimited") → \(updated.caps[collection].map(String.init) ?? "unlimited")")
            }
            for meter in Set(old.allowances.keys).union(updated.allowances.keys).sorted() where old.allowances[meter] != updated.allowances[meter] {
                limitChanges.append("\(level.rawValue) \(meter): \(old.allowances[meter].map { String($0) } ?? "unlimited") → \(updated.allowances[meter].map { String($0) } ?? "unlimited")")
            }
        }
        return ProfileUpgradePlan(
            profile: new.name, fromVersion: profile.version, toVersion: new.version, dataSteps: dataSteps,
            limitChanges: limitChanges, addedCollections: newCollections.subtracting(collectionsAfter).sorted(),
            refusals: refusals)
    }
}
