import Foundation
internal import GRDB
import GuestModeKit

/// What the backend's readers ask of a stored row: GRDB's strict, throwing
/// `decode` of a column by name. GRDB's `Row` answers it, and so does
/// `ReadRow`, which the per-request reads (`readOne`, `readAll`) hand over.
protocol StoredRow {
    func decode<Value: DatabaseValueConvertible>(_ type: Value.Type, forColumn column: String) throws -> Value

    /// A column holding one case of a string enumeration.
    func decode<Value>(_ column: String, as type: Value.Type) throws -> Value
    where Value: RawRepresentable & Sendable, Value.RawValue == String

    /// A column holding a time in the store's form (`Timestamp`).
    func time(_ column: String) throws -> Date

    /// A column holding a time in the store's form, or NULL.
    func optionalTime(_ column: String) throws -> Date?
}

extension Row: StoredRow {}

/// The one way the SQLite backend reads typed columns: GRDB's throwing
/// `decode`, so a value of the wrong type, an unknown case or a NULL where
/// guestmode never writes one is an error, never a default. Stored numbers
/// are read from copied rows (`fetchAll`, `fetchOne`, `ReadRow`), not a
/// cursor's live row, whose integers and doubles convert text silently.
extension StoredRow {
    /// The column's value as the type the caller asks for.
    ///
    ///     let name: String = try row.decode(forColumn: "name")
    func decode<Value: DatabaseValueConvertible>(forColumn column: String) throws -> Value {
        try decode(Value.self, forColumn: column)
    }

    func decode<Value>(_ column: String, as type: Value.Type) throws -> Value
    where Value: RawRepresentable & Sendable, Value.RawValue == String {
        try decode(StoredCase<Value>.self, forColumn: column).value
    }
}

extension Row {
    func time(_ column: String) throws -> Date { try decode(StoredTime.self, forColumn: column).date }

    func optionalTime(_ column: String) throws -> Date? { try decode(StoredTime?.self, forColumn: column)?.date }
}

/// A row as GRDB copies one (each column's `DatabaseValue`), read from a
/// cached statement through SQLite's C API. GRDB's `Row` first builds a
/// table of its columns' lowercased names and then copies the values: 9 k
/// instructions a row, and the reads a served request makes were a sixth of
/// it (bench/results.md, "Serving, round 5"). A column is found by its exact
/// name; a value that does not decode, or a name not found, hands the read
/// back to GRDB's own rows (`Undecodable`), which decode it the same way and
/// word what is wrong as they always did.
struct ReadRow: StoredRow {
    /// A value `ReadRow` does not decode: GRDB's row reads it again.
    struct Undecodable: Error {}

    let names: [String]
    let values: [DatabaseValue]

    func decode<Value: DatabaseValueConvertible>(_ type: Value.Type, forColumn column: String) throws -> Value {
        guard let index = names.firstIndex(of: column), let value = Value.fromDatabaseValue(values[index]) else {
            throw Undecodable()
        }
        return value
    }

    /// As `StoredCase` decodes it, without making that generic type for each enumeration: its first use
    /// asked at run time whether the enumeration is `RawRepresentable`, a scan of the binary's
    /// conformance records on every command that reads a user (bench/results.md, "Start-up").
    func decode<Value>(_ column: String, as type: Value.Type) throws -> Value
    where Value: RawRepresentable & Sendable, Value.RawValue == String {
        guard let index = names.firstIndex(of: column), case .string(let text) = values[index].storage,
            let value = Value(rawValue: text)
        else {
            throw Undecodable()
        }
        return value
    }

    /// As `StoredTime` decodes it, without the generic decode: a served read of a subscriber's plan grants,
    /// a row for every renewal, spent about half of each row's 14 k instructions in the generic path
    /// (bench/results.md, "Serving, round 13").
    func time(_ column: String) throws -> Date {
        guard let index = names.firstIndex(of: column), case .string(let text) = values[index].storage,
            let date = Timestamp.parse(text)
        else {
            throw Undecodable()
        }
        return date
    }

    func optionalTime(_ column: String) throws -> Date? {
        guard let index = names.firstIndex(of: column) else { throw Undecodable() }
        switch values[index].storage {
        case .null: return nil
        case .string(let text):
            guard let date = Timestamp.parse(text) else { throw Undecodable() }
            return date
        default: throw Undecodable()
        }
    }
}

/// The first row `statement` gives for `arguments`, read by `read`; nil when
/// it gives none. As `Row.fetchOne(statement, arguments:).map(read)`.
///
///     let user = try readOne(db.statement("SELECT * FROM users WHERE id = ?"), arguments: [id]) { row in
///         try row.decode(String.self, forColumn: "id")
///     }
func readOne<Value>(
    _ statement: Statement, arguments: [any ReadParameter], _ read: (any StoredRow) throws -> Value
) throws -> Value? {
    do {
        guard bind(arguments, to: statement) else { throw ReadRow.Undecodable() }
        let names = statement.columnNames
        return try firstStep(of: statement) { row in
            try read(ReadRow(names: names, values: row.databaseValues(count: names.count)))
        }
    } catch is ReadRow.Undecodable {
        return try Row.fetchOne(statement, arguments: StatementArguments(arguments.map(\.databaseValue))).map(read)
    }
}

/// Every row `statement` gives for `arguments`, read by `read`. As
/// `Row.fetchAll(statement, arguments:).map(read)`.
func readAll<Value>(
    _ statement: Statement, arguments: [any ReadParameter], _ read: (any StoredRow) throws -> Value
) throws -> [Value] {
    do {
        guard bind(arguments, to: statement) else { throw ReadRow.Undecodable() }
        let names = statement.columnNames
        var values: [Value] = []
        try forEachStep(of: statement) { row in
            values.append(try read(ReadRow(names: names, values: row.databaseValues(count: names.count))))
        }
        return values
    } catch is ReadRow.Undecodable {
        return try Row.fetchAll(statement, arguments: StatementArguments(arguments.map(\.databaseValue))).map(read)
    }
}
