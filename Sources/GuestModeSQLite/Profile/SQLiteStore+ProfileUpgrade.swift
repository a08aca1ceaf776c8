import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteStore: ProfileUpgradeStore {
    public func planProfileUpgrade(from current: Profile, to new: Profile) throws -> ProfileUpgradePlan {
        try read { db in try ProfileUpgradePlan(upgrading: current, to: new, census: SQLiteUpgradeCensus(db: db)) }
    }

    public func applyProfileUpgrade(
        from current: Profile, to new: ProfileCatalog.Source, now: Date
    ) throws
        -> ProfileUpgradePlan
    {
        try writeDurably { db in
            let plan = try ProfileUpgradePlan(upgrading: current, to: new.profile, census: SQLiteUpgradeCensus(db: db))
            if let refusal = plan.refusal { throw refusal }
            for step in new.profile.upgrade?.steps ?? [] {
                switch step {
                case .renameCollection(let from, let to):
                    try db.execute(
                        sql: "UPDATE records SET collection = ? WHERE collection = ?", arguments: [to, from])
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
                    sql:
                        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    arguments: [key, value])
            }
            return plan
        }
    }
}

/// Record counts for an upgrade plan, read in the caller's transaction.
private struct SQLiteUpgradeCensus: ProfileUpgradeCensus {
    let db: Database

    func recordCount(in collection: String) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM records WHERE collection = ?", arguments: [collection]) ?? 0
    }

    func recordCount(in collection: String, havingFields fields: [String]) throws -> Int {
        let conditions = fields.map { _ in " AND json_type(data, ?) IS NOT NULL" }.joined()
        return try Int.fetchOne(
            db, sql: "SELECT COUNT(*) FROM records WHERE collection = ?\(conditions)",
            arguments: StatementArguments([collection] + fields.map { "$.\($0)" })) ?? 0
    }
}
