import Foundation
internal import GRDB
internal import GRDBSQLite
import GuestModeKit

/// Streams a statement's rows as backend-neutral cells, reusing one buffer.
/// Binary values have no place in a backup or a copy; `purpose` names which
/// refuses them.
func forEachCellRow(
    of statement: Statement, arguments: StatementArguments = StatementArguments(), table: String, purpose: String,
    _ body: ([String], [CellValue]) throws -> Void
) throws {
    let columns = statement.columnNames
    try statement.setArguments(arguments)
    // Stepped and read through SQLite's C API: GRDB's cursor and per-cell
    // decoding were a sixth of an export (bench/results.md).
    let handle = statement.sqliteStatement
    defer { sqlite3_reset(handle) }
    var values: [CellValue] = []
    values.reserveCapacity(columns.count)
    while true {
        let code = sqlite3_step(handle)
        if code == SQLITE_DONE { return }
        guard code == SQLITE_ROW else {
            let connection = sqlite3_db_handle(handle)
            throw DatabaseError(
                resultCode: ResultCode(rawValue: sqlite3_extended_errcode(connection)),
                message: String(cString: sqlite3_errmsg(connection)), sql: statement.sql)
        }
        values.removeAll(keepingCapacity: true)
        for index in columns.indices {
            let column = Int32(index)
            switch sqlite3_column_type(handle, column) {
            case SQLITE_NULL: values.append(.null)
            case SQLITE_INTEGER: values.append(.integer(sqlite3_column_int64(handle, column)))
            case SQLITE_FLOAT: values.append(.real(sqlite3_column_double(handle, column)))
            case SQLITE_TEXT:
                // As GRDB reads text: up to the first NUL, invalid UTF-8 repaired.
                values.append(.text(sqlite3_column_text(handle, column).map { String(cString: $0) } ?? ""))
            default:
                throw GuestModeError(
                    .unexportableValue,
                    "\(table).\(columns[index]) holds binary data, which \(purpose) do not carry; store it as text")
            }
        }
        try body(columns, values)
    }
}
