internal import GRDB

/// The statements one of `ReadConnections`' connections keeps prepared, found by the address of their SQL's
/// literal. GRDB's `cachedStatement(sql:)` finds a statement by hashing its whole SQL, about 1 k instructions
/// a statement and 4–14 k of every served read (bench/results.md, "Serving, round 21"); a literal's address
/// is one word to hash. One literal is one text, so it names one statement; two literals of the same text
/// may share an address, and then share the statement, as they would share GRDB's.
///
/// Used only by the thread that holds the connection, while it holds it (`ReadConnections.read`), which is
/// what makes it `Sendable`. Its statements are finalized before the connection closes.
final class PreparedStatements: @unchecked Sendable {
    /// The statements of the connection the running read holds; nil outside `ReadConnections.read`.
    @TaskLocal static var current: PreparedStatements?

    private let connection: ObjectIdentifier
    private var statements: [UnsafeRawPointer: Statement] = [:]

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
    }
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
