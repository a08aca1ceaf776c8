import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteStore: StoreTableStore {
    package func readStoreTables<T>(_ body: (any StoreTableSnapshot) throws -> T) throws -> T {
        try read { db in try body(SQLiteStoreTableSnapshot(db: db)) }
    }

    package func replaceOwnTableRows(_ body: (any StoreTableWriter) throws -> Void) throws {
        try writeDurably { db in
            // Steps go before their journals: the foreign key cascades the other way.
            for table in StoreTable.own.reversed() {
                try db.execute(sql: "DELETE FROM \(table.name.quotedDatabaseIdentifier)")
            }
            try body(SQLiteStoreTableWriter(db: db))
        }
    }
}

/// Every table of one read transaction, in primary key order (SQLite's
/// default BINARY collation compares text byte by byte).
private struct SQLiteStoreTableSnapshot: StoreTableSnapshot {
    let db: Database

    func forEachRow(in table: StoreTable, _ body: ([String], [CellValue]) throws -> Void) throws {
        let ordering = table.primaryKey.map(\.quotedDatabaseIdentifier).joined(separator: ", ")
        let statement = try db.makeStatement(
            sql: "SELECT * FROM \(table.name.quotedDatabaseIdentifier) ORDER BY \(ordering)")
        try forEachCellRow(of: statement, table: table.name, purpose: "copies", body)
    }
}

/// Inserts into the store's own tables inside `replaceOwnTableRows`.
private struct SQLiteStoreTableWriter: StoreTableWriter {
    let db: Database

    func insert(_ columns: [String], _ values: [CellValue], into table: StoreTable) throws {
        guard StoreTable.own.contains(table), columns.count == values.count, !columns.isEmpty else {
            throw GuestModeError(
                .internalFailure, "a copy wrote a row the store's own tables do not take")
        }
        let known = Set(try db.columns(in: table.name).map(\.name))
        if let unknown = columns.first(where: { !known.contains($0) }) {
            throw GuestModeError(
                .copyMismatch, "the destination store has no column \(table.name).\(unknown)")
        }
        let arguments = StatementArguments(
            values.map { value -> DatabaseValue in
                switch value {
                case .null: .null
                case .integer(let number): number.databaseValue
                case .real(let number): number.databaseValue
                case .text(let text): text.databaseValue
                }
            })
        try db.execute(
            sql: """
                INSERT INTO \(table.name.quotedDatabaseIdentifier) (\(columns.map(\.quotedDatabaseIdentifier).joined(separator: ", ")))
                VALUES (\(columns.map { _ in "?" }.joined(separator: ", ")))
                """,
            arguments: arguments)
    }
}
