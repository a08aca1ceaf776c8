import Foundation
internal import GRDB
internal import GRDBSQLite
import GuestModeKit

// Every call of SQLite's C API this backend makes beside GRDB's own API: the
// statements run row after row, where GRDB's generic binding and decoding
// cost too much (bench/results.md). A failed step becomes GRDB's
// `DatabaseError`, as GRDB reports one; a statement is left reset, ready for
// its next use, whatever happens.

/// A cached statement run row after row through SQLite's C API, each
/// parameter bound on its own: GRDB's generic binding (`StatementArguments`,
/// an array of existentials and a string per time for every row) was a sixth
/// of ingesting an event log (bench/results.md, "`track --from` bound
/// through SQLite's C API"). A row's texts are copied into one buffer of the
/// statement's and bound in place (`SQLITE_STATIC`): SQLite's own copy of
/// each (`SQLITE_TRANSIENT`) was a malloc and a free per text. The buffer
/// is rewritten only once the row has run (or was given up), and every
/// parameter is bound again for each row, so SQLite never reads a stale
/// text; a text that does not fit is copied by SQLite.
///
///     let insert = BoundStatement(try db.statement("INSERT INTO t (a, b) VALUES (?, ?)"))
///     insert.bind("x", at: 1)
///     insert.bind(.integer(2), at: 2)
///     _ = try insert.execute()
final class BoundStatement {
    let statement: Statement
    private let handle: SQLiteStatement
    /// The current row's texts, bound in place.
    private let texts = UnsafeMutableBufferPointer<CChar>.allocate(capacity: 16 << 10)
    private var used = 0

    init(_ statement: Statement) {
        self.statement = statement
        handle = statement.sqliteStatement
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    deinit {
        // SQLite must not keep a pointer into the buffer it is about to lose.
        sqlite3_clear_bindings(handle)
        texts.deallocate()
    }

    func bind(_ text: String, at position: Int32) {
        var text = text
        text.withUTF8 { bind(bytes: $0, at: position) }
    }

    func bind(_ text: String?, at position: Int32) {
        guard let text else {
            sqlite3_bind_null(handle, position)
            return
        }
        bind(text, at: position)
    }

    func bind(_ value: Int, at position: Int32) {
        sqlite3_bind_int64(handle, position, Int64(value))
    }

    /// The time as `Timestamp.format` writes it.
    func bind(time: Date, at position: Int32) {
        Timestamp.withText(of: time) { bind(bytes: $0, at: position) }
    }

    /// A backup row's cell, as it is (a text byte for byte, NULs included).
    func bind(_ value: CellValue, at position: Int32) {
        switch value {
        case .null: sqlite3_bind_null(handle, position)
        case .integer(let value): sqlite3_bind_int64(handle, position, value)
        case .real(let value): sqlite3_bind_double(handle, position, value)
        case .text(let value): bind(value, at: position)
        }
    }

    /// Binds `row`'s value of each of `columns` to parameters 1, 2, … in
    /// that order; false, the row given up, when a column has no value in
    /// the row. Every parameter is bound on success, so none keeps an
    /// earlier row's value.
    func bind(_ row: BackupRow, inOrder columns: [String]) -> Bool {
        for (index, column) in columns.enumerated() {
            guard let value = row[column] else {
                giveUpRow()
                return false
            }
            bind(value, at: Int32(index + 1))
        }
        return true
    }

    /// Forgets a row bound in part, which will not run: the next row's texts
    /// may take the buffer from its start again.
    func giveUpRow() {
        used = 0
    }

    private func bind(bytes: UnsafeBufferPointer<UInt8>, at position: Int32) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else {
            // A null pointer would bind NULL, not an empty text.
            _ = sqlite3_bind_text(handle, position, "", 0, transientBinding)
            return
        }
        guard bytes.count <= texts.count - used, let start = texts.baseAddress?.advanced(by: used) else {
            _ = source.withMemoryRebound(to: CChar.self, capacity: bytes.count) { characters in
                sqlite3_bind_text(handle, position, characters, Int32(bytes.count), transientBinding)
            }
            return
        }
        UnsafeMutableRawPointer(start).copyMemory(from: source, byteCount: bytes.count)
        used += bytes.count
        _ = sqlite3_bind_text(handle, position, start, Int32(bytes.count), staticBinding)
    }

    /// Runs the statement to its end and readies it for the next row;
    /// returns the rows it changed. A failure throws GRDB's `DatabaseError`,
    /// as `Statement.execute` would.
    func execute() throws -> Int {
        defer {
            sqlite3_reset(handle)
            used = 0
        }
        var code = sqlite3_step(handle)
        while code == SQLITE_ROW { code = sqlite3_step(handle) }
        guard code == SQLITE_DONE else { throw lastError(of: handle, sql: statement.sql) }
        return Int(sqlite3_changes(sqlite3_db_handle(handle)))
    }

    /// Whether the statement gives a row, then readies it for the next
    /// one; for a lookup of one row.
    func exists() throws -> Bool {
        defer {
            sqlite3_reset(handle)
            used = 0
        }
        let code = sqlite3_step(handle)
        guard code == SQLITE_ROW || code == SQLITE_DONE else { throw lastError(of: handle, sql: statement.sql) }
        return code == SQLITE_ROW
    }
}

/// A column of the row a statement has stepped to, as SQLite holds it.
enum SQLiteColumn {
    case null
    case integer(Int64)
    case real(Double)
    /// The bytes up to the first NUL, as SQLite holds them (not checked as
    /// UTF-8), valid until the statement steps again.
    case text(UnsafeBufferPointer<UInt8>)
    case blob
}

/// The row a statement has stepped to (`forEachStep`).
struct SteppedRow {
    fileprivate let handle: SQLiteStatement

    /// Column `index` (from 0) of the row.
    ///
    ///     if case .integer(let id) = row.column(0) { … }
    func column(_ index: Int) -> SQLiteColumn {
        let column = Int32(index)
        switch sqlite3_column_type(handle, column) {
        case SQLITE_NULL: return .null
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, column))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, column))
        case SQLITE_TEXT:
            guard let start = sqlite3_column_text(handle, column) else {
                return .text(UnsafeBufferPointer(start: nil, count: 0))
            }
            return .text(
                UnsafeBufferPointer(
                    start: start, count: strlen(UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self))))
        default: return .blob
        }
    }
}

extension SteppedRow {
    /// The row's first `count` columns as GRDB copies a row (`Row.fetchOne`,
    /// `fetchAll`): each column's value as SQLite holds it.
    func databaseValues(count: Int) -> [DatabaseValue] {
        (0..<Int32(count)).map { DatabaseValue(sqliteStatement: handle, index: $0) }
    }
}

/// A parameter of a per-request read (`readOne`, `readAll`), bound through SQLite's C API: GRDB's
/// `setArguments` made a C string of every text and checked the arguments anew, about 4.7 k instructions a
/// statement, and a served `prompt next` runs eleven (bench/results.md, "Serving, round 8").
protocol ReadParameter: DatabaseValueConvertible {
    /// Binds the value to parameter `position` (from 1) of `handle`.
    func bind(to handle: SQLiteStatement, at position: Int32)
}

extension String: ReadParameter {
    func bind(to handle: SQLiteStatement, at position: Int32) {
        var text = self
        text.withUTF8 { bytes in
            // SQLite keeps its own copy. A null pointer would bind NULL, not an empty text.
            guard let start = bytes.baseAddress, !bytes.isEmpty else {
                _ = sqlite3_bind_text(handle, position, "", 0, transientBinding)
                return
            }
            _ = start.withMemoryRebound(to: CChar.self, capacity: bytes.count) { characters in
                sqlite3_bind_text(handle, position, characters, Int32(bytes.count), transientBinding)
            }
        }
    }
}

extension Int: ReadParameter {
    func bind(to handle: SQLiteStatement, at position: Int32) {
        sqlite3_bind_int64(handle, position, Int64(self))
    }
}

extension Optional: ReadParameter where Wrapped: ReadParameter {
    func bind(to handle: SQLiteStatement, at position: Int32) {
        guard let value = self else {
            sqlite3_bind_null(handle, position)
            return
        }
        value.bind(to: handle, at: position)
    }
}

/// Readies `statement` for a read and binds `parameters` to its parameters 1, 2, … in that order; false,
/// nothing bound, when their number is not the statement's (GRDB's `setArguments` then says so).
func bind(_ parameters: [any ReadParameter], to statement: Statement) -> Bool {
    let handle = statement.sqliteStatement
    guard sqlite3_bind_parameter_count(handle) == Int32(parameters.count) else { return false }
    // A statement GRDB left stepped part way refuses bindings until it is reset.
    sqlite3_reset(handle)
    for (index, parameter) in parameters.enumerated() { parameter.bind(to: handle, at: Int32(index + 1)) }
    return true
}

/// Steps `statement` (its arguments already set) once: `body` gets its first
/// row, or nothing runs when it gives none. Leaves it reset, as `forEachStep`.
func firstStep<Value>(of statement: Statement, _ body: (SteppedRow) throws -> Value) throws -> Value? {
    let handle = statement.sqliteStatement
    defer { sqlite3_reset(handle) }
    let code = sqlite3_step(handle)
    if code == SQLITE_DONE { return nil }
    guard code == SQLITE_ROW else { throw lastError(of: handle, sql: statement.sql) }
    return try body(SteppedRow(handle: handle))
}

/// Steps `statement` (its arguments already set) through every row it
/// gives, calling `body` with each; leaves it reset, thrown out of or not.
/// A failed step throws GRDB's `DatabaseError`.
///
///     try forEachStep(of: statement) { row in print(row.column(0)) }
func forEachStep(of statement: Statement, _ body: (SteppedRow) throws -> Void) throws {
    let handle = statement.sqliteStatement
    defer { sqlite3_reset(handle) }
    let row = SteppedRow(handle: handle)
    while true {
        let code = sqlite3_step(handle)
        if code == SQLITE_DONE { return }
        guard code == SQLITE_ROW else { throw lastError(of: handle, sql: statement.sql) }
        try body(row)
    }
}

/// The failure of the statement's last step, as GRDB reports one.
private func lastError(of handle: SQLiteStatement, sql: String) -> DatabaseError {
    let connection = sqlite3_db_handle(handle)
    return DatabaseError(
        resultCode: ResultCode(rawValue: sqlite3_extended_errcode(connection)),
        message: String(cString: sqlite3_errmsg(connection)), sql: sql)
}

/// SQLite's `SQLITE_TRANSIENT`: the text is copied when bound.
private let transientBinding = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
private let staticBinding = unsafeBitCast(0, to: sqlite3_destructor_type.self)
