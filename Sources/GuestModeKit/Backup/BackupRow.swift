/// One row of a backup table as an archive or a store copy carries it: its
/// columns in the order they came, each with its value.
///
/// Not a dictionary: an import reads millions of rows of a dozen columns,
/// and hashing every column name on every insert and look-up was 15 % of the
/// client's work (`bench/results.md`). A column is found by comparing
/// names, which for names of up to 15 bytes is a comparison of two words.
/// Rows of one table list the same columns in the same order, and whoever
/// makes them passes the previous row's `columns` on (`RowDecoder`), so rows
/// share one array and "the same columns as the last row" is a comparison of
/// two references.
///
/// Two rows are equal when they hold the same columns with the same values,
/// in any order, as two dictionaries would be.
///
/// ```swift
/// var row: BackupRow = ["id": .text("u1"), "state": .text("anonymous")]
/// row["state"] = .text("linked")   // replaces the value in place
/// row["id"] = nil                   // drops the column
/// ```
package struct BackupRow: Sendable, Equatable, ExpressibleByDictionaryLiteral, CustomStringConvertible {
    /// The column names, unique, in the row's order.
    package private(set) var columns: [String]
    /// `values[i]` is the value of `columns[i]`.
    package private(set) var values: [CellValue]

    package init() {
        columns = []
        values = []
    }

    /// A row of `columns` (unique names) with `values`, one for each, in order.
    package init(columns: [String], values: [CellValue]) {
        precondition(columns.count == values.count, "a backup row needs one value for each column")
        self.columns = columns
        self.values = values
    }

    /// The dictionary's columns in byte order of their names, so the row is the same on every run.
    package init(_ dictionary: [String: CellValue]) {
        let sorted = dictionary.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        self.init(columns: sorted.map(\.key), values: sorted.map(\.value))
    }

    package init(dictionaryLiteral elements: (String, CellValue)...) {
        self.init()
        for (column, value) in elements {
            precondition(self[column] == nil, "column '\(column)' appears twice in a backup row literal")
            self[column] = value
        }
    }

    package var count: Int { columns.count }
    package var isEmpty: Bool { columns.isEmpty }

    /// The position of `column`, or nil when the row does not have it.
    package func index(of column: String) -> Int? { index(of: column, from: 0) }

    /// The position of `column`, looked for from `start` to the end, then
    /// from the start: nil when the row does not have it.
    package func index(of column: String, from start: Int) -> Int? {
        columns.withUnsafeBufferPointer { Self.index(of: column, in: $0, from: start) }
    }

    /// The position of `column` in `columns`, looked for from `start` to the
    /// end, then from the start: nil when `columns` does not have it.
    package static func index(of column: String, in columns: UnsafeBufferPointer<String>, from start: Int) -> Int? {
        let count = columns.count
        // Names of other lengths are passed over without a call into the string comparison: most are.
        let length = column.utf8.count
        var index = (0..<count).contains(start) ? start : 0
        for _ in 0..<count {
            if columns[index].utf8.count == length, columns[index] == column { return index }
            index = index + 1 == count ? 0 : index + 1
        }
        return nil
    }

    /// The value of `column`, nil when the row does not have the column.
    /// Setting nil drops the column; setting a column the row lacks adds it at the end.
    package subscript(column: String) -> CellValue? {
        get { index(of: column).map { values[$0] } }
        set {
            switch (index(of: column), newValue) {
            case (let index?, let value?): values[index] = value
            case (let index?, nil):
                columns.remove(at: index)
                values.remove(at: index)
            case (nil, let value?):
                columns.append(column)
                values.append(value)
            case (nil, nil): break
            }
        }
    }

    /// Drops the column at `index`, naming the rest `columns`: the row's
    /// columns less that one, as made for another row of the table, so
    /// that the rows keep sharing one array. The values are changed in
    /// place when the row holds the only reference to them.
    ///
    /// ```swift
    /// var row = BackupRow(columns: ["id", "user_id"], values: [.integer(7), .text("u1")])
    /// row.removeColumn(at: 0, leaving: ["user_id"])   // [user_id: u1]
    /// ```
    package mutating func removeColumn(at index: Int, leaving columns: [String]) {
        precondition(columns.count == self.columns.count - 1, "one column fewer must be left")
        // Compared name by name in debug builds only: an import drops a column from millions of rows.
        assert(
            columns[..<index] == self.columns[..<index] && columns[index...] == self.columns[(index + 1)...],
            "the columns left must be the row's less the one removed")
        values.remove(at: index)
        self.columns = columns
    }

    package static func == (lhs: BackupRow, rhs: BackupRow) -> Bool {
        guard lhs.count == rhs.count else { return false }
        if lhs.columns == rhs.columns { return lhs.values == rhs.values }
        return zip(lhs.columns, lhs.values).allSatisfy { rhs[$0.0] == $0.1 }
    }

    package var description: String {
        "[" + zip(columns, values).map { "\($0.0): \($0.1)" }.joined(separator: ", ") + "]"
    }
}
