import Foundation
import GuestModeKit

extension PostgresStore: StoreTableStore {
    package func readStoreTables<T>(_ body: (any StoreTableSnapshot) throws -> T) throws -> T {
        try read { connection in try body(PostgresStoreTableSnapshot(connection: connection)) }
    }

    package func replaceOwnTableRows(_ body: (any StoreTableWriter) throws -> Void) throws {
        try writeMovingData { connection in
            // Steps go before their journals: the foreign key cascades the other way.
            for table in StoreTable.own.reversed() {
                try connection.execute("DELETE FROM \(PostgresStore.quote(table.name))")
            }
            try body(PostgresStoreTableWriter(connection: connection))
            // Identity columns do not notice explicit ids: later journals must not reuse one.
            // (A session family's id is text the server makes, with no sequence behind it.)
            for table in StoreTable.own where table.primaryKey == ["id"] {
                guard try PostgresColumns(of: table.name, connection).kind("id") == .integer else { continue }
                try connection.execute(
                    """
                    SELECT setval(s.seq, m.top) FROM
                        (SELECT pg_get_serial_sequence($1, 'id')::regclass AS seq) s,
                        (SELECT max(id) AS top FROM \(PostgresStore.quote(table.name))) m
                    WHERE m.top > coalesce(pg_sequence_last_value(s.seq), 0)
                    """,
                    [PostgresValue(PostgresStore.quote(table.name))])
            }
        }
    }
}

/// Every table of one read transaction, streamed by `COPY … TO STDOUT` a row
/// at a time, in primary key order, text compared byte by byte (COLLATE "C")
/// as SQLite does. Fetched by the thousand through a cursor, a table of
/// records of 64 KB was held 64 MB at a time (bench/scale.sh).
private final class PostgresStoreTableSnapshot: StoreTableSnapshot {
    let connection: PostgresConnection

    init(connection: PostgresConnection) { self.connection = connection }

    func forEachRow(in table: StoreTable, _ body: ([String], [CellValue]) throws -> Void) throws {
        let columns = try PostgresColumns(of: table.name, connection)
        let ordering = table.primaryKey.map { key in
            columns.kind(key) == .text ? "\(PostgresStore.quote(key)) COLLATE \"C\"" : PostgresStore.quote(key)
        }.joined(separator: ", ")
        let names = columns.names
        let rows = CopyTextRows(
            kinds: names.map(columns.kind), columns: names, table: table.name, location: connection.location)
        var values: [CellValue] = []
        values.reserveCapacity(names.count)
        try connection.copyOut(
            """
            COPY (SELECT \(names.map(PostgresStore.quote).joined(separator: ", ")) FROM \(PostgresStore.quote(table.name))
            ORDER BY \(ordering)) TO STDOUT
            """
        ) { line in
            try rows.decode(line) { cells in
                values.removeAll(keepingCapacity: true)
                for index in cells.indices { values.append(CellValue(cells[index])) }
                try body(names, values)
            }
        }
    }
}

/// Inserts into the store's own tables inside `replaceOwnTableRows`.
private final class PostgresStoreTableWriter: StoreTableWriter {
    let connection: PostgresConnection
    private var shapes: [String: PostgresColumns] = [:]

    init(connection: PostgresConnection) { self.connection = connection }

    func insert(_ columns: [String], _ values: [CellValue], into table: StoreTable) throws {
        guard StoreTable.own.contains(table), columns.count == values.count, !columns.isEmpty else {
            throw GuestModeError(
                .internalFailure, "a copy wrote a row the store's own tables do not take")
        }
        let shape = try shapes[table.name] ?? PostgresColumns(of: table.name, connection)
        shapes[table.name] = shape
        if let unknown = columns.first(where: { !shape.names.contains($0) }) {
            throw GuestModeError(
                .copyMismatch, "the destination store has no column \(table.name).\(unknown)")
        }
        let parameters: [PostgresValue?] = zip(columns, values).map { column, value in
            switch value {
            case .null: return nil
            case .integer(let number): return PostgresValue(number)
            case .real(let number):
                // A whole number in an integer column goes in as that integer, as SQLite's affinity stores it.
                if shape.kind(column) == .integer, let whole = Int64(exactly: number) { return PostgresValue(whole) }
                return PostgresValue("\(number)")
            case .text(let text): return PostgresValue(text)
            }
        }
        let placeholders = parameters.indices.map { "$\($0 + 1)" }.joined(separator: ", ")
        try connection.execute(
            """
            INSERT INTO \(PostgresStore.quote(table.name)) (\(columns.map(PostgresStore.quote).joined(separator: ", ")))
            VALUES (\(placeholders))
            """,
            parameters)
    }
}
