import Foundation
import GuestModeKit

extension PostgresStore: BackupRowStore {
    package func readBackupRows<T>(_ body: (any BackupRowSource) throws -> T) throws -> T {
        try read { connection in try body(PostgresBackupSource(connection)) }
    }

    /// One transaction for the whole import. The schema's foreign keys to
    /// `users` are not DEFERRABLE, so an archive row that arrives before its
    /// users row (a hand-made archive) is given a placeholder users row, which
    /// the real one then fills in; a placeholder still there at the end is a
    /// dangling reference, reported by `tableWithDanglingReferences` and
    /// refused at commit, as SQLite's deferred foreign keys are. A dry run,
    /// or `body` throwing, rolls everything back.
    package func importBackupRows<T>(dryRun: Bool, _ body: (any BackupRowImport) throws -> T) throws -> T {
        do {
            return try writeMovingData { connection in
                let writes = PostgresBackupImport(connection)
                if !dryRun { try Self.dropIndexesBuiltAfterRows(connection, for: writes) }
                let value: T
                do {
                    value = try body(writes)
                } catch {
                    // The batch last sent is read, so the rollback finds the connection idle.
                    try? connection.settle()
                    throw error
                }
                try writes.finish(committing: !dryRun)
                if dryRun { throw RolledBackImport(value: value) }
                return value
            }
        } catch let rolledBack as RolledBackImport {
            guard let value = rolledBack.value as? T else {
                throw GuestModeError(.internalFailure, "a dry-run import lost its result")
            }
            return value
        }
    }
}

extension PostgresStore {
    /// Into a store that holds no user yet (a restore), the secondary
    /// indexes that enforce nothing are dropped before the rows go in, and
    /// `writes` told how to make them again, to build each once over all its
    /// rows, as `pg_dump` orders a load; the foreign keys to `users(id)`
    /// likewise, the primary keys of the tables whose ids the store assigns
    /// and of counters (`dropPrimaryKeys`), and the ledger's kept totals, whose triggers
    /// are off meanwhile. Other unique indexes and keys stay, so a repeated
    /// key is still refused at its row; nothing the import asks while writing
    /// reads the dropped ones (look-ups go by key). Nothing for a store with
    /// users, whose readers keep their indexes.
    fileprivate static func dropIndexesBuiltAfterRows(
        _ connection: PostgresConnection, for writes: PostgresBackupImport
    ) throws {
        guard try !writes.holdsUsers() else { return }
        // Which tables refer to users is read from these keys: read before they go.
        try writes.learnShapes()
        writes.primaryKeysBuiltAfterRows = try dropPrimaryKeys(connection)
        let indexes = try connection.execute(
            """
            SELECT quote_ident(x.relname) AS name, pg_get_indexdef(i.indexrelid) AS definition
            FROM pg_index i
            JOIN pg_class x ON x.oid = i.indexrelid
            JOIN pg_class t ON t.oid = i.indrelid
            JOIN pg_namespace n ON n.oid = t.relnamespace
            WHERE n.nspname = current_schema() AND NOT i.indisunique AND t.relname = ANY($1::text[])
            ORDER BY x.relname
            """, [PostgresValue.textArray(BackupTable.all.map(\.name))])
        for index in indexes {
            writes.indexesBuiltAfterRows.append(try index.string("definition"))
            try connection.execute("DROP INDEX \(try index.string("name"))")
        }
        // The foreign keys to users(id) too: held row by row, each is a look-up of the user a row (most of the
        // server's time in a restore). The import itself keeps them meanwhile: a row whose user has no users
        // row gets a placeholder, and one left unfilled refuses the import (`finish`). Added again at the end,
        // each checks every row at once. Keys to other tables stay, so their refusals still name the row.
        var statements = try dropKeysToUsers(of: BackupTable.all.map(\.name).filter { $0 != "users" }, connection)
        // The ledger's kept totals and its grants' draws follow meter_usage by triggers, once a statement: a
        // COPY of 5,000 uses cost the server 150 ms in them, on top of the 30 ms of its rows. A store without
        // users holds neither totals nor draws (both belong to users), so the triggers are off while the rows
        // go in, and the totals are built once from the whole ledger at the end, as the migration that made
        // them built them; the draws' trigger only forgets draws, and there are none.
        try connection.execute(
            "ALTER TABLE meter_usage DISABLE TRIGGER meter_totals_add, DISABLE TRIGGER meter_grant_draws_add")
        // The totals' own key to users(id) likewise, added again after they are built: held, it looked up the
        // user of each of the 200,000 totals of a restore of 1 M guests, and the build took 1.65 s with the
        // client waiting; without it, 0.64 s and 0.38 s for the key, on a slower run (bench/results.md). Every
        // total's user has uses, whose key to users(id) is checked above.
        let totalsKeyStatements = try dropKeysToUsers(of: ["meter_totals"], connection)
        statements.append(PostgresSchema.buildMeterTotals)
        statements += totalsKeyStatements
        statements.append(
            "ALTER TABLE meter_usage ENABLE TRIGGER meter_totals_add, ENABLE TRIGGER meter_grant_draws_add")
        writes.builtAfterRows = statements
    }

    /// Drops the primary keys of the tables with a surrogate id and of counters, and returns,
    /// by table, the statement that adds each again. The archive's ids are
    /// left out (the engine checks them against each other), so the store
    /// gives every row of those tables its id from the table's sequence,
    /// moved past the ids already there: the key cannot be broken by them,
    /// and holding it row by row was a quarter of the server's time in the
    /// rows of a restore (2 M events: 3.2 s with it, 2.4 s without and 0.35 s
    /// to build it after; bench/results.md). A row that brings an id of its
    /// own has its table's key built first (`buildSurrogateKey`). A key that
    /// a foreign key refers to stays. The counters' key, `(user_id, action)`,
    /// goes too: the engine finds a repeated counter among the rows itself
    /// (`CrossRowFacts`) before the key is built, and held row by row it cost
    /// the server 1.7 s for 2 M counters, against 0.46 s for the rows alone
    /// and 0.47 s to build it after (bench/results.md).
    private static func dropPrimaryKeys(_ connection: PostgresConnection) throws -> [String: String] {
        let keys = try connection.execute(
            """
            SELECT t.relname AS tbl, quote_ident(t.relname) AS quoted, quote_ident(c.conname) AS name,
                   pg_get_constraintdef(c.oid) AS definition
            FROM pg_constraint c
            JOIN pg_class t ON t.oid = c.conrelid
            JOIN pg_namespace n ON n.oid = t.relnamespace
            WHERE n.nspname = current_schema() AND c.contype = 'p' AND t.relname = ANY($1::text[])
              AND NOT EXISTS (SELECT 1 FROM pg_constraint f WHERE f.contype = 'f' AND f.conindid = c.conindid)
            ORDER BY t.relname
            """, [PostgresValue.textArray(BackupTable.all.filter(\.hasSurrogateID).map(\.name) + ["counters"])])
        var statements: [String: String] = [:]
        for key in keys {
            let table = try key.string("quoted")
            let name = try key.string("name")
            try connection.execute("ALTER TABLE \(table) DROP CONSTRAINT \(name)")
            statements[try key.string("tbl")] =
                "ALTER TABLE \(table) ADD CONSTRAINT \(name) \(try key.string("definition"))"
        }
        return statements
    }

    /// Drops the foreign keys to `users(id)` of `tables` and returns the statements that add them again.
    private static func dropKeysToUsers(of tables: [String], _ connection: PostgresConnection) throws -> [String] {
        let keys = try connection.execute(
            """
            SELECT quote_ident(t.relname) AS tbl, quote_ident(c.conname) AS name,
                   pg_get_constraintdef(c.oid) AS definition
            FROM pg_constraint c
            JOIN pg_class t ON t.oid = c.conrelid
            JOIN pg_namespace n ON n.oid = t.relnamespace
            WHERE n.nspname = current_schema() AND c.contype = 'f' AND c.confrelid = 'users'::regclass
              AND t.relname = ANY($1::text[])
            ORDER BY t.relname, c.conname
            """, [PostgresValue.textArray(tables)])
        var statements: [String] = []
        for key in keys {
            let table = try key.string("tbl")
            let name = try key.string("name")
            try connection.execute("ALTER TABLE \(table) DROP CONSTRAINT \(name)")
            statements.append("ALTER TABLE \(table) ADD CONSTRAINT \(name) \(try key.string("definition"))")
        }
        return statements
    }
}

/// Carries a dry run's result out of the transaction it rolls back.
private final class RolledBackImport: Error, @unchecked Sendable {
    let value: Any
    init(value: Any) { self.value = value }
}

/// What the backup code needs to know of one table, read from the catalog
/// once per transaction: its columns in order with how their values
/// travel, its primary key, and whether it refers to `users`. A class: an
/// import asks for its table's shape at every row, and a struct's copy was a
/// retain and a release of each of its references.
private final class BackupTableShape {
    let catalog: PostgresColumns
    let primaryKey: [String]
    let refersToUsers: Bool
    /// Whether the owner column is a NOT NULL foreign key to `users(id)`:
    /// then every row belongs to a user (PostgreSQL holds the key on every
    /// write), and a whole-store export reads the table without looking each
    /// row's owner up in `users`.
    let ownedByUsers: Bool

    var columns: [String] { catalog.names }

    init(_ table: BackupTable, _ connection: PostgresConnection) throws {
        catalog = try PostgresColumns(of: table.name, connection)
        primaryKey = try connection.execute(
            """
            SELECT a.attname AS name FROM pg_index i
            JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
            WHERE i.indrelid = $1::regclass AND i.indisprimary
            ORDER BY array_position(i.indkey::int2[], a.attnum)
            """,
            [PostgresValue(PostgresStore.quote(table.name))]
        ).map { try $0.string("name") }
        refersToUsers =
            try connection.execute(
                """
                SELECT 1 AS refers FROM pg_constraint
                WHERE contype = 'f' AND conrelid = $1::regclass AND confrelid = 'users'::regclass
                """,
                [PostgresValue(PostgresStore.quote(table.name))]
            ).first != nil
        ownedByUsers =
            try connection.execute(
                """
                SELECT 1 AS owned FROM pg_constraint c
                JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
                JOIN pg_attribute r ON r.attrelid = c.confrelid AND r.attnum = c.confkey[1]
                WHERE c.contype = 'f' AND c.conrelid = $1::regclass AND c.confrelid = 'users'::regclass
                  AND cardinality(c.conkey) = 1 AND a.attname = $2 AND a.attnotnull AND r.attname = 'id'
                """,
                [PostgresValue(PostgresStore.quote(table.name)), PostgresValue(table.ownerColumn)]
            ).first != nil
    }

    func kind(_ column: String) -> PostgresColumns.Kind { catalog.kind(column) }

    /// Export order. PostgreSQL keeps no insertion order (SQLite exports by
    /// rowid), so: store-assigned ids in order for tables that have them,
    /// else the primary key, text compared byte by byte; in a whole-store
    /// export the guest owner's records come after every user's.
    var ordering: String {
        let keys = columns.contains("id") ? ["id"] : primaryKey.isEmpty ? columns : primaryKey
        return keys.map { kind($0) == .text ? "\(PostgresStore.quote($0)) COLLATE \"C\"" : PostgresStore.quote($0) }
            .joined(separator: ", ")
    }

    /// A stored value as a backup carries it.
    func cell(_ text: String?, column: String, table: String, location: String) throws -> CellValue {
        try catalog.cell(text, column: column, table: table, location: location)
    }

    /// A backup value as a parameter for `column`. A whole number written as
    /// a real goes into an integer column as that integer, as SQLite's
    /// INTEGER affinity stores it.
    func parameter(_ value: CellValue, column: String) -> PostgresValue? {
        switch value {
        case .null: return nil
        case .integer(let number): return PostgresValue(number)
        case .real(let number):
            if kind(column) == .integer, number.rounded() == number, let whole = Int64(exactly: number) {
                return PostgresValue(whole)
            }
            return PostgresValue("\(number)")
        case .text(let text): return PostgresValue(text)
        }
    }
}

/// The backup rows inside one read transaction. An export's rows
/// (`forEachRawRow`) stream through `COPY … TO STDOUT`, as `pg_dump` reads a
/// table: no round trip per batch of rows, and the server writes the next
/// rows while these are encoded. `forEachRow` (`db copy`, the checks) reads
/// the same stream, each row's cells made values.
private final class PostgresBackupSource: BackupRowSource {
    let connection: PostgresConnection
    private var shapes: [String: BackupTableShape] = [:]

    init(_ connection: PostgresConnection) { self.connection = connection }

    func userExists(_ id: String) throws -> Bool {
        try connection.execute("SELECT 1 AS present FROM users WHERE id = $1", [PostgresValue(id)]).first != nil
    }

    func hasRecords(ownedBy owner: String) throws -> Bool {
        try connection.execute("SELECT 1 AS owned FROM records WHERE owner_id = $1 LIMIT 1", [PostgresValue(owner)])
            .first != nil
    }

    func rowCount(in table: BackupTable, of owners: BackupOwners) throws -> Int {
        let condition = Self.condition(table, owners, ownedByUsers: try shape(table).ownedByUsers, value: "$1")
        return try connection.execute(
            "SELECT count(*) AS n FROM \(PostgresStore.quote(table.name))\(condition.sql)", condition.parameters
        ).first?.int("n") ?? 0
    }

    /// Every user id in byte order, streamed through COPY as a table's rows
    /// are: an index scan of the users' key, whose column compares byte by
    /// byte (pg15), so nothing is sorted and nothing is held on the server.
    func forEachUserID(_ body: (String) throws -> Void) throws {
        let ids = CopyTextRows(kinds: [.text], columns: ["id"], table: "users", location: connection.location)
        try connection.copyOut(#"COPY (SELECT id FROM users ORDER BY id COLLATE "C") TO STDOUT"#) { line in
            try ids.decode(line) { cells in
                if case .text(let id) = cells[0] { try body(String(decoding: id, as: UTF8.self)) }
            }
        }
    }

    func forEachRawRow(
        in table: BackupTable, of owners: BackupOwners,
        _ body: (_ columns: [String], _ cells: UnsafeBufferPointer<RawCell>) throws -> Void
    ) throws {
        let shape = try self.shape(table)
        let condition = Self.condition(table, owners, ownedByUsers: shape.ownedByUsers, value: Self.ownersSetting)
        if let value = condition.parameters.first {
            // COPY takes no parameters: the owners travel as a setting of this transaction, not in the SQL.
            try connection.execute("SELECT set_config('guestmode.export_owners', $1, true) AS owners", [value])
        }
        let columns = shape.columns
        let rows = CopyTextRows(
            kinds: columns.map(shape.kind), columns: columns, table: table.name, location: connection.location)
        try connection.copyOut(
            """
            COPY (SELECT \(columns.map(PostgresStore.quote).joined(separator: ", ")) FROM \(PostgresStore.quote(table.name))
            \(condition.sql) ORDER BY \(condition.guestOwnerLast)\(shape.ordering)) TO STDOUT
            """
        ) { line in
            // Lent, not retained, for each row: `rows` outlives the COPY.
            try Unmanaged.passUnretained(rows)._withUnsafeGuaranteedRef { rows in
                try rows.decode(line) { cells in try body(columns, cells) }
            }
        }
        withExtendedLifetime(rows) {}
    }

    /// How a COPY's query reads the owners `set_config` gave it.
    private static let ownersSetting = "current_setting('guestmode.export_owners')"

    /// Streamed by COPY as the raw rows are, a row at a time: fetched by
    /// the thousand through a cursor, 1,000 records of 64 KB were held at
    /// once (bench/scale.sh).
    func forEachRow(
        in table: BackupTable, of owners: BackupOwners, _ body: ([String], [CellValue]) throws -> Void
    ) throws {
        var values: [CellValue] = []
        try forEachRawRow(in: table, of: owners) { columns, cells in
            values.removeAll(keepingCapacity: true)
            for index in cells.indices { values.append(CellValue(cells[index])) }
            try body(columns, values)
        }
    }

    private func shape(_ table: BackupTable) throws -> BackupTableShape {
        if let shape = shapes[table.name] { return shape }
        let shape = try BackupTableShape(table, connection)
        shapes[table.name] = shape
        return shape
    }

    /// The WHERE clause (or none) that picks the owners' rows of a table, and
    /// the ordering term that puts the guest owner's records after the users'.
    /// Every user's rows of a table held to `users(id)` by its owner column
    /// are all its rows: read without looking each row's owner up in `users`.
    /// The one parameter (the guest owner, or the users as a text array) is
    /// read in the SQL as `value`: `$1`, or the setting a COPY reads it from.
    private static func condition(
        _ table: BackupTable, _ owners: BackupOwners, ownedByUsers: Bool, value: String
    ) -> (sql: String, parameters: [PostgresValue?], guestOwnerLast: String) {
        let owner = PostgresStore.quote(table.ownerColumn)
        switch owners {
        case .everyUser(let guestOwner?) where table.mayBelongToGuestOwner:
            return (
                " WHERE \(owner) IN (SELECT id FROM users) OR \(owner) = \(value)", [PostgresValue(guestOwner)],
                "\(owner) = \(value), "
            )
        case .everyUser:
            if table.name == "users" || ownedByUsers { return ("", [], "") }
            return (" WHERE \(owner) IN (SELECT id FROM users)", [], "")
        case .users(let users):
            return (" WHERE \(owner) = ANY (\(value)::text[])", [PostgresValue.textArray(users)], "")
        }
    }
}

/// Rows of `COPY … TO STDOUT` in text format as `forEachRawRow` hands them
/// over: each row's fields decoded into one buffer reused for every row, each
/// column's kind resolved once per table, by position, not looked up by
/// name per cell. A cell is what the same value read through a query gives
/// (`PostgresColumns.cell`), byte for byte: COPY writes each value with the
/// type's own output function, as a query's text result does, and escapes
/// only the backslash and control characters (`\\`, `\t`, `\n`, …),
/// with `\N` for NULL.
///
/// ```swift
/// let rows = CopyTextRows(kinds: [.text], columns: ["id"], table: "users", location: location)
/// try rows.decode(line) { cells in print(cells.count) }
/// ```
final class CopyTextRows {
    /// Each column's kind, by position.
    private let kinds: UnsafeMutableBufferPointer<PostgresColumns.Kind>
    private let columns: [String]
    private let table: String
    private let location: String
    /// The decoded texts of the current row: never longer than its line.
    private var text: UnsafeMutableBufferPointer<UInt8>
    private let cells: UnsafeMutableBufferPointer<RawCell>
    /// The current row's texts that were not valid UTF-8, repaired as a
    /// query's `String(cString:)` repairs them; freed with the row.
    private var repaired: [UnsafeMutableBufferPointer<UInt8>] = []

    init(kinds: [PostgresColumns.Kind], columns: [String], table: String, location: String) {
        self.kinds = .allocate(capacity: kinds.count)
        _ = self.kinds.initialize(from: kinds)
        self.columns = columns
        self.table = table
        self.location = location
        text = .allocate(capacity: 1 << 12)
        cells = .allocate(capacity: max(kinds.count, 1))
        cells.initialize(repeating: .null)
    }

    deinit {
        kinds.deallocate()
        text.deallocate()
        cells.deallocate()
        for bytes in repaired { bytes.deallocate() }
    }

    /// Decodes one line of the COPY stream and calls `body` with its cells,
    /// valid only during the call.
    func decode(_ line: UnsafeBufferPointer<UInt8>, _ body: (UnsafeBufferPointer<RawCell>) throws -> Void) throws {
        let tab = UInt8(ascii: "\t")
        let backslash = UInt8(ascii: "\\")
        var end = line.count
        if end > 0, line[end - 1] == UInt8(ascii: "\n") { end -= 1 }
        if text.count < end {
            text.deallocate()
            text = .allocate(capacity: max(end, 2 * text.count))
        }
        if !repaired.isEmpty {
            for bytes in repaired { bytes.deallocate() }
            repaired.removeAll(keepingCapacity: true)
        }
        // Read through locals: the class's own properties would be checked for exclusive access at every byte.
        let text = self.text
        let cells = self.cells
        let columnCount = kinds.count
        var position = 0
        var written = 0
        var field = 0
        while true {
            guard field < columnCount else { throw corrupt("a row of \(table) with more values than its columns") }
            if end - position >= 2, line[position] == backslash, line[position + 1] == UInt8(ascii: "N"),
                end - position == 2 || line[position + 2] == tab
            {
                cells[field] = .null
                position += 2
            } else {
                let start = written
                while position < end {
                    let byte = line[position]
                    if byte == tab { break }
                    position += 1
                    guard byte == backslash, position < end else {
                        text[written] = byte
                        written += 1
                        continue
                    }
                    text[written] = Self.unescaped(line, end: end, at: &position)
                    written += 1
                }
                cells[field] = try cell(field, UnsafeBufferPointer(rebasing: text[start..<written]))
            }
            field += 1
            if position >= end { break }
            position += 1
        }
        guard field == columnCount else { throw corrupt("a row of \(table) with fewer values than its columns") }
        try body(UnsafeBufferPointer(rebasing: cells[0..<field]))
    }

    /// The byte an escape after a backslash stands for, `position` moved past it.
    private static func unescaped(_ line: UnsafeBufferPointer<UInt8>, end: Int, at position: inout Int) -> UInt8 {
        let escaped = line[position]
        position += 1
        switch escaped {
        case UInt8(ascii: "b"): return 0x08
        case UInt8(ascii: "f"): return 0x0C
        case UInt8(ascii: "n"): return 0x0A
        case UInt8(ascii: "r"): return 0x0D
        case UInt8(ascii: "t"): return 0x09
        case UInt8(ascii: "v"): return 0x0B
        case UInt8(ascii: "0")...UInt8(ascii: "7"):
            // COPY's own syntax, which the server does not write but reads: up to three octal digits.
            var value = escaped &- UInt8(ascii: "0")
            for _ in 0..<2 {
                guard position < end, (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(line[position]) else { break }
                value = value &* 8 &+ (line[position] &- UInt8(ascii: "0"))
                position += 1
            }
            return value
        case UInt8(ascii: "x"):
            // And up to two hexadecimal digits.
            var value: UInt8 = 0
            var digits = 0
            while digits < 2, position < end, let digit = hexDigit(line[position]) {
                value = value &* 16 &+ digit
                position += 1
                digits += 1
            }
            return digits == 0 ? escaped : value
        default: return escaped
        }
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// A field's decoded bytes as the cell of its column.
    private func cell(_ field: Int, _ bytes: UnsafeBufferPointer<UInt8>) throws -> RawCell {
        switch kinds[field] {
        case .text:
            if TextRule.isValidUTF8(bytes) { return .text(bytes) }
            let fixed = Array(String(decoding: bytes, as: UTF8.self).utf8)
            let copy = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: fixed.count)
            _ = copy.initialize(from: fixed)
            repaired.append(copy)
            return .text(UnsafeBufferPointer(copy))
        case .integer:
            if let value = Self.integer(bytes) { return .integer(value) }
        case .real:
            if let value = Double(String(decoding: bytes, as: UTF8.self)) { return .real(value) }
        }
        throw corrupt("'\(String(decoding: bytes, as: UTF8.self))' in \(table).\(columns[field])")
    }

    /// Decimal digits with an optional sign, as `Int64(_:)` reads them; nil past 64 bits.
    private static func integer(_ bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        var index = 0
        var negative = false
        if let first = bytes.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
            negative = first == UInt8(ascii: "-")
            index = 1
        }
        guard index < bytes.count else { return nil }
        var value: Int64 = 0
        while index < bytes.count {
            let digit = bytes[index] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (shifted, overflow) = value.multipliedReportingOverflow(by: 10)
            let (next, carry) =
                negative
                ? shifted.subtractingReportingOverflow(Int64(digit)) : shifted.addingReportingOverflow(Int64(digit))
            guard !overflow, !carry else { return nil }
            value = next
            index += 1
        }
        return value
    }

    private func corrupt(_ what: String) -> GuestModeError {
        GuestModeError(.corruptStore, "the PostgreSQL store \(location) holds \(what)")
    }
}

/// The writes of one import inside its transaction. A row that needs no
/// question answered before it is written (no placeholder user to fill, no
/// surrogate id that may be taken) is held back, up to
/// `backupPendingRowLimit` rows of one table and one set of columns, and
/// those rows go in together: the users they refer to that have no users row
/// get placeholders in one statement, then one COPY straight into the table,
/// inside a savepoint. The COPY's answer is read only before the next
/// statement (the next batch, a question, the end), so the server writes a
/// batch while the caller reads and checks the rows of the next: at most two
/// batches, `backupPendingRowLimit` rows, are held. No set of every user
/// written is kept, so an import (and `db copy`) of any number of users stays
/// small in memory. When the COPY fails (a key already taken, a value the
/// server refuses), the batch is undone (the savepoint) and written row by
/// row to find the refused row, which the refusal names by its `insert` call
/// (an identity taken by a user in the store names that user too).
private final class PostgresBackupImport: BackupRowImport {
    let connection: PostgresConnection
    private var shapes: [String: BackupTableShape] = [:]
    private var lastShape: (table: String, shape: BackupTableShape)?
    /// The keys to users and the usage totals to make once every row is in
    /// (`dropIndexesBuiltAfterRows`), and after them the indexes
    /// (`takeStatementsBuiltAfterRows` says why in that order).
    var builtAfterRows: [String] = []
    var indexesBuiltAfterRows: [String] = []
    /// The primary keys dropped for the load, by table (`dropPrimaryKeys`):
    /// built at the end with the rest, or, for a table with a surrogate id,
    /// before a row that brings an id of its own is looked at.
    var primaryKeysBuiltAfterRows: [String: String] = [:]
    /// Tables whose sequence was moved past their ids while their key was dropped.
    private var sequencesMovedWithoutKey: Set<String> = []
    /// Some users known to have a users row in this transaction (real or
    /// placeholder, written or held back), to save a look-up: emptied when it
    /// reaches `knownUsersLimit`, so it does not grow with the import.
    private var knownUsers: Set<String> = []
    private static let knownUsersLimit = 10_000
    /// Users that rows refer to but whose users row has not arrived yet.
    private var placeholders: Set<String> = []
    /// Tables given explicit surrogate ids since their sequence was last moved past them.
    private var explicitIDs: Set<String> = []
    /// Set once the server refused a statement: the transaction can only roll back now.
    private var refusedRow: BackupRowRefusal?
    /// Calls of `insert` so far.
    private var insertions = 0
    /// The rows held back, all of one table with the same columns.
    private var pending: PendingRows?
    /// The batch sent last, whose COPY's answer is not read yet.
    private var unsettled: PendingRows?
    /// Rows of one batch: two batches are held at most (`pending` and `unsettled`).
    private static let batchLimit = backupPendingRowLimit / 2
    /// Bytes of one batch (`heldBytes`), whatever its rows: counted in rows
    /// alone, the batches of an archive of 2,000 records of 64 KB each held
    /// all of them, and the import peaked at 232 MB (bench/scale.sh).
    private static let batchByteLimit = 3 << 20

    /// About the memory `values` take while held back: their array and their texts.
    private static func heldBytes(_ values: [CellValue]) -> Int {
        values.withUnsafeBufferPointer { values in
            var bytes = 64 + MemoryLayout<CellValue>.stride * values.count
            for index in values.indices {
                if case .text(let text) = values[index] { bytes += 32 + text.utf8.count }
            }
            return bytes
        }
    }
    /// Per table with a surrogate id, an id above every id in the table and
    /// held back: an archive id above it cannot be taken.
    private var highestIDs: [String: Int64] = [:]
    /// Per table whose primary key is dropped for the load, the id sequence
    /// (its oid) and the next id the import gives (`assignIDs`).
    private var assignedIDs: [String: (sequence: Int64, next: Int64)] = [:]

    private struct PendingRows {
        var table: String
        var columns: [String]
        var shape: BackupTableShape
        /// The shape's `refersToUsers`, asked of every row: held apart, it is read without a retain of the shape.
        var refersToUsers: Bool
        /// Each row's values in `columns`' order, as the archive gave them.
        var rows: [[CellValue]] = []
        /// The `insert` call of each row.
        var insertions: [Int] = []
        /// The users the rows refer to, when the table refers to `users`.
        var owners: Set<String> = []
        /// About what the rows take in memory (`heldBytes`).
        var bytes = 0
    }

    init(_ connection: PostgresConnection) { self.connection = connection }

    func holdsUsers() throws -> Bool {
        try flush()
        return try connection.execute("SELECT 1 AS held FROM users LIMIT 1").first != nil
    }

    func creationTimes(ofUsers ids: [String]) throws -> [String: String] {
        try flush()
        // One round trip for the batch: one a user was most of a whole-store import of 1 M users.
        var times: [String: String] = [:]
        for row in try connection.execute(
            "SELECT id, created_at FROM users WHERE id = ANY($1::text[])", [PostgresValue.textArray(ids)])
        {
            let id = try row.string("id")
            if !placeholders.contains(id) { times[id] = try row.string("created_at") }
        }
        return times
    }

    func hasRecords(ownedBy owner: String) throws -> Bool {
        try flush()
        return try connection.execute(
            "SELECT 1 AS owned FROM records WHERE owner_id = $1 LIMIT 1", [PostgresValue(owner)]
        ).first != nil
    }

    func journalTarget(_ id: Int64) throws -> String? {
        try flush()
        return try connection.execute("SELECT target_id FROM migration_journals WHERE id = $1", [PostgresValue(id)])
            .first?.string("target_id")
    }

    func deleteRows(ownedBy owners: [String], in tables: [BackupTable]) throws {
        try flush()
        guard !owners.isEmpty else { return }
        for table in BackupTable.all.reversed() where tables.contains(table) {
            try connection.execute(
                "DELETE FROM \(PostgresStore.quote(table.name)) WHERE \(PostgresStore.quote(table.ownerColumn)) = ANY ($1::text[])",
                [PostgresValue.textArray(owners)])
        }
        if tables.contains(where: { $0.name == "users" }) {
            knownUsers.subtract(owners)
            placeholders.subtract(owners)
        }
        highestIDs = [:]
    }

    func columns(of table: BackupTable) throws -> Set<String> {
        try usable()
        return Set(try shape(table).columns)
    }

    func insert(
        _ row: BackupRow, into table: BackupTable, ownerHasUsersRow: Bool
    ) throws
        -> BackupRowInsertion
    {
        try usable()
        let call = insertions
        insertions += 1
        let owner = row[table.ownerColumn].flatMap(\.text)
        // Another table's rows go in first, with their placeholders: a users row must know whether it fills one.
        // Compared through `pending?`: `if let pending` copied the batch, a retain and a release of each array.
        if pending != nil, pending?.table != table.name { try flush() }
        if try mayHoldBack(row, table: table, owner: owner) {
            // A table's rows share their columns, so comparing them with the batch's is comparing two references.
            if pending != nil, pending?.table != table.name || pending?.columns != row.columns { try flush() }
            if pending == nil {
                let shape = try self.shape(table)
                pending = PendingRows(
                    table: table.name, columns: row.columns, shape: shape, refersToUsers: shape.refersToUsers)
            }
            pending?.bytes += Self.heldBytes(row.values)
            pending?.rows.append(row.values)
            pending?.insertions.append(call)
            if table.name == "users", let owner { remember(owner) }
            if pending?.refersToUsers == true, !ownerHasUsersRow, let owner { pending?.owners.insert(owner) }
            if table.hasSurrogateID, case .integer(let id) = row["id"] {
                highestIDs[table.name] = id
                explicitIDs.insert(table.name)
            }
            if pending?.rows.count ?? 0 >= Self.batchLimit || pending?.bytes ?? 0 >= Self.batchByteLimit {
                try write(waiting: false)
            }
            return .inserted
        }
        try flush()
        let shape = try self.shape(table)
        if table.hasSurrogateID { highestIDs[table.name] = nil }
        var values = row
        var insertion = BackupRowInsertion.inserted
        if table.hasSurrogateID {
            if case .integer(let id) = values["id"] {
                try buildSurrogateKey(of: table.name)
                let taken =
                    try connection.execute(
                        "SELECT 1 AS taken FROM \(PostgresStore.quote(table.name)) WHERE id = $1", [PostgresValue(id)]
                    ).first != nil
                if taken {
                    values["id"] = nil
                    insertion = .renumbered
                }
            } else {
                // No id, or NULL: the store assigns one, as SQLite does for a NULL rowid.
                values["id"] = nil
            }
            if values["id"] == nil {
                try moveSequencePastUsedIDs(table)
            } else {
                explicitIDs.insert(table.name)
            }
        }
        if shape.refersToUsers, !ownerHasUsersRow, let owner { try ensureUserRow(owner) }
        if table.name == "users", let owner, placeholders.contains(owner) {
            try fillPlaceholder(owner, with: values, shape: shape)
            return insertion
        }
        let inserted = try refusing {
            try connection.execute(
                insertStatement(table.name, columns: values.columns),
                zip(values.columns, values.values).map { shape.parameter($1, column: $0) })
        }
        guard inserted.changes == 1 else {
            throw BackupRowRefusal(.duplicateKey, detail: Self.duplicateDetail(table.name))
        }
        if table.name == "users", let owner { remember(owner) }
        return insertion
    }

    /// Whether `row` can wait for the batch: nothing about it must be asked
    /// of the store first.
    private func mayHoldBack(
        _ row: BackupRow, table: BackupTable, owner: String?
    )
        throws -> Bool
    {
        if table.name == "users", let owner, placeholders.contains(owner) || knownUsers.contains(owner) {
            return false
        }
        if table.hasSurrogateID {
            // No id (the engine leaves archive ids out): the COPY has the store assign them, after the
            // sequence is moved past the ids in the table (`write`).
            guard case .integer(let id) = row["id"] else { return row["id"] == nil }
            try buildSurrogateKey(of: table.name)
            if highestIDs[table.name] == nil {
                try flush()
                highestIDs[table.name] =
                    try connection.execute(
                        "SELECT coalesce(max(id), 0) AS top FROM \(PostgresStore.quote(table.name))"
                    ).first?.int64("top") ?? 0
            }
            guard let highest = highestIDs[table.name], id > highest else { return false }
        }
        return true
    }

    /// Writes the rows held back, and reads the server's answer.
    private func flush() throws {
        try write(waiting: true)
    }

    /// Writes the rows held back, after reading the answer to the batch sent
    /// before them; without `waiting`, their own answer is read later (`settle`).
    private func write(waiting: Bool) throws {
        try usable()
        try settle()
        guard let batch = pending else { return }
        pending = nil
        let table = PostgresStore.quote(batch.table)
        var columns = batch.columns.map(PostgresStore.quote).joined(separator: ", ")
        try ensureUserRows(batch.owners)
        var ids: (first: Int64, setSequence: String)?
        if let surrogate = BackupTable.named(batch.table), surrogate.hasSurrogateID, !batch.columns.contains("id") {
            ids = try assignIDs(surrogate, count: batch.rows.count)
            if ids != nil { columns = "id, " + columns } else { try moveSequencePastUsedIDs(surrogate) }
            // The ids the store assigns are above any known so far.
            highestIDs[batch.table] = nil
        }
        var nextID = ids?.first ?? 0
        do {
            // Straight into the table: a row that collides with a stored row,
            // or with another of the batch, fails the COPY (where
            // `ON CONFLICT DO NOTHING` would leave it out), and so does a value
            // the table refuses. The RELEASE runs only after a COPY that wrote
            // every row; after a failure the savepoint is still there.
            try connection.copy(
                """
                SAVEPOINT guestmode_import_batch;\(ids?.setSequence ?? "") COPY \(table) (\(columns)) FROM STDIN;
                RELEASE SAVEPOINT guestmode_import_batch
                """, rows: batch.rows, waiting: waiting
            ) { values, buffer in
                if ids != nil {
                    PostgresConnection.appendCopyInteger(nextID, to: &buffer)
                    buffer.append(UInt8(ascii: "\t"))
                    nextID += 1
                }
                // The values lent where they lie: `enumerated()` copied each, a retain and a release a text.
                values.withUnsafeBufferPointer { values in
                    for index in values.indices {
                        if index > 0 { buffer.append(UInt8(ascii: "\t")) }
                        switch values[index] {
                        case .null: PostgresConnection.appendCopyText(nil, to: &buffer)
                        case .integer(let number): PostgresConnection.appendCopyInteger(number, to: &buffer)
                        case .text(let text): PostgresConnection.appendCopyText(text, to: &buffer)
                        case .real:
                            PostgresConnection.appendCopyText(
                                batch.shape.parameter(values[index], column: batch.columns[index])?.text, to: &buffer)
                        }
                    }
                }
            }
            if !waiting { unsettled = batch }
            return
        } catch let failure as PostgresFailure where Self.isRefusal(failure) {
            // Found again row by row below, with the row it belongs to.
        }
        try writeRowByRow(batch)
    }

    /// The ids of a batch of `count` rows without theirs, given by the
    /// import rather than by the table's sequence, while the table's primary
    /// key is dropped for the load: `nextval` for each row was 0.38 s of the
    /// server's 2.7 s for the 2 M events of a restore of 1 M guests
    /// (bench/results.md). No other writer can take an id meanwhile: dropping
    /// the key locked the table until the import ends. The sequence is moved
    /// to the batch's last id in the batch's own statement (returned here, to
    /// run before its COPY, without a round trip of its own), so an id the
    /// store assigns later (a row written alone, or after the key is built)
    /// comes after them. Nil when the table keeps its key.
    private func assignIDs(_ table: BackupTable, count: Int) throws -> (first: Int64, setSequence: String)? {
        guard primaryKeysBuiltAfterRows[table.name] != nil, count > 0 else { return nil }
        var assigned = assignedIDs[table.name]
        if assigned == nil {
            try moveSequencePastUsedIDs(table)
            let rows = try connection.execute(
                """
                SELECT s.seq::oid::bigint AS seq, nextval(s.seq) AS next
                FROM (SELECT pg_get_serial_sequence($1, 'id')::regclass AS seq) s
                """, [PostgresValue(PostgresStore.quote(table.name))])
            assigned = try rows.first.map { (try $0.int64("seq"), try $0.int64("next")) }
        }
        guard let (sequence, first) = assigned else { return nil }
        let (last, overflow) = first.addingReportingOverflow(Int64(count - 1))
        guard !overflow, last < Int64.max else {
            throw GuestModeError(
                .databaseError,
                "the id sequence of \(table.name) in \(connection.location) has no ids left; nothing was imported")
        }
        assignedIDs[table.name] = (sequence, last + 1)
        return (first, " SELECT setval(\(sequence)::oid::regclass, \(last));")
    }

    /// Reads the answer to the batch sent last, if it is not read yet.
    private func settle() throws {
        guard let batch = unsettled else { return }
        unsettled = nil
        do {
            try connection.settle()
        } catch let failure as PostgresFailure where Self.isRefusal(failure) {
            try writeRowByRow(batch)
        }
    }

    /// A batch whose COPY failed, undone and written again row by row: throws
    /// the refusal of the row the server refuses, named by its `insert` call.
    private func writeRowByRow(_ batch: PendingRows) throws {
        try connection.execute("ROLLBACK TO SAVEPOINT guestmode_import_batch")
        // Written alone, the rows take their ids from the sequence: a later batch asks it for its first id again.
        assignedIDs[batch.table] = nil
        let statement = insertStatement(batch.table, columns: batch.columns)
        for (index, values) in batch.rows.enumerated() {
            let parameters = zip(batch.columns, values).map { batch.shape.parameter($1, column: $0) }
            let inserted: PostgresRows
            do {
                inserted = try refusing { try connection.execute(statement, parameters) }
            } catch var refusal as BackupRowRefusal {
                refusal.insertion = batch.insertions[index]
                refusedRow = refusal
                throw refusal
            }
            guard inserted.changes == 1 else {
                var refusal = BackupRowRefusal(.duplicateKey, detail: Self.duplicateDetail(batch.table))
                if batch.table == "identities", let holder = try identityHolder(values, columns: batch.columns) {
                    refusal = BackupRowRefusal(.identityTaken(holder: holder), detail: refusal.detail)
                }
                refusal.insertion = batch.insertions[index]
                refusedRow = refusal
                throw refusal
            }
        }
        try connection.execute("RELEASE SAVEPOINT guestmode_import_batch")
    }

    /// The user holding the identity an identities row brings, when one does: asked once its insert was
    /// refused (`ON CONFLICT DO NOTHING` leaves the transaction usable), so that the refusal names who holds it.
    private func identityHolder(_ values: [CellValue], columns: [String]) throws -> String? {
        guard let provider = columns.firstIndex(of: "provider").flatMap({ values[$0].text }),
            let subject = columns.firstIndex(of: "subject").flatMap({ values[$0].text })
        else { return nil }
        return try connection.execute(
            "SELECT user_id FROM identities WHERE provider = $1 AND subject = $2",
            [PostgresValue(provider), PostgresValue(subject)]
        ).first?.string("user_id")
    }

    private func insertStatement(_ table: String, columns: [String]) -> String {
        """
        INSERT INTO \(PostgresStore.quote(table)) (\(columns.map(PostgresStore.quote).joined(separator: ", ")))
        VALUES (\(columns.indices.map { "$\($0 + 1)" }.joined(separator: ", "))) ON CONFLICT DO NOTHING
        """
    }

    private static func duplicateDetail(_ table: String) -> String {
        "duplicate key value violates a unique constraint of \(table): a row with the same key is already there"
    }

    private static func isRefusal(_ failure: PostgresFailure) -> Bool {
        guard let state = failure.sqlState else { return false }
        return state.hasPrefix("22") || state.hasPrefix("23")
    }

    func tableWithDanglingReferences() throws -> String? {
        try flush()
        guard !placeholders.isEmpty else { return nil }
        for table in BackupTable.all where table.name != "users" {
            guard try shape(table).refersToUsers else { continue }
            if try connection.execute(
                """
                SELECT 1 AS dangling FROM \(PostgresStore.quote(table.name))
                WHERE \(PostgresStore.quote(table.ownerColumn)) = ANY ($1::text[]) LIMIT 1
                """,
                [PostgresValue.textArray(placeholders.sorted())]
            ).first != nil {
                return table.name
            }
        }
        return nil
    }

    /// Starts building the indexes and keys dropped for the load: the
    /// server builds them while the engine checks the rows against each other.
    func finishRows() throws {
        try flush()
        let statements = takeStatementsBuiltAfterRows()
        guard !statements.isEmpty else { return }
        // Inside the transaction: a refusal or a failure rolls the drops back with the rows.
        try connection.sendWithoutWaiting(statements.joined(separator: ";\n"))
    }

    /// The statements that make what was dropped for the load, taken: they
    /// run once. The keys to users and the totals first: the server checks
    /// and builds each on one core, while the engine compares the rows on the
    /// other (`finishRows`); then the primary keys and indexes, which it
    /// sorts with parallel workers on both. In the other order the engine's
    /// comparison shared the cores with the sorts and the keys' checks ran
    /// alone on one core after them: a restore of 1 M guests took 0.6–1.1 s
    /// longer (bench/results.md).
    private func takeStatementsBuiltAfterRows() -> [String] {
        let statements =
            builtAfterRows + primaryKeysBuiltAfterRows.keys.sorted().compactMap { primaryKeysBuiltAfterRows[$0] }
            + indexesBuiltAfterRows
        builtAfterRows = []
        primaryKeysBuiltAfterRows = [:]
        indexesBuiltAfterRows = []
        return statements
    }

    /// Builds the primary key of `table` now, if it was dropped for the load:
    /// before a row's own id is compared with the table's.
    private func buildSurrogateKey(of table: String) throws {
        guard let statement = primaryKeysBuiltAfterRows.removeValue(forKey: table) else { return }
        try flush()
        try connection.execute(statement)
    }

    /// Before the import commits (or rolls back as a dry run): nothing
    /// refused may be swallowed, no reference may dangle, the indexes and
    /// keys dropped for the load are back (built here when no caller said
    /// `finishRows`), and every table's id sequence moves past the ids the
    /// import brought.
    func finish(committing: Bool) throws {
        try flush()
        let statements = takeStatementsBuiltAfterRows()
        if !statements.isEmpty { try connection.execute(statements.joined(separator: ";\n")) }
        guard committing else { return }
        if !placeholders.isEmpty {
            let table = try tableWithDanglingReferences() ?? "a table"
            throw GuestModeError(
                .databaseError,
                "database error on \(connection.location): rows in \(table) refer to users the store does not hold (foreign key); nothing was imported"
            )
        }
        for name in explicitIDs.sorted() {
            guard let table = BackupTable.named(name) else { continue }
            try moveSequencePastUsedIDs(table)
        }
    }

    /// Identity columns do not notice explicit ids, so before the store
    /// assigns one (and at the end of the import) the sequence is moved past
    /// the largest id in the table: never backwards, and only when behind.
    private func moveSequencePastUsedIDs(_ table: BackupTable) throws {
        // While the table's key is dropped for the load only the sequence gives ids (a row's own id builds
        // the key first), so once is enough: asked before every batch, `max(id)` would read the whole table.
        if primaryKeysBuiltAfterRows[table.name] != nil {
            guard sequencesMovedWithoutKey.insert(table.name).inserted else { return }
        }
        try connection.execute(
            """
            SELECT setval(s.seq, m.top) FROM
                (SELECT pg_get_serial_sequence($1, 'id')::regclass AS seq) s,
                (SELECT max(id) AS top FROM \(PostgresStore.quote(table.name))) m
            WHERE m.top > coalesce(pg_sequence_last_value(s.seq), 0)
            """,
            [PostgresValue(PostgresStore.quote(table.name))])
        explicitIDs.remove(table.name)
    }

    /// Gives `owner` a placeholder users row when the store has none yet, so
    /// a row may come before its user despite the immediate foreign keys.
    private func ensureUserRow(_ owner: String) throws {
        guard !knownUsers.contains(owner) else { return }
        if try connection.execute("SELECT 1 AS present FROM users WHERE id = $1", [PostgresValue(owner)]).first == nil {
            try connection.execute(
                "INSERT INTO users (id, created_at, last_seen_at) VALUES ($1, '', '')", [PostgresValue(owner)])
            placeholders.insert(owner)
        }
        remember(owner)
    }

    /// `ensureUserRow` for the users a batch of held-back rows refers to, in
    /// one statement whatever their number. ON CONFLICT, not NOT EXISTS: it
    /// always probes the primary key, where the planner, without statistics
    /// for a table just filled, hashes every users row for each batch.
    private func ensureUserRows(_ owners: Set<String>) throws {
        let unknown = owners.filter { !knownUsers.contains($0) }
        guard !unknown.isEmpty else { return }
        let made = try connection.execute(
            """
            INSERT INTO users (id, created_at, last_seen_at)
            SELECT wanted.id, '', '' FROM unnest($1::text[]) AS wanted (id)
            ON CONFLICT (id) DO NOTHING RETURNING id
            """,
            [PostgresValue.textArray(unknown.sorted())])
        for row in made { placeholders.insert(try row.string("id")) }
    }

    /// Notes that `user` has a users row, forgetting the others noted when
    /// there are `knownUsersLimit` of them.
    private func remember(_ user: String) {
        if knownUsers.count >= Self.knownUsersLimit { knownUsers.removeAll(keepingCapacity: true) }
        knownUsers.insert(user)
    }

    /// The real users row arrives for a placeholder: its columns replace the
    /// placeholder's, columns it does not carry take their defaults.
    private func fillPlaceholder(_ id: String, with values: BackupRow, shape: BackupTableShape) throws {
        var assignments: [String] = []
        var parameters: [PostgresValue?] = []
        for column in shape.columns {
            if let value = values[column] {
                parameters.append(shape.parameter(value, column: column))
                assignments.append("\(PostgresStore.quote(column)) = $\(parameters.count)")
            } else {
                assignments.append("\(PostgresStore.quote(column)) = DEFAULT")
            }
        }
        parameters.append(PostgresValue(id))
        _ = try refusing {
            try connection.execute(
                "UPDATE users SET \(assignments.joined(separator: ", ")) WHERE id = $\(parameters.count)", parameters)
        }
        placeholders.remove(id)
    }

    /// Runs one write; a value the table's rules refuse becomes a refusal.
    /// The server has then ended the transaction, so the import is over.
    private func refusing<T>(_ write: () throws -> T) throws -> T {
        do {
            return try write()
        } catch let failure as PostgresFailure {
            guard Self.isRefusal(failure) else { throw failure }
            let refusal = BackupRowRefusal(
                failure.isUniqueViolation ? .duplicateKey : .invalid,
                detail: PostgresConnection.redacted(failure.message))
            refusedRow = refusal
            throw refusal
        }
    }

    /// After a refused row the server accepts nothing but a rollback.
    private func usable() throws {
        guard let refusedRow else { return }
        throw GuestModeError(
            .databaseError,
            "the import cannot go on after a refused row (\(refusedRow.detail)); nothing was imported")
    }

    /// Reads every backup table's shape now, from the catalog as it stands.
    func learnShapes() throws {
        for table in BackupTable.all { _ = try shape(table) }
    }

    private func shape(_ table: BackupTable) throws -> BackupTableShape {
        // Rows come table by table: the last table's shape, without hashing its name.
        if let lastShape, lastShape.table == table.name { return lastShape.shape }
        if let shape = shapes[table.name] {
            lastShape = (table.name, shape)
            return shape
        }
        try settle()
        let shape = try BackupTableShape(table, connection)
        shapes[table.name] = shape
        lastShape = (table.name, shape)
        return shape
    }
}
