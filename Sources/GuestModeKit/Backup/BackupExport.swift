import Foundation
import GRDB

/// Whose data an export holds.
public enum BackupSelection: Sendable, Equatable {
    case users([String])
    /// Every user, plus records still owned by the profile's guest owner.
    case all
}

public struct BackupExportSummary: Codable, Sendable {
    public var archive: String
    public var format: ArchiveFormat
    public var users: Int
    public var tables: [String: Int]
    public var bytes: Int64
}

extension GuestMode {
    /// Writes the selected users' rows to an archive at `path`, atomically and
    /// with mode 0600, streaming rows from one read snapshot.
    /// `progress` receives (rows written, rows in total).
    public func exportBackup(
        _ selection: BackupSelection, to path: String, format: ArchiveFormat, level: Int? = nil, now: Date,
        toolVersion: String, progress: (Int, Int) -> Void = { _, _ in }
    ) throws -> BackupExportSummary {
        if let level, !format.levels.contains(level) {
            throw GuestModeError.usage(
                "compression level \(level) is out of range for \(format.rawValue); use \(format.levels.lowerBound)...\(format.levels.upperBound)",
                code: .invalidLevel)
        }
        return try store.read { db in
            let users = try selectedUsers(selection, db)
            var guestOwner: String?
            if selection == .all,
               try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM records WHERE owner_id = ?)", arguments: [profile.guestOwner]) == true {
                guestOwner = profile.guestOwner
            }
            let filter = OwnerFilter(selection: selection, users: users, guestOwner: guestOwner)
            var total = 0
            for table in BackupTable.all {
                let condition = filter.condition(table)
                total += try Int.fetchOne(
                    db, sql: "SELECT COUNT(*) FROM \(table.name) WHERE \(condition.sql)", arguments: condition.arguments) ?? 0
            }
            let header = BackupHeader(
                format: BackupFormat.formatName, formatVersion: BackupFormat.currentVersion, toolVersion: toolVersion,
                profile: .init(name: profile.name, version: profile.version), users: users, guestOwner: guestOwner,
                created: Timestamp.format(now))
            var manifest = BackupManifest(formatVersion: BackupFormat.currentVersion, entries: [], tables: [:])
            var written = 0
            try AtomicFile.write(path: path) { descriptor in
                try ArchiveWriter.write(to: descriptor, path: path, format: format, level: level) { writer in
                    func add(_ name: String, _ bytes: [UInt8], table: String? = nil, rows: Int? = nil) throws {
                        try bytes.withUnsafeBytes { try writer.addEntry(name: name, contents: $0, modified: now) }
                        manifest.entries.append(.init(
                            name: name, size: Int64(bytes.count), sha256: SHA256.hex(of: bytes), table: table, rows: rows))
                    }
                    try add(BackupFormat.headerName, Array(try BackupFormat.encoder().encode(header)))
                    for table in BackupTable.all {
                        var chunk: [UInt8] = []
                        chunk.reserveCapacity(BackupFormat.chunkTarget + (64 << 10))
                        var chunkRows = 0
                        var index = 0
                        var tableRows = 0
                        func flush() throws {
                            guard chunkRows > 0 else { return }
                            index += 1
                            try add(BackupFormat.dataEntryName(table: table.name, index: index), chunk, table: table.name, rows: chunkRows)
                            chunk.removeAll(keepingCapacity: true)
                            chunkRows = 0
                        }
                        let condition = filter.condition(table)
                        let statement = try db.makeStatement(
                            sql: "SELECT * FROM \(table.name) WHERE \(condition.sql) ORDER BY rowid")
                        let columns = statement.columnNames
                        let keys = Self.encodedKeys(columns)
                        let rows = try Row.fetchCursor(statement, arguments: condition.arguments)
                        while let row = try rows.next() {
                            try appendRow(row, keys: keys, columns: columns, table: table.name, to: &chunk)
                            chunkRows += 1
                            tableRows += 1
                            written += 1
                            if written % 10_000 == 0 { progress(written, total) }
                            if chunk.count >= BackupFormat.chunkTarget { try flush() }
                        }
                        try flush()
                        manifest.tables[table.name] = tableRows
                    }
                    let manifestBytes = Array(try BackupFormat.encoder().encode(manifest))
                    try manifestBytes.withUnsafeBytes {
                        try writer.addEntry(name: BackupFormat.manifestName, contents: $0, modified: now)
                    }
                }
            }
            progress(written, total)
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
            return BackupExportSummary(archive: path, format: format, users: users.count, tables: manifest.tables, bytes: size)
        }
    }

    private func selectedUsers(_ selection: BackupSelection, _ db: Database) throws -> [String] {
        switch selection {
        case .all:
            return try String.fetchAll(db, sql: "SELECT id FROM users ORDER BY id")
        case .users(let requested):
            var seen: Set<String> = []
            let unique = requested.filter { seen.insert($0).inserted }
            let missing = try unique.filter {
                try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM users WHERE id = ?)", arguments: [$0]) != true
            }
            if !missing.isEmpty {
                throw GuestModeError.notFound(
                    "no user \(missing.map { "'\($0)'" }.joined(separator: ", ")) in the store; 'guestmode user list' shows who exists",
                    code: "user_not_found")
            }
            return unique
        }
    }

    /// Each column's `"name":` (after a comma for all but the first), encoded once per table.
    private static func encodedKeys(_ columns: [String]) -> [[UInt8]] {
        columns.enumerated().map { index, column in
            var key: [UInt8] = index > 0 ? [UInt8(ascii: ",")] : []
            RowEncoder.appendString(column, to: &key)
            key.append(UInt8(ascii: ":"))
            return key
        }
    }

    private func appendRow(_ row: Row, keys: [[UInt8]], columns: [String], table: String, to buffer: inout [UInt8]) throws {
        buffer.append(UInt8(ascii: "{"))
        for (index, column) in columns.enumerated() {
            buffer.append(contentsOf: keys[index])
            switch (row[index] as DatabaseValue).storage {
            case .null: buffer += "null".utf8
            case .int64(let value): RowEncoder.appendNumber(value, to: &buffer)
            case .double(let value):
                guard value.isFinite else {
                    throw GuestModeError.badData(
                        "\(table).\(column) holds \(value), which a backup cannot carry; fix the row with sqlite3 and export again",
                        code: "unexportable_value")
                }
                RowEncoder.appendNumber(value, to: &buffer)
            case .string(let value): RowEncoder.appendString(value, to: &buffer)
            case .blob:
                throw GuestModeError.badData(
                    "\(table).\(column) holds binary data, which backup format \(BackupFormat.currentVersion) does not carry; store it as text",
                    code: "unexportable_value")
            }
        }
        buffer += "}\n".utf8
    }
}

/// The SQL condition that picks the selected owners' rows of a table.
private struct OwnerFilter {
    let selection: BackupSelection
    let users: [String]
    let guestOwner: String?

    func condition(_ table: BackupTable) -> (sql: String, arguments: StatementArguments) {
        switch selection {
        case .all where table.name == "records" && guestOwner != nil:
            ("owner_id IN (SELECT id FROM users) OR owner_id = ?", [guestOwner])
        case .all:
            ("\(table.ownerColumn) IN (SELECT id FROM users)", [])
        case .users:
            ("\(table.ownerColumn) IN (\(users.map { _ in "?" }.joined(separator: ", ")))", StatementArguments(users))
        }
    }
}
