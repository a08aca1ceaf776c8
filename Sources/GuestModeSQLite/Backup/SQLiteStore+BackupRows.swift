import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteStore: BackupRowStore {
    package func readBackupRows<T>(_ body: (any BackupRowSource) throws -> T) throws -> T {
        try read { db in try body(SQLiteBackupSource(db)) }
    }

    package func importBackupRows<T>(dryRun: Bool, _ body: (any BackupRowImport) throws -> T) throws -> T {
        try writeDurably(writingPagesOnce: !dryRun) { db in
            // Rows may arrive before the users row they refer to in a hand-made archive; check at the end instead.
            try db.execute(sql: "PRAGMA defer_foreign_keys = ON")
            // 8 MiB, as for an event log: with 16 MiB a whole-store import of 1 M users peaked at 72 MB.
            try useIngestCache(db)
            let deferred = dryRun ? [] : try dropIndexesBuiltAfterRows(db)
            let value = try body(SQLiteBackupImport(db))
            // Inside the transaction: a refusal or a failure rolls the drops back with the rows.
            for index in deferred { try db.execute(sql: index) }
            return (value, !dryRun)
        }
    }

    /// Into a store that holds no user yet (a restore), the secondary
    /// indexes that enforce nothing are dropped before the rows go in, and
    /// their statements returned, to build each once over all its rows, as
    /// `sqlite3 .dump` orders a load: kept up row by row, the events' and
    /// users' were a third of a whole-store import's time at 1 M guests
    /// (bench/scale.md). Unique indexes stay, so a repeated key is still
    /// refused at its row; nothing the import asks while writing reads the
    /// dropped ones (look-ups go by primary key). Nothing for a store with
    /// users: its readers and its byte-for-byte refusals stay as they are.
    private func dropIndexesBuiltAfterRows(_ db: Database) throws -> [String] {
        guard try Self.holdsNoUsers(db) else { return [] }
        let tables = BackupTable.all.map(\.name)
        let indexes = try Row.fetchAll(
            db,
            sql: """
                SELECT m.name, m.sql FROM sqlite_master m JOIN pragma_index_list(m.tbl_name) l ON l.name = m.name
                WHERE m.type = 'index' AND m.sql IS NOT NULL AND l."unique" = 0
                  AND m.tbl_name IN (\(tables.map { _ in "?" }.joined(separator: ", ")))
                ORDER BY m.name
                """, arguments: StatementArguments(tables))
        var statements: [String] = []
        for index in indexes {
            let name: String = index["name"]
            statements.append(index["sql"])
            try db.execute(sql: "DROP INDEX \(name.quotedDatabaseIdentifier)")
        }
        return statements
    }
}

/// The backup rows inside one read transaction.
private final class SQLiteBackupSource: BackupRowSource {
    let db: Database

    init(_ db: Database) { self.db = db }

    func userExists(_ id: String) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM users WHERE id = ?)", arguments: [id]) ?? false
    }

    func hasRecords(ownedBy owner: String) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM records WHERE owner_id = ?)", arguments: [owner])
            ?? false
    }

    func forEachUserID(_ body: (String) throws -> Void) throws {
        let users = try String.fetchCursor(db, sql: "SELECT id FROM users ORDER BY id")
        while let user = try users.next() { try body(user) }
    }

    func rowCount(in table: BackupTable, of owners: BackupOwners) throws -> Int {
        let condition = try condition(table, owners)
        return try Int.fetchOne(
            db, sql: "SELECT COUNT(*) FROM \(table.name)\(condition.sql)", arguments: condition.arguments) ?? 0
    }

    func forEachRow(
        in table: BackupTable, of owners: BackupOwners, _ body: ([String], [CellValue]) throws -> Void
    ) throws {
        let condition = try condition(table, owners)
        let statement = try db.makeStatement(sql: "SELECT * FROM \(table.name)\(condition.sql) ORDER BY rowid")
        try forEachCellRow(
            of: statement, arguments: condition.arguments, table: table.name, purpose: "backups", body)
    }

    func forEachRawRow(
        in table: BackupTable, of owners: BackupOwners, _ body: ([String], UnsafeBufferPointer<RawCell>) throws -> Void
    ) throws {
        let condition = try condition(table, owners)
        let statement = try db.makeStatement(sql: "SELECT * FROM \(table.name)\(condition.sql) ORDER BY rowid")
        try forEachRawCellRow(
            of: statement, arguments: condition.arguments, table: table.name, purpose: "backups", body)
    }

    /// Tables whose owner column is a NOT NULL foreign key to `users(id)`, by
    /// name: every row of such a table belongs to a user, since the store
    /// enforces foreign keys on every write (`AppDatabase.configuration`) and
    /// checks them after an import or migration that defers them.
    private var ownedByUsers: [String: Bool] = [:]

    private func isOwnedByUsers(_ table: BackupTable) throws -> Bool {
        if let known = ownedByUsers[table.name] { return known }
        let references = try Row.fetchAll(
            db, sql: "SELECT \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?)", arguments: [table.name]
        )
        .contains { row in
            (row[0] as String?) == "users" && (row[1] as String?) == table.ownerColumn && (row[2] as String?) == "id"
        }
        let notNull =
            try Bool.fetchOne(
                db, sql: "SELECT \"notnull\" FROM pragma_table_info(?) WHERE name = ?",
                arguments: [table.name, table.ownerColumn]) ?? false
        let owned = references && notNull
        ownedByUsers[table.name] = owned
        return owned
    }

    /// The WHERE clause (or none) that picks the owners' rows of a table. Every user's
    /// rows of a table whose owner column the store holds to `users(id)` are
    /// all its rows: read without looking each row's owner up in `users`,
    /// which was most of a whole-store export of many small users.
    private func condition(
        _ table: BackupTable, _ owners: BackupOwners
    ) throws -> (sql: String, arguments: StatementArguments) {
        switch owners {
        case .everyUser(let guestOwner?) where table.mayBelongToGuestOwner:
            return (" WHERE \(table.ownerColumn) IN (SELECT id FROM users) OR \(table.ownerColumn) = ?", [guestOwner])
        case .everyUser:
            if try table.name == "users" || isOwnedByUsers(table) { return ("", []) }
            return (" WHERE \(table.ownerColumn) IN (SELECT id FROM users)", [])
        case .users(let users):
            return (
                " WHERE \(table.ownerColumn) IN (\(users.map { _ in "?" }.joined(separator: ", ")))",
                StatementArguments(users)
            )
        }
    }
}

/// The writes of one import inside its durable transaction.
private final class SQLiteBackupImport: BackupRowImport {
    let db: Database
    /// One prepared INSERT per table, for the columns its rows carry (an
    /// archive's rows of a table all carry the same ones), in that order.
    private var inserts: [String: (columns: [String], insert: BoundStatement)] = [:]
    /// Per table with a surrogate id, the lookup of whether it holds an id.
    private var idLookups: [String: BoundStatement] = [:]

    init(_ db: Database) { self.db = db }

    func holdsUsers() throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM users)") ?? false
    }

    func creationTimes(ofUsers ids: [String]) throws -> [String: String] {
        // One look-up a user through a statement prepared once: in-process, a batch statement saves nothing.
        let statement = try db.statement("SELECT created_at FROM users WHERE id = ?")
        var times: [String: String] = [:]
        for id in ids {
            if let created = try String.fetchOne(statement, arguments: [id]) { times[id] = created }
        }
        return times
    }

    func hasRecords(ownedBy owner: String) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM records WHERE owner_id = ?)", arguments: [owner])
            ?? false
    }

    func journalTarget(_ id: Int64) throws -> String? {
        try String.fetchOne(db, sql: "SELECT target_id FROM migration_journals WHERE id = ?", arguments: [id])
    }

    func deleteRows(ownedBy owners: [String], in tables: [BackupTable]) throws {
        guard !owners.isEmpty else { return }
        for table in BackupTable.all.reversed() where tables.contains(table) {
            try db.execute(
                sql:
                    "DELETE FROM \(table.name) WHERE \(table.ownerColumn) IN (\(owners.map { _ in "?" }.joined(separator: ", ")))",
                arguments: StatementArguments(owners))
        }
    }

    func columns(of table: BackupTable) throws -> Set<String> {
        Set(try db.columns(in: table.name).map(\.name))
    }

    /// The store's own foreign keys wait for the end of the transaction, so the users row may come later.
    func insert(
        _ row: BackupRow, into table: BackupTable, ownerHasUsersRow: Bool
    ) throws
        -> BackupRowInsertion
    {
        var values = row
        var insertion = BackupRowInsertion.inserted
        if table.hasSurrogateID, case .integer(let id) = values["id"], try holdsID(id, in: table) {
            values["id"] = nil
            insertion = .renumbered
        }
        // Bound through SQLite's C API (`BoundStatement`): GRDB's generic
        // argument binding (`StatementArguments`) was a fifth of an import's
        // instructions. A table's rows list the same columns in the same
        // order: bound in that order once the row's columns are the last
        // row's (the same array, as a rule).
        if let layout = lastLayout, layout.table == table.name, layout.bind(values) {
            return try run(layout.insert, table: table, row: values, insertion: insertion)
        }
        let prepared: (columns: [String], insert: BoundStatement)
        if let cached = inserts[table.name], cached.columns.count == values.count,
            cached.insert.bind(values, inOrder: cached.columns)
        {
            prepared = cached
        } else {
            let columns = values.columns.sorted()
            prepared = (
                columns,
                BoundStatement(
                    try db.makeStatement(
                        sql:
                            "INSERT INTO \(table.name) (\(columns.joined(separator: ", "))) VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))"
                    ))
            )
            inserts[table.name] = prepared
            _ = prepared.insert.bind(values, inOrder: columns)
        }
        lastLayout = InsertLayout(
            table: table.name, row: values, statementColumns: prepared.columns, insert: prepared.insert)
        return try run(prepared.insert, table: table, row: values, insertion: insertion)
    }

    /// Whether `table` already holds a row with surrogate id `id`.
    private func holdsID(_ id: Int64, in table: BackupTable) throws -> Bool {
        let lookup: BoundStatement
        if let cached = idLookups[table.name] {
            lookup = cached
        } else {
            lookup = BoundStatement(try db.makeStatement(sql: "SELECT 1 FROM \(table.name) WHERE id = ?"))
            idLookups[table.name] = lookup
        }
        lookup.bind(.integer(id), at: 1)
        return try lookup.exists()
    }

    private func run(
        _ insert: BoundStatement, table: BackupTable, row: BackupRow, insertion: BackupRowInsertion
    ) throws -> BackupRowInsertion {
        do {
            _ = try insert.execute()
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            throw try refusal(error, table: table, row: row)
        }
        return insertion
    }

    /// The last row's columns in its order, each with its parameter in the table's INSERT.
    private var lastLayout: InsertLayout?

    private struct InsertLayout {
        let table: String
        let columns: [String]
        let positions: [Int32]
        let insert: BoundStatement

        init(table: String, row: BackupRow, statementColumns: [String], insert: BoundStatement) {
            self.table = table
            self.insert = insert
            columns = row.columns
            positions = columns.map { column in Int32((statementColumns.firstIndex(of: column) ?? 0) + 1) }
        }

        /// Binds `row` when it lists exactly these columns in this order (then
        /// every parameter is bound); false, nothing bound, otherwise.
        func bind(_ row: BackupRow) -> Bool {
            guard row.columns == columns else { return false }
            for (value, position) in zip(row.values, positions) { insert.bind(value, at: position) }
            return true
        }
    }

    func tableWithDanglingReferences() throws -> String? {
        guard let violation = try Row.fetchOne(db, sql: "PRAGMA foreign_key_check") else { return nil }
        return violation[0] as String? ?? "a table"
    }

    private func refusal(
        _ error: DatabaseError, table: BackupTable, row: BackupRow
    ) throws -> BackupRowRefusal {
        let detail = error.message ?? "\(error)"
        if table.name == "identities", let provider = row["provider"]?.text, let subject = row["subject"]?.text,
            let holder = try String.fetchOne(
                db, sql: "SELECT user_id FROM identities WHERE provider = ? AND subject = ?",
                arguments: [provider, subject])
        {
            return BackupRowRefusal(.identityTaken(holder: holder), detail: detail)
        }
        if error.extendedResultCode == .SQLITE_CONSTRAINT_UNIQUE
            || error.extendedResultCode == .SQLITE_CONSTRAINT_PRIMARYKEY
        {
            return BackupRowRefusal(.duplicateKey, detail: detail)
        }
        return BackupRowRefusal(.invalid, detail: detail)
    }
}
