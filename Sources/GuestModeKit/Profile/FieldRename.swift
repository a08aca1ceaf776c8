import Foundation

/// A profile upgrade's `rename_field` step, done by the engine over the
/// records of one collection read a page at a time (`ProfileRows.recordPage`)
/// and written back as canonical JSON: what a member is, and what renaming it
/// does, is decided here once, so no backend defines JSON semantics, and a
/// collection of any size is renamed holding one page in memory.
///
/// A record "has" a field when its object has a top-level member of exactly
/// that name (no path syntax: `a.b` is a member named `a.b`).
package struct FieldRename: Sendable, Equatable {
    /// The collection whose records are renamed.
    package var collection: String
    /// The member renamed.
    package var field: String
    /// Its name afterwards.
    package var newName: String

    /// Records read and written back at a time: large enough that the round
    /// trips do not dominate.
    package static let pageSize = 500
    /// The most bytes of data a page holds past its first record: counted
    /// in records alone, 500 records of 64 KB took `profile apply` to 92 MB.
    package static let pageBytes = 1 << 20

    /// The step renaming `field` of `collection`'s records to `newName`.
    package init(collection: String, field: String, to newName: String) {
        self.collection = collection
        self.field = field
        self.newName = newName
    }

    /// How many records have the field, and how many of those also have a
    /// member called `newName`, which the rename would overwrite.
    package func census(
        _ rows: some ProfileRows, pageSize: Int = pageSize, pageBytes: Int = pageBytes
    ) throws -> (having: Int, clashing: Int) {
        var having = 0
        var clashing = 0
        try forEachPage(rows, pageSize: pageSize, pageBytes: pageBytes) { page in
            for record in page {
                let members = try Self.members(of: record)
                guard members[field] != nil else { continue }
                having += 1
                if members[newName] != nil { clashing += 1 }
            }
        }
        return (having, clashing)
    }

    /// Renames the field in every record that has it and returns how many
    /// changed. A member already called `newName` is replaced, as setting a
    /// member does; the plan refuses an upgrade where that would happen.
    @discardableResult
    package func apply(_ rows: some ProfileRows, pageSize: Int = pageSize, pageBytes: Int = pageBytes) throws -> Int {
        var renamed = 0
        try forEachPage(rows, pageSize: pageSize, pageBytes: pageBytes) { page in
            var changed: [StoredRecord] = []
            for var record in page {
                var members = try Self.members(of: record)
                guard let value = members.removeValue(forKey: field) else { continue }
                members[newName] = value
                record.data = JSONValue.object(members).canonicalText
                changed.append(record)
            }
            if !changed.isEmpty { try rows.replaceRecordData(changed) }
            renamed += changed.count
        }
        return renamed
    }

    /// Only data is rewritten, never an owner or a key, so the position
    /// after a page is still where the next one starts.
    private func forEachPage(
        _ rows: some ProfileRows, pageSize: Int, pageBytes: Int, _ body: ([StoredRecord]) throws -> Void
    ) throws {
        var position: RecordPosition?
        while true {
            let page = try rows.recordPage(in: collection, after: position, limit: pageSize, maximumBytes: pageBytes)
            guard let last = page.last else { return }
            try body(page)
            position = RecordPosition(after: last)
        }
    }

    /// Every stored record is a JSON object (`putRecord` and backup import
    /// store nothing else), so anything else means the store was changed
    /// behind guestmode's back.
    private static func members(of record: StoredRecord) throws -> [String: JSONValue] {
        let parsed: JSONValue
        do {
            parsed = try StrictJSON.parse(record.data)
        } catch {
            throw GuestModeError(
                .corruptStore,
                "the record \(record.key.debugDescription) of \(record.owner) in \(record.collection) is not valid JSON: \(error)"
            )
        }
        guard case .object(let members) = parsed else {
            throw GuestModeError(
                .corruptStore,
                "the record \(record.key.debugDescription) of \(record.owner) in \(record.collection) is \(parsed.kindDescription), not a JSON object"
            )
        }
        return members
    }
}
