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
    while try step(handle, of: statement) {
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

/// As `forEachCellRow`, with each row's cells in place (`BackupRowSource.forEachRawRow`):
/// text is handed over as the bytes SQLite holds, no string made per cell.
/// It is the text `forEachCellRow` gives, byte for byte: up to the first NUL,
/// and invalid UTF-8 repaired as `String(cString:)` repairs it.
func forEachRawCellRow(
    of statement: Statement, arguments: StatementArguments = StatementArguments(), table: String, purpose: String,
    _ body: ([String], UnsafeBufferPointer<RawCell>) throws -> Void
) throws {
    let columns = statement.columnNames
    try statement.setArguments(arguments)
    let handle = statement.sqliteStatement
    defer { sqlite3_reset(handle) }
    let cells = UnsafeMutableBufferPointer<RawCell>.allocate(capacity: max(columns.count, 1))
    defer { cells.deallocate() }
    // Repaired texts of the current row, freed when the next row is read.
    var repaired: [UnsafeMutableBufferPointer<UInt8>] = []
    defer { for text in repaired { text.deallocate() } }
    while try step(handle, of: statement) {
        for text in repaired { text.deallocate() }
        repaired.removeAll(keepingCapacity: true)
        for index in columns.indices {
            let column = Int32(index)
            switch sqlite3_column_type(handle, column) {
            case SQLITE_NULL: cells[index] = .null
            case SQLITE_INTEGER: cells[index] = .integer(sqlite3_column_int64(handle, column))
            case SQLITE_FLOAT: cells[index] = .real(sqlite3_column_double(handle, column))
            case SQLITE_TEXT:
                guard let start = sqlite3_column_text(handle, column) else {
                    cells[index] = .text(UnsafeBufferPointer(start: nil, count: 0))
                    continue
                }
                let bytes = UnsafeBufferPointer(
                    start: start, count: strlen(UnsafeRawPointer(start).assumingMemoryBound(to: CChar.self)))
                if isASCII(bytes) || TextRule.validatedUTF8(bytes) != nil {
                    cells[index] = .text(bytes)
                } else {
                    let text = Array(String(decoding: bytes, as: UTF8.self).utf8)
                    let copy = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: text.count)
                    _ = copy.initialize(from: text)
                    repaired.append(copy)
                    cells[index] = .text(UnsafeBufferPointer(copy))
                }
            default:
                throw GuestModeError(
                    .unexportableValue,
                    "\(table).\(columns[index]) holds binary data, which \(purpose) do not carry; store it as text")
            }
        }
        try body(columns, UnsafeBufferPointer(rebasing: cells[0..<columns.count]))
    }
}

/// Whether every byte is below 0x80, eight at a time: such text is valid UTF-8 as it is.
private func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
    guard let base = bytes.baseAddress else { return true }
    let raw = UnsafeRawPointer(base)
    var index = 0
    var high: UInt64 = 0
    while index + 8 <= bytes.count {
        high |= raw.loadUnaligned(fromByteOffset: index, as: UInt64.self)
        index += 8
    }
    while index < bytes.count {
        high |= UInt64(bytes[index])
        index += 1
    }
    return high & 0x8080_8080_8080_8080 == 0
}

/// Steps the statement once: true with a row to read, false when done; a failure as GRDB reports one.
private func step(_ handle: SQLiteStatement, of statement: Statement) throws -> Bool {
    let code = sqlite3_step(handle)
    if code == SQLITE_DONE { return false }
    guard code == SQLITE_ROW else { throw lastError(of: handle, sql: statement.sql) }
    return true
}

/// The failure of the statement's last step, as GRDB reports one, for every
/// statement this backend runs through SQLite's C API.
func lastError(of handle: SQLiteStatement, sql: String) -> DatabaseError {
    let connection = sqlite3_db_handle(handle)
    return DatabaseError(
        resultCode: ResultCode(rawValue: sqlite3_extended_errcode(connection)),
        message: String(cString: sqlite3_errmsg(connection)), sql: sql)
}
