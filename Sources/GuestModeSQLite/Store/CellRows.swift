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
    let rows = try Row.fetchCursor(statement, arguments: arguments)
    var values: [CellValue] = []
    values.reserveCapacity(columns.count)
    while let row = try rows.next() {
        values.removeAll(keepingCapacity: true)
        // `databaseValues` reads each cell without GRDB's generic decoding, which looked up
        // `Optional`'s metadata for every cell (6 % of an export).
        for (index, value) in row.databaseValues.enumerated() {
            switch value.storage {
            case .null: values.append(.null)
            case .int64(let value): values.append(.integer(value))
            case .double(let value): values.append(.real(value))
            case .string(let value): values.append(.text(value))
            case .blob:
                throw GuestModeError(
                    .unexportableValue,
                    "\(table).\(columns[index]) holds binary data, which \(purpose) do not carry; store it as text")
            }
        }
        try body(columns, values)
    }
}
