import Foundation
internal import GRDB
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
    // Stepped and read through SQLite's C API (`forEachStep`): GRDB's cursor
    // and per-cell decoding were a sixth of an export (bench/results.md).
    var values: [CellValue] = []
    values.reserveCapacity(columns.count)
    try forEachStep(of: statement) { row in
        values.removeAll(keepingCapacity: true)
        for index in columns.indices {
            switch row.column(index) {
            case .null: values.append(.null)
            case .integer(let value): values.append(.integer(value))
            case .real(let value): values.append(.real(value))
            case .text(let bytes):
                // As GRDB reads text: up to the first NUL, invalid UTF-8 repaired.
                values.append(.text(String(decoding: bytes, as: UTF8.self)))
            case .blob: throw binaryData(table, columns[index], purpose)
            }
        }
        try body(columns, values)
    }
}

/// As `forEachCellRow`, with each row's cells in place (`BackupRowSource.forEachRawRow`):
/// text is handed over as the bytes SQLite holds, no string made per cell.
/// It is the text `forEachCellRow` gives, byte for byte: up to the first NUL,
/// and invalid UTF-8 repaired as `String(decoding:as:)` repairs it.
func forEachRawCellRow(
    of statement: Statement, arguments: StatementArguments = StatementArguments(), table: String, purpose: String,
    _ body: ([String], UnsafeBufferPointer<RawCell>) throws -> Void
) throws {
    let columns = statement.columnNames
    try statement.setArguments(arguments)
    let cells = UnsafeMutableBufferPointer<RawCell>.allocate(capacity: max(columns.count, 1))
    defer { cells.deallocate() }
    // Repaired texts of the current row, freed when the next row is read.
    var repaired: [UnsafeMutableBufferPointer<UInt8>] = []
    defer { for text in repaired { text.deallocate() } }
    try forEachStep(of: statement) { row in
        for text in repaired { text.deallocate() }
        repaired.removeAll(keepingCapacity: true)
        for index in columns.indices {
            switch row.column(index) {
            case .null: cells[index] = .null
            case .integer(let value): cells[index] = .integer(value)
            case .real(let value): cells[index] = .real(value)
            case .text(let bytes):
                if TextRule.isValidUTF8(bytes) {
                    cells[index] = .text(bytes)
                } else {
                    let text = Array(String(decoding: bytes, as: UTF8.self).utf8)
                    let copy = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: text.count)
                    _ = copy.initialize(from: text)
                    repaired.append(copy)
                    cells[index] = .text(UnsafeBufferPointer(copy))
                }
            case .blob: throw binaryData(table, columns[index], purpose)
            }
        }
        try body(columns, UnsafeBufferPointer(rebasing: cells[0..<columns.count]))
    }
}

/// Binary values have no place in a backup or a copy.
private func binaryData(_ table: String, _ column: String, _ purpose: String) -> GuestModeError {
    GuestModeError(
        .unexportableValue, "\(table).\(column) holds binary data, which \(purpose) do not carry; store it as text")
}
