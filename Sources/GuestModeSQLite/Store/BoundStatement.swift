import Foundation
internal import GRDB
internal import GRDBSQLite
import GuestModeKit

/// A cached statement run row after row through SQLite's C API, each
/// parameter bound on its own: GRDB's generic binding (`StatementArguments`,
/// an array of existentials and a string per time for every row) was a sixth
/// of ingesting an event log (bench/results.md, "`track --from` bound
/// through SQLite's C API"). Text is copied by SQLite (`SQLITE_TRANSIENT`)
/// into the statement's own buffers, which it reuses from row to row.
struct BoundStatement {
    let statement: Statement
    private var handle: SQLiteStatement { statement.sqliteStatement }

    init(_ statement: Statement) {
        self.statement = statement
        sqlite3_reset(statement.sqliteStatement)
        sqlite3_clear_bindings(statement.sqliteStatement)
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

    private func bind(bytes: UnsafeBufferPointer<UInt8>, at position: Int32) {
        bytes.withMemoryRebound(to: CChar.self) { characters in
            // A null pointer would bind NULL, not an empty text.
            if let start = characters.baseAddress, !characters.isEmpty {
                _ = sqlite3_bind_text(handle, position, start, Int32(characters.count), transientBinding)
            } else {
                _ = sqlite3_bind_text(handle, position, "", 0, transientBinding)
            }
        }
    }

    /// Runs the statement to its end and readies it for the next row;
    /// returns the rows it changed. A failure throws GRDB's `DatabaseError`,
    /// as `Statement.execute` would.
    func execute() throws -> Int {
        defer { sqlite3_reset(handle) }
        var code = sqlite3_step(handle)
        while code == SQLITE_ROW { code = sqlite3_step(handle) }
        guard code == SQLITE_DONE else { throw failure() }
        return Int(sqlite3_changes(sqlite3_db_handle(handle)))
    }

    /// Whether the statement gives a row, then readies it for the next
    /// one; for a lookup of one row.
    func exists() throws -> Bool {
        defer { sqlite3_reset(handle) }
        let code = sqlite3_step(handle)
        guard code == SQLITE_ROW || code == SQLITE_DONE else { throw failure() }
        return code == SQLITE_ROW
    }

    private func failure() -> DatabaseError {
        let connection = sqlite3_db_handle(handle)
        return DatabaseError(
            resultCode: ResultCode(rawValue: sqlite3_extended_errcode(connection)),
            message: String(cString: sqlite3_errmsg(connection)), sql: statement.sql)
    }
}

private let transientBinding = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
