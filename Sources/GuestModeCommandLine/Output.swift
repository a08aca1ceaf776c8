import Foundation
import GuestModeKit

/// Where text goes: data on stdout, diagnostics on stderr, colour only on a
/// terminal and never with NO_COLOR or --json.
package struct Output {
    package var isJSON: Bool
    package var isQuiet: Bool
    package var isVerbose: Bool

    package init(isJSON: Bool, isQuiet: Bool, isVerbose: Bool) {
        self.isJSON = isJSON
        self.isQuiet = isQuiet
        self.isVerbose = isVerbose
    }

    package var usesColour: Bool {
        !isJSON && isatty(STDOUT_FILENO) == 1 && EnvironmentVariable.value("NO_COLOR") == nil
    }

    package var showsProgress: Bool { !isJSON && !isQuiet && isatty(STDERR_FILENO) == 1 }

    package func line(_ text: String = "") {
        ConsoleStream.output.write(text + "\n")
    }

    /// A diagnostic for people; silenced by --quiet.
    package func note(_ text: String) {
        guard !isQuiet else { return }
        ConsoleStream.error.write(text + "\n")
    }

    /// A step explained only with --verbose.
    package func detail(_ text: String) {
        guard isVerbose else { return }
        ConsoleStream.error.write("guestmode: \(text)\n")
    }

    /// What a command prints when it is done, decided here once for every command: its JSON document
    /// with --json; else `text`, a line for people, which --quiet leaves out.
    package func result<Document: Encodable>(_ document: Document, text: @autoclosure () -> String) throws {
        try result(document) { line(text()) }
    }

    /// `result(_:text:)` for text that is more than one line (a table, a summary with notes).
    package func result<Document: Encodable>(_ document: Document, print: () throws -> Void) throws {
        if isJSON { return try json(document) }
        if !isQuiet { try print() }
    }

    /// A line for people on stdout that the JSON document already says; --quiet leaves it out.
    package func say(_ text: String) {
        if !isJSON && !isQuiet { line(text) }
    }

    /// A note for people (`note`) that the JSON document, or its progress lines, already says.
    package func aside(_ text: String) {
        if !isJSON { note(text) }
    }

    /// A diagnostic that the JSON document already carries: on stderr without --json, even with --quiet.
    package func problem(_ text: String) {
        if !isJSON { ConsoleStream.error.write(text + "\n") }
    }

    /// A result that is data (a record, a secret, a listing): printed with --quiet too.
    package func data<Document: Encodable>(_ document: Document, print: () throws -> Void) throws {
        if isJSON { return try json(document) }
        try print()
    }

    /// `data(_:print:)` for a document built as a JSON tree.
    package func data(value document: @autoclosure () -> JSONValue, print: () throws -> Void) rethrows {
        if isJSON { return json(value: document()) }
        try print()
    }

    package func json<T: Encodable>(_ value: T) throws {
        line(try Output.encode(value))
    }

    /// One JSON document, pretty-printed, in the conventions of `JSONDocument`.
    package static func encode<T: Encodable>(_ value: T) throws -> String {
        try JSONDocument.encode(value)
    }

    /// A document built as a JSON tree (`profile show`), pretty-printed.
    package func json(value: JSONValue) {
        line(value.text(pretty: true))
    }

    /// One JSON document on one line (NDJSON, progress lines).
    package func jsonLine<T: Encodable>(_ value: T) throws {
        line(try JSONDocument.encode(value, pretty: false))
    }

    package func bold(_ text: String) -> String { usesColour ? "\u{1B}[1m\(text)\u{1B}[0m" : text }
    package func dim(_ text: String) -> String { usesColour ? "\u{1B}[2m\(text)\u{1B}[0m" : text }

    /// Columns padded to the widest cell, for human tables; --quiet leaves the header out.
    package func table(_ rows: [[String]], header: [String]? = nil) {
        let header = isQuiet ? nil : header
        let all = (header.map { [$0] } ?? []) + rows
        guard let columns = all.map(\.count).max(), columns > 0 else { return }
        var widths = Array(repeating: 0, count: columns)
        for row in all { for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) } }
        func render(_ row: [String]) -> String {
            row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : padded(cell, to: widths[index])
            }.joined(separator: "  ")
        }
        if let header { line(bold(render(header))) }
        for row in rows { line(render(row)) }
    }
}
