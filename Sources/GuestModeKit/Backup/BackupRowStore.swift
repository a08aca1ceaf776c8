import Foundation

/// Whose data an export holds.
public enum BackupSelection: Sendable, Equatable {
    case users([String])
    /// Every user, plus records still owned by the profile's guest owner.
    case all
}

/// A per-user table a backup carries, and the column that says whose a row
/// is. The names are the archive format's (`BackupFormat`) and every backend's:
/// a backend keeps these tables and columns under these names.
package struct BackupTable: Sendable, Equatable, Hashable {
    package var name: String
    package var ownerColumn: String
    /// Tables keyed by a store-assigned integer id: an id already used by
    /// another user's row is given up on import and the row gets a fresh one.
    package var hasSurrogateID: Bool = false

    /// Export and import order: `users` first so the rows that refer to it follow.
    package static let all: [BackupTable] = [
        BackupTable(name: "users", ownerColumn: "id"),
        BackupTable(name: "identities", ownerColumn: "user_id"),
        BackupTable(name: "credentials", ownerColumn: "user_id"),
        BackupTable(name: "upgrade_locks", ownerColumn: "user_id"),
        BackupTable(name: "events", ownerColumn: "user_id", hasSurrogateID: true),
        BackupTable(name: "counters", ownerColumn: "user_id"),
        BackupTable(name: "records", ownerColumn: "owner_id"),
        BackupTable(name: "meter_usage", ownerColumn: "user_id", hasSurrogateID: true),
        BackupTable(name: "meter_warnings", ownerColumn: "user_id"),
        BackupTable(name: "meter_grants", ownerColumn: "user_id", hasSurrogateID: true),
        BackupTable(name: "plans", ownerColumn: "user_id", hasSurrogateID: true),
        BackupTable(name: "prompt_outcomes", ownerColumn: "user_id", hasSurrogateID: true),
        BackupTable(name: "experiment_assignments", ownerColumn: "user_id"),
        BackupTable(name: "outbox", ownerColumn: "user_id"),
        BackupTable(name: "user_flags", ownerColumn: "user_id"),
        BackupTable(name: "conflict_archive", ownerColumn: "owner_id", hasSurrogateID: true),
    ]

    package static func named(_ name: String) -> BackupTable? { all.first { $0.name == name } }

    /// Records may belong to the profile's guest owner, who is not a user.
    package var mayBelongToGuestOwner: Bool { name == "records" }

    /// Tables that carry entitlements or identity: taken from an archive only
    /// when this deployment signed it (or the import is told to trust it).
    /// Meter warnings follow meter usage; counters follow events, which are
    /// user-owned content (import re-validates them against the events).
    package static let trustedOnlyNames: Set<String> = [
        "identities", "credentials", "upgrade_locks", "meter_usage", "meter_warnings", "meter_grants", "plans",
    ]

    package var carriesTrust: Bool { Self.trustedOnlyNames.contains(name) }
}

/// One column value as a backup carries it: JSON's null, numbers and
/// strings. Backends map their own types to these (times are ISO 8601 text).
package enum CellValue: Decodable, Equatable, Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)

    package init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .real(value)
        } else {
            self = .text(try container.decode(String.self))
        }
    }

    package var text: String? {
        if case .text(let value) = self { return value }
        return nil
    }
}

/// Rows streamed out for backup archives and written back on import. The
/// archive format, the hashing and the conflict policy live in the engine;
/// a backend only reads and writes rows of the `BackupTable.all` tables.
package protocol BackupRowStore: Sendable {
    /// Runs `body` with one read snapshot of the backup tables, so an
    /// archive never mixes two states of the store. Rows are streamed, never
    /// loaded together: a million-row export stays small in memory. The
    /// snapshot is valid only while `body` runs. Callers go through
    /// `readBackupRows(_:guestOwner:_:)`, which resolves whose rows to read.
    func readBackupRows<T>(_ body: (any BackupRowSource) throws -> T) throws -> T

    /// Runs `body` as one import in one durable transaction (flushed to disk
    /// before it reports success, so a committed import survives a power
    /// cut). Everything `body` wrote is rolled back when it throws or when
    /// `dryRun` is true, so an import is all or nothing. References between
    /// rows are checked only by `BackupRowImport.tableWithDanglingReferences`
    /// and at commit, since an archive may carry a row before its user.
    func importBackupRows<T>(dryRun: Bool, _ body: (any BackupRowImport) throws -> T) throws -> T
}

/// The backup rows of one read snapshot (see `BackupRowStore.readBackupRows`),
/// by owner: which owners a selection means is the engine's
/// (`BackupRowSnapshot`), a backend only reads their rows.
package protocol BackupRowSource {
    /// Whether the store has the user `id`.
    func userExists(_ id: String) throws -> Bool
    /// Whether any record belongs to `owner` (the profile's guest owner).
    func hasRecords(ownedBy owner: String) throws -> Bool
    /// Calls `body` with the id of every user, ordered byte by byte,
    /// streamed and never held together.
    func forEachUserID(_ body: (String) throws -> Void) throws
    /// How many of `owners`' rows `table` holds.
    func rowCount(in table: BackupTable, of owners: BackupOwners) throws -> Int
    /// Calls `body` with each of `owners`' rows of `table`, oldest first,
    /// with the table's column names (the same array for every row).
    func forEachRow(
        in table: BackupTable, of owners: BackupOwners,
        _ body: (_ columns: [String], _ values: [CellValue]) throws -> Void
    ) throws
    /// As `forEachRow`, with each row's cells as the backend holds them,
    /// valid only while `body` runs: an export writes them out without a
    /// string made per cell. The text of a cell is what `forEachRow` would
    /// give, byte for byte.
    func forEachRawRow(
        in table: BackupTable, of owners: BackupOwners,
        _ body: (_ columns: [String], _ cells: UnsafeBufferPointer<RawCell>) throws -> Void
    ) throws
}

/// One cell of a row while it is read (`BackupRowSource.forEachRawRow`): text
/// as its UTF-8 bytes in place, valid only during the call that hands it over.
///
/// ```swift
/// if case .text(let bytes) = cell { buffer.append(contentsOf: bytes) }
/// ```
package enum RawCell {
    case null
    case integer(Int64)
    case real(Double)
    case text(UnsafeBufferPointer<UInt8>)
}

extension CellValue {
    /// `cell` as a value of its own, its text copied (a raw cell's bytes live only during its call).
    ///
    /// ```swift
    /// let values = cells.map(CellValue.init)
    /// ```
    package init(_ cell: RawCell) {
        switch cell {
        case .null: self = .null
        case .integer(let number): self = .integer(number)
        case .real(let number): self = .real(number)
        case .text(let bytes): self = .text(String(decoding: bytes, as: UTF8.self))
        }
    }
}

/// Whose rows an export reads, as the engine resolved its `BackupSelection`.
package enum BackupOwners: Sendable, Equatable {
    /// Every user, and the records of `guestOwner` when it is given.
    case everyUser(guestOwner: String?)
    /// These users, each named once, every one in the store.
    case users([String])
}

/// The selected rows of one read snapshot: the selection resolved once,
/// here, in the snapshot it reads, for every backend.
package struct BackupRowSnapshot {
    private let source: any BackupRowSource
    /// Every user as the first complete `forEachUser` read them, given back
    /// to the calls after it: an export's header reads the list twice (its
    /// size, then its bytes), and the second scan of the users' key cost
    /// PostgreSQL 0.16–0.22 s at 1 M users, more than reading the spool.
    private let usersRead = UsersRead()
    /// The owners the selection resolved to.
    package let owners: BackupOwners

    /// `.all` is every user, plus `guestOwner` when it owns records; `.users`
    /// the requested ones the store has, first mention first, each once.
    package init(_ source: any BackupRowSource, selection: BackupSelection, guestOwner: String) throws {
        self.source = source
        switch selection {
        case .all:
            owners = .everyUser(guestOwner: try source.hasRecords(ownedBy: guestOwner) ? guestOwner : nil)
        case .users(let requested):
            var seen: Set<String> = []
            owners = .users(
                try requested.filter { user in
                    guard seen.insert(user).inserted else { return false }
                    return try source.userExists(user)
                })
        }
    }

    /// Calls `body` with each selected user: for `.all` every user ordered
    /// by id (byte by byte), streamed from the snapshot the first time and
    /// from a spool after it, never held together in memory, so a
    /// whole-store export stays small at any number of users; for `.users`
    /// the requested ones present in the store, first mention first. Every
    /// call gives the same users in the same order.
    package func forEachUser(_ body: (String) throws -> Void) throws {
        switch owners {
        case .everyUser:
            if let spool = usersRead.spool {
                try spool.forEach { reader in try body(try reader.string()) }
                return
            }
            let spool = RecordSpool(
                holding: "the users being exported", fileTag: "export-users", memoryLimit: UsersRead.memoryLimit)
            try source.forEachUserID { user in
                try spool.append { $0.put(user) }
                try body(user)
            }
            // Only a list read to its end is given back.
            usersRead.spool = spool
        case .users(let users): for user in users { try body(user) }
        }
    }

    /// The guest owner, when the selection is `.all` and it owns records.
    package var guestOwner: String? {
        if case .everyUser(let guestOwner) = owners { return guestOwner }
        return nil
    }

    /// How many of the selection's rows `table` holds.
    package func rowCount(in table: BackupTable) throws -> Int {
        try source.rowCount(in: table, of: owners)
    }

    /// Calls `body` with each of the selection's rows of `table`, oldest
    /// first, with the table's column names (the same array for every row).
    package func forEachRow(
        in table: BackupTable, _ body: (_ columns: [String], _ values: [CellValue]) throws -> Void
    ) throws {
        try source.forEachRow(in: table, of: owners, body)
    }

    /// As ``forEachRow(in:_:)``, with the cells in place (`BackupRowSource.forEachRawRow`).
    package func forEachRawRow(
        in table: BackupTable, _ body: (_ columns: [String], _ cells: UnsafeBufferPointer<RawCell>) throws -> Void
    ) throws {
        try source.forEachRawRow(in: table, of: owners, body)
    }
}

extension BackupRowStore {
    /// Runs `body` with the selected owners' rows, all read from one
    /// snapshot (see `readBackupRows(_:)`).
    package func readBackupRows<T>(
        _ selection: BackupSelection, guestOwner: String, _ body: (BackupRowSnapshot) throws -> T
    ) throws -> T {
        try readBackupRows { source in
            try body(try BackupRowSnapshot(source, selection: selection, guestOwner: guestOwner))
        }
    }
}

/// The writes of one import (see `BackupRowStore.importBackupRows`).
package protocol BackupRowImport {
    /// Whether the store holds any user: into a store without one (a
    /// restore), every listed user is added and `creationTimes` is never asked.
    func holdsUsers() throws -> Bool
    /// The `created_at` of each of `ids` the store holds as a user, as its
    /// backup rows carry it; an id the store lacks is not a key. One
    /// statement for the whole list (`ListedUsers.classifyBatch` ids at most).
    func creationTimes(ofUsers ids: [String]) throws -> [String: String]
    /// Whether any record belongs to `owner` (the profile's guest owner).
    func hasRecords(ownedBy owner: String) throws -> Bool
    /// The user who received the merge of migration journal `id` in this
    /// store, or nil when the store has no such journal.
    func journalTarget(_ id: Int64) throws -> String?
    /// Deletes every row of `owners` from the given backup tables.
    func deleteRows(ownedBy owners: [String], in tables: [BackupTable]) throws
    /// The columns the store keeps for `table`.
    func columns(of table: BackupTable) throws -> Set<String>
    /// Inserts one row whose columns all exist. For a table with a surrogate
    /// id, an id the store already uses is dropped and the row gets a fresh
    /// one. Throws `BackupRowRefusal` for a row the store's keys or rules
    /// refuse.
    ///
    /// A store may hold up to `backupPendingRowLimit` inserted rows back and
    /// write them together (PostgreSQL through COPY); a refusal of such a row
    /// comes from a later call (any call of this protocol, or `finishRows`) and
    /// names the row by `BackupRowRefusal.insertion`.
    ///
    /// `ownerHasUsersRow` says the engine knows the row's user has a users
    /// row in the store already (written earlier by this import, or kept), so
    /// a store that gives rows a placeholder user until their users row
    /// arrives (PostgreSQL) need not ask the server about that user.
    func insert(
        _ row: BackupRow, into table: BackupTable, ownerHasUsersRow: Bool
    ) throws
        -> BackupRowInsertion
    /// Says every row is given: writes the rows `insert` held back (throwing
    /// their refusal, if any), and may start what waits for the last row
    /// (PostgreSQL builds the indexes and keys it dropped for the load) while
    /// the engine checks the rows against each other. Calls after it still
    /// see every row.
    func finishRows() throws
    /// The first table with a row that refers to a user the store does not
    /// hold, or nil when every reference resolves.
    func tableWithDanglingReferences() throws -> String?
}

/// The most inserted rows a `BackupRowImport` may hold back before writing
/// them, so the caller knows how far back a refusal may point. PostgreSQL
/// holds two batches of half as many: one the server is writing, one filling.
/// Each batch is one COPY, and every COPY makes its 1,000 buffered row slots
/// anew; PostgreSQL's bookkeeping of those slots (each pins the same row shape
/// in a hashed list) costs it the square of their number, once a batch: the
/// fewer batches the better (`bench/results.md`). PostgreSQL also bounds a
/// batch by the bytes its rows hold (3 MiB), which binds first for all but
/// the smallest rows (an event's batch is about 8,000 rows).
package let backupPendingRowLimit = 40_000

extension BackupRowImport {
    /// Inserts one row, with nothing known about its user's users row.
    package func insert(_ row: BackupRow, into table: BackupTable) throws -> BackupRowInsertion {
        try insert(row, into: table, ownerHasUsersRow: false)
    }

    /// Deletes every row of `owners` from every backup table.
    package func deleteRows(ownedBy owners: [String]) throws {
        try deleteRows(ownedBy: owners, in: BackupTable.all)
    }

    /// A store that writes each row at once has nothing held back, and nothing to start after the last row.
    package func finishRows() throws {}
}

package enum BackupRowInsertion: Sendable, Equatable {
    case inserted
    /// Inserted under a fresh surrogate id, the archive's being taken.
    case renumbered
}

/// Why the store refused an imported row.
package struct BackupRowRefusal: Error, Sendable, Equatable {
    package enum Reason: Sendable, Equatable {
        /// The identity (provider, subject) already belongs to `holder`.
        case identityTaken(holder: String)
        /// The row's key is already held by a row in the store or earlier in the import.
        case duplicateKey
        /// The row breaks a rule of the table (a missing value, a wrong type).
        case invalid
    }

    package var reason: Reason
    /// The backend's own words, for the message.
    package var detail: String
    /// Which call of `insert` gave the refused row (0 for the import's first),
    /// when it was held back and refused later; nil for the current call's row.
    package var insertion: Int?

    package init(_ reason: Reason, detail: String, insertion: Int? = nil) {
        self.reason = reason
        self.detail = detail
        self.insertion = insertion
    }
}

/// The user list a snapshot read once, kept for its next reads (in memory
/// up to `memoryLimit` bytes, then in an unlinked temporary file).
private final class UsersRead {
    static let memoryLimit = 1 << 20
    var spool: RecordSpool?
}
