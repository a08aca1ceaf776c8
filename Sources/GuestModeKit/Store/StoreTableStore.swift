import Foundation

/// A table of the store as a whole-store copy sees it (`guestmode db copy`):
/// every table of guestmode's schema, not only the per-user ones backups carry.
/// The names and keys are every backend's (docs/ARCHITECTURE.md: same tables, same columns).
package struct StoreTable: Sendable, Equatable, Hashable {
    package var name: String
    /// The primary key, in order: rows are read in this order (text compared
    /// byte by byte) so both backends hash a table's rows the same way.
    package var primaryKey: [String]

    package init(name: String, primaryKey: [String]) {
        self.name = name
        self.primaryKey = primaryKey
    }

    /// Every table of the store, in copy order: the backup tables (users first)
    /// then the store's own tables, journals before their steps and session
    /// families before their refresh tokens. The server's tables are the
    /// store's own: a copy carries its keys, sessions and kept answers, so a
    /// moved deployment keeps them, and no backup ever carries a secret's hash.
    package static let all: [StoreTable] = [
        StoreTable(name: "users", primaryKey: ["id"]),
        StoreTable(name: "identities", primaryKey: ["provider", "subject"]),
        StoreTable(name: "credentials", primaryKey: ["user_id"]),
        StoreTable(name: "upgrade_locks", primaryKey: ["user_id"]),
        StoreTable(name: "events", primaryKey: ["id"]),
        StoreTable(name: "counters", primaryKey: ["user_id", "action"]),
        StoreTable(name: "records", primaryKey: ["owner_id", "collection", "key"]),
        StoreTable(name: "meter_usage", primaryKey: ["id"]),
        StoreTable(name: "meter_warnings", primaryKey: ["user_id", "meter", "period_start", "percent"]),
        StoreTable(name: "meter_grants", primaryKey: ["id"]),
        StoreTable(name: "plans", primaryKey: ["id"]),
        StoreTable(name: "prompt_outcomes", primaryKey: ["id"]),
        StoreTable(name: "experiment_assignments", primaryKey: ["user_id", "experiment"]),
        StoreTable(name: "outbox", primaryKey: ["user_id"]),
        StoreTable(name: "user_flags", primaryKey: ["user_id", "flag"]),
        StoreTable(name: "conflict_archive", primaryKey: ["id"]),
        StoreTable(name: "meta", primaryKey: ["key"]),
        StoreTable(name: "migration_journals", primaryKey: ["id"]),
        StoreTable(name: "migration_steps", primaryKey: ["journal_id", "position"]),
        StoreTable(name: "server_keys", primaryKey: ["name"]),
        StoreTable(name: "session_families", primaryKey: ["id"]),
        StoreTable(name: "refresh_tokens", primaryKey: ["token_hash"]),
        StoreTable(name: "kept_responses", primaryKey: ["principal", "key"]),
        StoreTable(name: "webhook_outbox", primaryKey: ["id"]),
        StoreTable(name: "sign_in_buckets", primaryKey: ["address"]),
        StoreTable(name: "signing_keys", primaryKey: ["id"]),
        StoreTable(name: "store_purchases", primaryKey: ["source", "original_transaction_id"]),
        StoreTable(name: "store_events", primaryKey: ["source", "event_id"]),
    ]

    /// The store's own tables, which no backup carries: the profile binding
    /// (`meta`) and the journals of migrations and merges run in this store.
    package static let own: [StoreTable] = all.filter { BackupTable.named($0.name) == nil }

    package static func named(_ name: String) -> StoreTable? { all.first { $0.name == name } }
}

/// Whole tables read and written for `guestmode db copy`. The per-user tables
/// travel through `BackupRowStore`; this adds reading every table in a
/// canonical order (for the copy's checksums) and writing the store's own
/// tables (`StoreTable.own`).
package protocol StoreTableStore: Sendable {
    /// Runs `body` with every table's rows, all read from one snapshot.
    func readStoreTables<T>(_ body: (any StoreTableSnapshot) throws -> T) throws -> T

    /// Replaces every row of the store's own tables (`StoreTable.own`) with the
    /// rows `body` inserts, keeping their ids, in one durable transaction: a
    /// throw rolls everything back. Later ids the store assigns follow them.
    func replaceOwnTableRows(_ body: (any StoreTableWriter) throws -> Void) throws
}

/// Every row of one read snapshot (see `StoreTableStore.readStoreTables`).
package protocol StoreTableSnapshot {
    /// Calls `body` with each row of `table` ordered by its primary key (text
    /// compared byte by byte), with the table's column names (the same array
    /// for every row). Values are as backups carry them (times as ISO text).
    func forEachRow(in table: StoreTable, _ body: (_ columns: [String], _ values: [CellValue]) throws -> Void) throws
}

/// The inserts of `StoreTableStore.replaceOwnTableRows`.
package protocol StoreTableWriter {
    /// Inserts one row of one of `StoreTable.own`, ids included.
    func insert(_ columns: [String], _ values: [CellValue], into table: StoreTable) throws
}
