import Foundation

/// Checks every row an archive brings against the profile and the rules the
/// command line enforces when it writes the same data: an
/// archive is a trust boundary, so a row is accepted only if guestmode itself
/// could have written it.
///
/// Per row: every column has the stored type (integers where integers are
/// stored, finite numbers in range, text where text is stored), timestamps
/// are in the store's own form (`Timestamp.format`, UTC with milliseconds)
/// and not in the future unless they name a future end, names refer to what
/// the profile declares (collections, actions, meters, plans, providers,
/// prompt contexts, experiments and variants, in records and in the
/// conflict archive alike), record data is a JSON object by the strict
/// parser `record put` uses (no duplicate member names, at most
/// `StrictJSON.maximumDepth` levels) and is stored in the canonical text
/// `record put` stores (compact, keys sorted), never verbatim; every text
/// cell obeys `TextRule` (no U+0000), and every count, total, amount,
/// attempt count and id lies within `Bounds`: not negative and never past
/// what the command line could have written. Surrogate ids (`events.id`,
/// `meter_usage.id`, …) must be positive integers, appear once per table,
/// and are then dropped: the store numbers imported rows itself, so an
/// archive cannot push its sequences to the end of their range.
///
/// Across rows (`finish`): a `linked` user has an identity in the archive
/// and an `anonymous` one has none; each counter equals the sum of the
/// counts of the user's events of that action, and every action with events
/// has its counter. Counters are refused rather than recomputed when they
/// disagree: the store keeps every event for as long as the user exists, so
/// a disagreement means the archive was altered.
///
/// No store, the clock passed in. What is compared across rows waits in a
/// temporary file (`CrossRowFacts`), so memory does not grow with the
/// archive.
package struct BackupRowValidator {
    package let profile: Profile
    /// The import's clock: past-only timestamps may be at most a day after it.
    package let now: Date
    /// Names the archive in messages.
    package let archive: String

    /// Tolerated clock skew between the machine that exported and this one.
    static let skew: TimeInterval = 86_400

    /// Actions guestmode writes itself, whatever the profile declares.
    package static let systemActions: Set<String> = [
        "account_upgrade_started", "account_upgrade_succeeded", "account_upgrade_failed", "account_unlinked",
        FiredWarning.eventAction, PromptTrigger.resetEventAction,
    ]

    private let facts = CrossRowFacts()
    /// The last columns whose names `TextRule` accepted.
    private var acceptedColumns: [String] = []
    /// The last row's columns before and after its surrogate id was dropped.
    private var shortened: (from: [String], to: [String])?
    /// Made once, not per row: the profile's name lists, and the row being checked.
    private let cells: Cells

    package init(profile: Profile, now: Date, archive: String) {
        self.profile = profile
        self.now = now
        self.archive = archive
        self.cells = Cells(profile: profile, now: now, archive: archive)
    }

    /// Checks one row of `table` read at `line` of `entry`, and returns the
    /// row to write: the same columns, less a surrogate id, with record data
    /// in its canonical text.
    package mutating func check(
        _ row: consuming BackupRow, table: BackupTable, entry: String, line: Int
    ) throws -> BackupRow {
        // The rows of a table share their columns' array: names found good for one row are good for the next.
        let columnsAccepted = acceptedColumns == row.columns || !row.columns.contains { !TextRule.isAcceptable($0) }
        if columnsAccepted, acceptedColumns != row.columns { acceptedColumns = row.columns }
        if !columnsAccepted || !Self.textsAreAcceptable(row.values) {
            let location = CrossRowFacts.Place(entry: entry, line: line).description
            // Sorted only to name the first offending column the same way every time.
            for (column, value) in zip(row.columns, row.values).sorted(by: { $0.0 < $1.0 }) {
                try TextRule.check(column, what: "a column name at \(location) of the archive '\(archive)'")
                if case .text(let text) = value {
                    try TextRule.check(text, what: "\(table.name).\(column) at \(location) of the archive '\(archive)'")
                }
            }
        }
        // The cells are lent to the checks, not copied: a copy of a text or of the row's arrays is a retain and
        // a release, each an atomic instruction, and an import checks millions of rows (bench/results.md).
        let cells = cells
        var idColumn: Int?
        var canonicalData: String?
        try row.columns.withUnsafeBufferPointer { columns in
            try row.values.withUnsafeBufferPointer { values in
                cells.begin(columns: columns, values: values, table: table.name, entry: entry, line: line)
                defer { cells.end() }
                if table.hasSurrogateID {
                    let id = try cells.integer("id", in: 1...Bounds.maximumRowID)
                    try facts.noteRowID(id, of: table.name, at: cells.place)
                    idColumn = BackupRow.index(of: "id", in: columns, from: 0)
                }
                canonicalData = try checkColumns(cells, table: table.name)
            }
        }
        // The row came to this check to be changed in place: a copy of its values was a retain of every text.
        var result = consume row
        if let canonicalData { result["data"] = .text(canonicalData) }
        if let idColumn { dropColumn(at: idColumn, of: &result) }
        return result
    }

    /// Whether every text of `values` obeys `TextRule`, each looked at where it lies.
    private static func textsAreAcceptable(_ values: [CellValue]) -> Bool {
        values.withUnsafeBufferPointer { values in
            for index in values.indices {
                if case .text(let text) = values[index], !TextRule.isAcceptable(text) { return false }
            }
            return true
        }
    }

    /// Drops one column of `row`. The rows of a table share their columns,
    /// so the shorter list made for one row serves the rows after it.
    private mutating func dropColumn(at index: Int, of row: inout BackupRow) {
        if let shortened, shortened.from == row.columns {
            row.removeColumn(at: index, leaving: shortened.to)
            return
        }
        var columns = row.columns
        columns.remove(at: index)
        shortened = (row.columns, columns)
        row.removeColumn(at: index, leaving: columns)
    }

    /// Checks what no single row shows: values that must be unique, states
    /// against identities, counters against events.
    package func finish() throws {
        try facts.check(
            CrossRowFacts.Wording(
                invalid: { Self.invalidRow(in: archive, at: $0, $1) },
                duplicate: { Self.duplicatedRow(in: archive, at: $0, $1) },
                inconsistent: inconsistent(at:_:), maximumTotal: Int64(Bounds.maximumCounterTotal)))
    }

    static func invalidRow(in archive: String, at location: String, _ message: String) -> GuestModeError {
        GuestModeError(
            .badRow, "the archive '\(archive)' has an invalid row at \(location): \(message); nothing was changed")
    }

    static func duplicatedRow(in archive: String, at location: String, _ message: String) -> GuestModeError {
        GuestModeError(
            .duplicateRow,
            "the archive '\(archive)' has a duplicated row at \(location): \(message); nothing was changed")
    }

    private func inconsistent(at location: String, _ message: String) -> GuestModeError {
        GuestModeError(
            .inconsistentRows,
            "the archive '\(archive)' is inconsistent at \(location): \(message); nothing was changed")
    }

    // MARK: - Tables

    /// Checks the row's columns for `table`; returns the canonical text of
    /// its record data when the row holds that data in another text.
    private mutating func checkColumns(_ cells: Cells, table: String) throws -> String? {
        switch table {
        case "users":
            let id = try cells.name("id")
            try cells.optionalText("device")
            // Columns the store defaults may be left out, as an older format did.
            let stateCell = cells.cell("state")
            let state = stateCell == nil ? .anonymous : UserState(rawValue: try cells.text(stateCell, "state"))
            guard let state else {
                throw cells.invalid(
                    "users.state must be one of \(UserState.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let promptStateCell = cells.cell("prompt_state")
            let promptState =
                promptStateCell == nil ? "anonymous" : try cells.text(promptStateCell, "prompt_state")
            guard PromptState(rawValue: promptState) != nil else {
                throw cells.invalid(
                    "users.prompt_state must be one of \(PromptState.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            try cells.past("created_at")
            try cells.past("last_seen_at")
            let linkedAt = try cells.optionalPast("linked_at")
            if state == .linked, linkedAt == nil { throw cells.invalid("a linked user needs users.linked_at") }
            if state == .anonymous, linkedAt != nil { throw cells.invalid("an anonymous user has no users.linked_at") }
            try facts.noteUser(id, state: state, at: cells.place)
        case "identities":
            let provider = try cells.declared("provider", in: profile.identity.providers, what: "identity provider")
            let subject = try cells.name("subject")
            let user = try cells.name("user_id")
            try cells.optionalText("email")
            try cells.past("linked_at")
            try facts.noteUnique(provider + "\0" + subject, in: .identities, at: cells.place)
            try facts.noteIdentity(of: user, at: cells.place)
        case "credentials":
            let user = try cells.name("user_id")
            let username = try cells.name("username")
            try cells.name("secret_hash")
            try cells.past("created_at")
            try facts.noteUnique(user, in: .credentialOwners, at: cells.place)
            try facts.noteUnique(username, in: .usernames, at: cells.place)
        case "upgrade_locks":
            try cells.name("user_id")
            try cells.declared("provider", in: profile.identity.providers, what: "identity provider")
            try cells.past("started_at")
        case "events":
            let user = try cells.name("user_id")
            let action = try action(cells)
            try cells.past("at")
            let count = try cells.integer("count", in: 1...Bounds.maximumEventCount, ifMissing: 1)
            try cells.optionalName("idempotency_key")
            try cells.optionalJSONObject("properties")
            try facts.noteEvent(user: user, action: action, count: Int64(count), at: cells.place)
        case "counters":
            let user = try cells.name("user_id")
            let action = try action(cells)
            let total = try cells.integer("total", in: 0...Bounds.maximumCounterTotal)
            try facts.noteCounter(user: user, action: action, total: Int64(total), at: cells.place)
        case "records":
            try cells.text("owner_id")
            try cells.declared("collection", in: cells.collections, what: "collection")
            try cells.name("key")
            let data = try cells.recanonicalizedRecordData("data")
            try cells.past("created_at")
            try cells.past("updated_at")
            return data
        case "meter_usage":
            try cells.name("user_id")
            try cells.declared("meter", in: cells.meters, what: "meter")
            try cells.number("amount", in: 0...Bounds.maximumMeterAmount)
            try cells.past("at")
            try cells.optionalName("idempotency_key")
        case "meter_warnings":
            try cells.name("user_id")
            try cells.declared("meter", in: cells.meters, what: "meter")
            // Meters that never reset keep their warnings under an empty period.
            if try cells.text("period_start") != "" { try cells.past("period_start") }
            try cells.number("percent", in: 0...100)
            guard MeterLevel(rawValue: try cells.text("level")) != nil else {
                throw cells.invalid(
                    "meter_warnings.level must be one of \(MeterLevel.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            try cells.past("fired_at")
        case "meter_grants":
            try cells.name("user_id")
            try cells.declared("meter", in: cells.meters, what: "meter")
            try cells.number("amount", in: 0...Bounds.maximumMeterAmount)
            try cells.past("granted_at")
            try cells.optionalTime("expires_at")
            try cells.optionalPast("revoked_at")
            try cells.optionalText("reason")
            try cells.optionalName("idempotency_key")
        case "plans":
            try cells.name("user_id")
            try cells.declared("plan", in: cells.plans, what: "plan")
            try cells.past("granted_at")
            try cells.optionalTime("trial_ends_at")
            try cells.optionalTime("ends_at")
            try cells.optionalPast("revoked_at")
        case "prompt_outcomes":
            try cells.name("user_id")
            try cells.declared("context", in: cells.promptContexts, what: "prompt context")
            guard PromptOutcome(rawValue: try cells.text("outcome")) != nil else {
                throw cells.invalid(
                    "prompt_outcomes.outcome must be one of \(PromptOutcome.allCases.map(\.rawValue).joined(separator: ", "))"
                )
            }
            try cells.past("at")
        case "experiment_assignments":
            try cells.name("user_id")
            let name = try cells.declared("experiment", in: cells.experiments, what: "experiment")
            let variants = profile.experiment(named: name)?.variants.map(\.name) ?? []
            try cells.declared("variant", in: variants, what: "variant of \(name)")
            try cells.past("assigned_at")
        case "outbox":
            try cells.name("user_id")
            try cells.past("queued_at")
            if cells.cell("attempts") != nil { try cells.integer("attempts", in: 0...Bounds.maximumOutboxAttempts) }
            try cells.optionalText("last_error")
            try cells.optionalTime("next_attempt_at")
        case "user_flags":
            try cells.name("user_id")
            try cells.name("flag")
            try cells.past("set_at")
        case "conflict_archive":
            if let journal = cells.cell("journal_id"), journal != .null {
                try cells.integer("journal_id", in: 1...Bounds.maximumRowID)
            }
            try cells.name("owner_id")
            // Restored by `migrate conflicts restore` into a record of this collection.
            try cells.declared("collection", in: cells.collections, what: "collection")
            try cells.name("key")
            let data = try cells.recanonicalizedRecordData("data")
            try cells.past("updated_at")
            try cells.text("reason")
            try cells.past("archived_at")
            return data
        default:
            throw cells.invalid("guestmode backups have no table \(table)")
        }
        return nil
    }

    private func action(_ cells: Cells) throws -> String {
        let action = try cells.name("action")
        guard profile.allowsFreeFormActions || profile.actions.contains(action) || Self.systemActions.contains(action)
        else {
            throw cells.invalid(
                "\(cells.table).action '\(action)' is not an action of profile '\(profile.name)' (\(profile.actions.joined(separator: ", ")))"
            )
        }
        return action
    }

    /// The row being checked, with the checks that name the column and the
    /// row, and what they need of the profile. Made once for an import: the
    /// row is lent to it for its check (`begin`), so no row copies it.
    private final class Cells {
        let profile: Profile
        let now: Date
        let archive: String
        /// The profile's names that rows must refer to.
        let collections: [String]
        let meters: [String]
        let plans: [String]
        let promptContexts: [String]
        let experiments: [String]

        /// The row's columns and values, valid between `begin` and `end` only.
        private var columns = UnsafeBufferPointer<String>(start: nil, count: 0)
        private var values = UnsafeBufferPointer<CellValue>(start: nil, count: 0)
        private(set) var table = ""
        private var entry = ""
        private var line = 0
        /// Where the row is looked into next (`index`).
        private var nextColumn = 0

        init(profile: Profile, now: Date, archive: String) {
            self.profile = profile
            self.now = now
            self.archive = archive
            collections = profile.collections.map(\.name)
            meters = profile.meters.map(\.name)
            plans = profile.plans.map(\.name)
            promptContexts = profile.prompts.rules.map(\.context)
            experiments = profile.experiments.map(\.name)
        }

        /// Lends the row at `line` of `entry` to the checks until `end`.
        func begin(
            columns: UnsafeBufferPointer<String>, values: UnsafeBufferPointer<CellValue>, table: String,
            entry: String, line: Int
        ) {
            self.columns = columns
            self.values = values
            self.line = line
            nextColumn = 0
            // Rows come table by table, entry by entry: the same strings, kept without a retain each row.
            if self.table != table { self.table = table }
            if self.entry != entry { self.entry = entry }
        }

        func end() {
            columns = UnsafeBufferPointer(start: nil, count: 0)
            values = UnsafeBufferPointer(start: nil, count: 0)
        }

        /// Made only when a message needs it.
        var location: String { place.description }
        var place: CrossRowFacts.Place { CrossRowFacts.Place(entry: entry, line: line) }

        func invalid(_ message: String) -> GuestModeError {
            BackupRowValidator.invalidRow(in: archive, at: location, message)
        }

        func duplicate(_ message: String) -> GuestModeError {
            BackupRowValidator.duplicatedRow(in: archive, at: location, message)
        }

        private func describe(_ index: Int?) -> String { index.map { describe(values[$0]) } ?? "missing" }

        /// Where the row holds `column`, nil when it does not. Looked for
        /// from the column after the one found last: the checks ask for a
        /// table's columns in the order an export writes them, so the first
        /// name compared is nearly always the one.
        private func index(_ column: String) -> Int? {
            guard let index = BackupRow.index(of: column, in: columns, from: nextColumn) else { return nil }
            nextColumn = index + 1
            return index
        }

        /// The column's value, nil when the row does not have the column.
        func cell(_ column: String) -> CellValue? { index(column).map { values[$0] } }

        /// Where the row holds `column` with a value other than null: one look-up, as an import makes millions.
        private func present(_ column: String) -> Int? {
            guard let index = index(column), values[index] != .null else { return nil }
            return index
        }

        @discardableResult
        func text(_ column: String) throws -> String { try text(at: index(column), column) }

        /// `value`, read from `column`, as text.
        func text(_ value: CellValue?, _ column: String) throws -> String {
            guard case .text(let text)? = value else {
                throw invalid("\(table).\(column) must be text, not \(value.map(describe) ?? "missing")")
            }
            return text
        }

        private func text(at index: Int?, _ column: String) throws -> String {
            guard let index, case .text(let text) = values[index] else {
                throw invalid("\(table).\(column) must be text, not \(describe(index))")
            }
            return text
        }

        private func describe(_ value: CellValue) -> String {
            switch value {
            case .null: "null"
            case .integer(let number): "the number \(number)"
            case .real(let number): "the number \(number)"
            case .text(let text): "the text \"\(text.prefix(40))\(text.count > 40 ? "…" : "")\""
            }
        }

        /// Non-empty text: ids, keys and names.
        @discardableResult
        func name(_ column: String) throws -> String { try name(at: index(column), column) }

        private func name(at index: Int?, _ column: String) throws -> String {
            try requireName(at: index, column)
            return try text(at: index, column)
        }

        /// Checks a name where it lies: a name read only to be checked is not copied.
        private func requireName(at index: Int?, _ column: String) throws {
            guard let index, case .text(let text) = values[index] else {
                throw invalid("\(table).\(column) must be text, not \(describe(index))")
            }
            guard !text.isEmpty else { throw invalid("\(table).\(column) must not be empty") }
        }

        @discardableResult
        func optionalText(_ column: String) throws -> String? {
            guard let index = present(column) else { return nil }
            return try text(at: index, column)
        }

        @discardableResult
        func optionalName(_ column: String) throws -> String? {
            guard let index = present(column) else { return nil }
            return try name(at: index, column)
        }

        @discardableResult
        func declared(_ column: String, in names: [String], what: String) throws -> String {
            let value = try name(column)
            guard names.contains(value) else {
                let known = names.isEmpty ? "it declares none" : "it declares \(names.joined(separator: ", "))"
                throw invalid(
                    "\(table).\(column) '\(value)' is not a \(what) of profile '\(profile.name)' (\(known))")
            }
            return value
        }

        /// A whole number in `range`: the bounds are what the command line could have written.
        @discardableResult
        func integer(_ column: String, in range: ClosedRange<Int64>, ifMissing: Int64? = nil) throws -> Int64 {
            let index = index(column)
            if index == nil, let ifMissing { return ifMissing }
            guard let index, case .integer(let value) = values[index] else {
                throw invalid("\(table).\(column) must be a whole number, not \(describe(index))")
            }
            guard range.contains(value) else {
                throw invalid(
                    "\(table).\(column) must be from \(range.lowerBound) to \(range.upperBound), not \(value)")
            }
            return value
        }

        func number(_ column: String, in range: ClosedRange<Double>) throws {
            let index = index(column)
            let value: Double
            switch index.map({ values[$0] }) {
            case .integer(let number)?: value = Double(number)
            case .real(let number)?: value = number
            default: throw invalid("\(table).\(column) must be a number, not \(describe(index))")
            }
            guard value.isFinite, range.contains(value) else {
                throw invalid(
                    "\(table).\(column) must be between \(range.lowerBound) and \(range.upperBound), not \(value)")
            }
        }

        /// A time in the store's form: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
        @discardableResult
        func time(_ column: String) throws -> Date { try time(at: index(column), column) }

        private func time(at index: Int?, _ column: String) throws -> Date {
            let date: Date?
            if let index, case .text(let text) = values[index] {
                date = text.withUTF8Bytes { bytes in
                    // Exactly the store's shape (parse alone also takes offsets, dates without a time and other
                    // fractions).
                    guard bytes.count == 24, bytes[19] == UInt8(ascii: "."), bytes[23] == UInt8(ascii: "Z"),
                        bytes[20..<23].allSatisfy({ (48...57).contains($0) })
                    else { return nil }
                    return Timestamp.parse(bytes: bytes)
                }
            } else {
                date = nil
            }
            guard let date else {
                throw invalid(
                    "\(table).\(column) must be a UTC time like 2026-01-31T09:30:00.000Z, not \(describe(index))")
            }
            return date
        }

        @discardableResult
        func optionalTime(_ column: String) throws -> Date? {
            guard let index = present(column) else { return nil }
            return try time(at: index, column)
        }

        /// A time something happened: not after the import's clock (a day of skew allowed).
        @discardableResult
        func past(_ column: String) throws -> Date { try past(at: index(column), column) }

        private func past(at index: Int?, _ column: String) throws -> Date {
            let date = try time(at: index, column)
            guard date.timeIntervalSince(now) <= BackupRowValidator.skew else {
                throw invalid(
                    "\(table).\(column) is \(Timestamp.format(date)), after the current time \(Timestamp.format(now))"
                )
            }
            return date
        }

        @discardableResult
        func optionalPast(_ column: String) throws -> Date? {
            guard let index = present(column) else { return nil }
            return try past(at: index, column)
        }

        /// A JSON object by the strict parser the command line uses: no
        /// duplicate member names, no nesting past `StrictJSON.maximumDepth`.
        @discardableResult
        func jsonObject(_ column: String) throws -> (text: String, value: JSONValue) {
            try jsonObject(at: index(column), column)
        }

        private func jsonObject(at index: Int?, _ column: String) throws -> (text: String, value: JSONValue) {
            let text = try text(at: index, column)
            let parsed: JSONValue
            do {
                parsed = try StrictJSON.parse(text)
            } catch {
                throw invalid("\(table).\(column) is not valid JSON (\(error))")
            }
            guard case .object = parsed else {
                throw invalid("\(table).\(column) must be a JSON object, not \(parsed.kindDescription)")
            }
            return (text, parsed)
        }

        func optionalJSONObject(_ column: String) throws {
            guard let index = present(column) else { return }
            _ = try jsonObject(at: index, column)
        }

        /// Record data as `record put` stores it: a strict JSON object, in
        /// its canonical text so equal documents compare equal. Nil when the
        /// row already holds that text, as nearly every exported row does,
        /// so the row is written as it came, not copied to be changed.
        func recanonicalizedRecordData(_ column: String) throws -> String? {
            if case .text(let text)? = cell(column), CanonicalScan.isCanonicalObject(text) { return nil }
            return try jsonObject(column).value.canonicalText
        }
    }
}
