import Foundation
import GuestModeKit

/// The columns of one of guestmode's tables as the catalog describes them:
/// their order, and how each one's values travel as text. Backups and copies
/// read rows through it, so both turn stored values into cells alike.
struct PostgresColumns {
    enum Kind { case integer, real, text }

    let names: [String]
    private let kinds: [String: Kind]

    init(of table: String, _ connection: PostgresConnection) throws {
        var names: [String] = []
        var kinds: [String: Kind] = [:]
        for row in try connection.execute(
            """
            SELECT column_name, data_type FROM information_schema.columns
            WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position
            """,
            [PostgresValue(table)])
        {
            let name = try row.string("column_name")
            names.append(name)
            switch try row.string("data_type") {
            case "bigint", "integer", "smallint": kinds[name] = .integer
            case "double precision", "real", "numeric": kinds[name] = .real
            default: kinds[name] = .text
            }
        }
        guard !names.isEmpty else {
            throw GuestModeError(
                .corruptStore, "the PostgreSQL store has no table \(table) in its schema")
        }
        self.names = names
        self.kinds = kinds
    }

    func kind(_ column: String) -> Kind { kinds[column] ?? .text }

    /// A stored value, read as text, as the backend-neutral cell; one that
    /// does not parse as its column's type is reported as a corrupt store.
    func cell(_ text: String?, column: String, table: String, location: String) throws -> CellValue {
        guard let text else { return .null }
        switch kind(column) {
        case .text: return .text(text)
        case .integer: if let value = Int64(text) { return .integer(value) }
        case .real: if let value = Double(text) { return .real(value) }
        }
        throw GuestModeError(
            .corruptStore, "the PostgreSQL store \(location) holds '\(text)' in \(table).\(column)")
    }
}
