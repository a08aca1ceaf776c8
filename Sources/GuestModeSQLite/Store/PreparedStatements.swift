internal import GRDB

/// The statements one of `ReadConnections`' connections keeps prepared, found by the address of their SQL's
/// literal. GRDB's `cachedStatement(sql:)` finds a statement by hashing its whole SQL, about 1 k instructions
/// a statement and 4–14 k of every served read (bench/results.md, "Serving, round 21"); a literal's address
/// is one word to hash. One literal is one text, so it names one statement; two literals of the same text
/// may share an address, and then share the statement, as they would share GRDB's.
///
/// It also remembers what the connection's reads read (`remembered`), for as long as the store is unchanged:
/// SQLite's `PRAGMA data_version` on a connection changes when another connection commits, and these connections
/// only read, so an unchanged version means every row is as the read before saw it.
///
/// Used only by the thread that holds the connection, while it holds it (`ReadConnections.read`), which is
/// what makes it `Sendable`. Its statements are finalized before the connection closes.
final class PreparedStatements: @unchecked Sendable {
    /// The statements of the connection the running read holds; nil outside `ReadConnections.read`.
    @TaskLocal static var current: PreparedStatements?

    /// What the reads remember is at most this many bytes (`Remembered.cost`) a connection, all of it forgotten
    /// at once when a value would pass it: a served read's rows are a few hundred bytes, and the server holds
    /// its memory within 64 MB (bench/results.md, "Serving, round 3").
    static let rememberedBytes = 512 * 1024

    private let connection: ObjectIdentifier
    private var statements: [UnsafeRawPointer: Statement] = [:]
    /// The store's `data_version` when `remembered` was last known current; nil before the first read.
    private var dataVersion: Int64?
    /// Whether this transaction already checked `dataVersion`: a read transaction sees one snapshot.
    private var isCurrent = false
    private var remembered: [RememberedRead: (value: any Sendable, cost: Int)] = [:]
    private var rememberedCost = 0

    init(of db: Database) {
        connection = ObjectIdentifier(db)
    }

    /// The statement for the literal `sql` on `db`, prepared on first use; nil when `db` is another connection.
    func statement(_ sql: StaticString, in db: Database) throws -> Statement? {
        guard ObjectIdentifier(db) == connection, sql.hasPointerRepresentation else { return nil }
        return try statement(at: UnsafeRawPointer(sql.utf8Start), in: db) { sql.description }
    }

    /// The statement for `sql` on `db`, prepared on first use; nil when `db` is another connection.
    func statement(_ sql: SQLText, in db: Database) throws -> Statement? {
        guard ObjectIdentifier(db) == connection else { return nil }
        return try statement(at: UnsafeRawPointer(Unmanaged.passUnretained(sql).toOpaque()), in: db) { sql.text }
    }

    /// A literal's bytes and an `SQLText` object never share an address: one lies in the binary, the other on
    /// the heap, kept for the process's life.
    private func statement(at key: UnsafeRawPointer, in db: Database, text: () -> String) throws -> Statement {
        if let prepared = statements[key] { return prepared }
        let prepared = try db.makeStatement(sql: text())
        statements[key] = prepared
        return prepared
    }

    /// Finalizes every statement, as a connection must before it closes.
    func removeAll() {
        statements.removeAll()
        forget()
    }

    /// `read()`'s value, or the value it gave for the same `query` and `arguments` in an earlier transaction of
    /// this connection, when no other connection has committed since and `holds` says it answers this read too.
    /// Only inside a transaction on this connection; elsewhere `read()` runs. `cost` is the value's size in
    /// bytes, about.
    func remembered<Value: Sendable>(
        _ query: StaticString, _ arguments: [String], in db: Database, holds: (Value) -> Bool, cost: (Value) -> Int,
        _ read: () throws -> Value
    ) throws -> Value {
        guard ObjectIdentifier(db) == connection, db.isInsideTransaction, query.hasPointerRepresentation else {
            return try read()
        }
        if !isCurrent {
            // Read in this transaction: the snapshot's version, which its every later read sees.
            let pragma: StaticString = "PRAGMA data_version"
            let version =
                try Int64.fetchOne(statement(at: UnsafeRawPointer(pragma.utf8Start), in: db) { pragma.description })
                ?? -1
            if version != dataVersion { forget() }
            dataVersion = version
            isCurrent = true
        }
        let key = RememberedRead(query: UnsafeRawPointer(query.utf8Start), arguments: arguments)
        // Unwrapped first: `nil as? Value` succeeds when `Value` is itself optional.
        if let stored = remembered[key] {
            if let known = stored.value as? Value, holds(known) { return known }
            remembered[key] = nil
            rememberedCost -= stored.cost
        }
        let value = try read()
        let valueCost = 64 + cost(value) + arguments.reduce(0) { $0 + $1.utf8.count + 16 }
        if rememberedCost + valueCost > Self.rememberedBytes { forget() }
        if valueCost <= Self.rememberedBytes {
            remembered[key] = (value, valueCost)
            rememberedCost += valueCost
        }
        return value
    }

    /// Ends a read on the connection: the next one checks the store's version again.
    func endRead() {
        isCurrent = false
    }

    /// How many reads are remembered.
    var rememberedCount: Int { remembered.count }

    private func forget() {
        remembered.removeAll()
        rememberedCost = 0
    }
}

/// A read `PreparedStatements.remembered` keeps: its query's name and its arguments.
private struct RememberedRead: Hashable {
    let query: UnsafeRawPointer
    let arguments: [String]
}

/// A statement's SQL made once from parts (a list of columns several statements share), kept in a `static let`:
/// the object's address names the statement, as a literal's does.
///
/// ```swift
/// static let grantsOfUser = SQLText("SELECT \(grantColumns) FROM meter_grants WHERE user_id = ?")
/// let grants = try readAll(db.statement(Self.grantsOfUser), arguments: [userID], grantRow)
/// ```
final class SQLText: Sendable {
    let text: String

    init(_ text: String) {
        self.text = text
    }
}

extension Database {
    /// The statement for the literal `sql`: kept by the connection's `PreparedStatements` during a read on one of
    /// `ReadConnections`' connections, by GRDB's statement cache otherwise.
    ///
    /// ```swift
    /// let user = try readOne(db.statement("SELECT * FROM users WHERE id = ?"), arguments: [id], decode)
    /// ```
    func statement(_ sql: StaticString) throws -> Statement {
        if let prepared = try PreparedStatements.current?.statement(sql, in: self) { return prepared }
        return try cachedStatement(sql: sql.description)
    }

    /// The statement for `sql`, as `statement(_:)` finds a literal's.
    func statement(_ sql: SQLText) throws -> Statement {
        if let prepared = try PreparedStatements.current?.statement(sql, in: self) { return prepared }
        return try cachedStatement(sql: sql.text)
    }
}
