import ArgumentParser
import Foundation
import GuestModeKit

/// How a listing command prints its rows: `--format table|tsv|csv|json|ndjson`.
package enum ListingFormat: String, ArgumentChoice {
    case table, tsv, csv, json, ndjson
}

/// The `--format` option of every listing command (`user list`, `record list`, `counters`, `meter status`,
/// `plan status`, `prompt history`, `backup queue`, `migrate status`, `report …`, …).
///
/// - `table`: aligned columns for people, a header unless --quiet (the default; `json` with --json);
/// - `tsv`: tab-separated, a header line unless --quiet; tabs, line breaks and backslashes in a cell
///   written as `\t`, `\n`, `\\`;
/// - `csv`: RFC 4180, a header line unless --quiet; numbers as plain numbers (rates as fractions);
/// - `json`: the command's one JSON document (as with --json);
/// - `ndjson`: one compact JSON object per row, nothing else.
package struct ListingOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "table, tsv, csv, json or ndjson (default: table; json with --json).", valueName: "format"))
    package var format: ListingFormat?

    package init() {}

    /// `--format` as a quickly parsed line gives it (`QuickCommand`).
    package init(_ line: QuickLine) throws {
        format = try line.value("--format", as: ListingFormat.self)
    }

    package func resolved(_ global: GlobalOptions) -> ListingFormat { format ?? (global.json ? .json : .table) }

    /// Prints `items` as a listing; `document` is what `--format json` prints (by default the items
    /// themselves). `rows` are the table's cells for people; `dataRows` (default: `rows`) the cells of
    /// tsv and csv, numbers without units or percent signs.
    package func render<Document: Encodable, Item: Encodable>(
        document: Document, items: [Item], header: [String], rows: [[String]], dataRows: [[String]]? = nil,
        global: GlobalOptions
    ) throws {
        let output = global.output
        switch resolved(global) {
        case .json: try output.json(document)
        case .ndjson: for item in items { try output.jsonLine(item) }
        case .table: output.table(rows, header: header)
        case .csv:
            if !global.quiet { output.line(Listing.columnNames(header).map(csvField).joined(separator: ",")) }
            for row in dataRows ?? rows { output.line(row.map(csvField).joined(separator: ",")) }
        case .tsv:
            if !global.quiet { output.line(Listing.columnNames(header).map(tsvField).joined(separator: "\t")) }
            for row in dataRows ?? rows { output.line(row.map(tsvField).joined(separator: "\t")) }
        }
    }

    package func render<Item: Encodable>(
        _ items: [Item], header: [String], rows: [[String]], dataRows: [[String]]? = nil, global: GlobalOptions
    ) throws {
        try render(document: items, items: items, header: header, rows: rows, dataRows: dataRows, global: global)
    }
}

package enum Listing {
    /// `FIRST SEEN` → `first_seen`: the header of tsv and csv.
    package static func columnNames(_ header: [String]) -> [String] {
        header.map { $0.lowercased().replacingOccurrences(of: " ", with: "_") }
    }

    /// A fraction or other measure as a plain number for tsv and csv: six decimals at most, no exponent.
    package static func number(_ value: Double?) -> String {
        guard let value else { return "" }
        if case .number(let text) = JSONValue.number(value) { return text }
        return ""
    }
}

package func tsvField(_ text: String) -> String {
    guard text.contains(where: { $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\\" }) else { return text }
    return text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\t", with: "\\t")
        .replacingOccurrences(of: "\n", with: "\\n").replacingOccurrences(of: "\r", with: "\\r")
}
