import Foundation
internal import GRDB
internal import GRDBSQLite
import GuestModeKit

/// A cached statement run row after row through SQLite's C API, each
/// parameter bound on its own: GRDB's generic binding (`StatementArguments`,
/// an array of existentials and a string per time for every row) was a sixth
/// of ingesting an event log (bench/results.md, "`track --from` bound
/// through SQLite's C API"). A row's texts are copied into one buffer of the
/// statement's and bound in place (`SQLITE_STATIC`): SQLite's own copy of
/// each (`SQLITE_TRANSIENT`) was a malloc and a free per text. The buffer
/// is rewritten only once the row has run, and every parameter is bound
/// again for each row, so SQLite never reads a stale text; a text that does
/// not fit is copied by SQLite.
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

/// SQLite's `SQLITE_TRANSIENT`: the text is copied when bound.
let transientBinding = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
private let staticBinding = unsafeBitCast(0, to: sqlite3_destructor_type.self)
