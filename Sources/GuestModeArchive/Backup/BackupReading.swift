import Foundation
import GuestModeKit

/// Where a row came from, for error messages that point at it.
struct RowLocation {
    var entry: String
    var line: Int

    var description: String { "line \(line) of \(entry)" }
}

/// What one pass over an archive saw.
struct ArchiveWalk {
    struct Observed {
        var size: Int64
        var sha256: String?
        var rows: Int?
    }

    enum Depth {
        /// Names, order, types, sizes and limits; entry bytes are read but not hashed.
        case structure
        /// Also hashes every entry and parses every row.
        case full
    }

    var header: BackupHeader
    /// The format version the archive was written in, before any upgrade.
    var writtenVersion: Int
    var manifest: BackupManifest
    var observed: [String: Observed]
    var order: [String]

    /// Reads the archive once, front to back. `onHeader` runs before any row;
    /// `onRow` (full depth only) gets every row already upgraded to the
    /// current format. Refuses entries this format does not define.
    static func read(
        path: String, depth: Depth, limits: ArchiveLimits, chain: ArchiveMigrationChain = .standard,
        onHeader: (BackupHeader) throws -> Void = { _ in },
        onRow: (BackupTable, [String: CellValue], RowLocation) throws -> Void = { _, _, _ in }
    ) throws -> ArchiveWalk {
        try ArchiveReader.read(path: path, limits: limits) { reader in
            guard let first = try reader.nextEntry() else {
                throw GuestModeError.badData("the archive '\(path)' has no entries; it is not a guestmode backup", code: .notABackup)
            }
            guard first == BackupFormat.headerName else {
                throw GuestModeError.badData(
                    "the archive '\(path)' starts with '\(first)' instead of \(BackupFormat.headerName); it is not a guestmode backup",
                    code: .notABackup)
            }
            let headerBytes = try reader.readAll()
            var observed = [first: Observed(size: Int64(headerBytes.count), sha256: StreamingSHA256.hex(of: headerBytes), rows: nil)]
            var order = [first]
            let (header, writtenVersion, migrations) = try decodeHeader(headerBytes, path: path, chain: chain)
            try onHeader(header)

            var manifest: BackupManifest?
            while let name = try reader.nextEntry() {
                if manifest != nil {
                    throw GuestModeError.badData(
                        "refusing the archive '\(path)': it has an entry '\(name)' after \(BackupFormat.manifestName); nothing was changed",
                        code: .hostileArchive)
                }
                order.append(name)
                if name == BackupFormat.manifestName {
                    manifest = try decodeManifest(try reader.readAll(), path: path)
                    continue
                }
                guard let table = BackupFormat.table(forEntry: name) else {
                    throw GuestModeError.badData(
                        "refusing the archive '\(path)': it has an entry '\(name)' that guestmode backups do not contain; nothing was changed",
                        code: .hostileArchive)
                }
                switch depth {
                case .structure:
                    observed[name] = Observed(size: try reader.readData { _ in }, sha256: nil, rows: nil)
                case .full:
                    var hasher = StreamingSHA256()
                    var splitter = LineSplitter(entry: name)
                    let size = try reader.readData { chunk in
                        hasher.update(chunk)
                        try splitter.feed(chunk) { line, location in
                            var row = try decodeRow(line, location: location, path: path)
                            for step in migrations { try step.upgradeRow(table.name, &row) }
                            try onRow(table, row, location)
                        }
                    }
                    try splitter.finish()
                    observed[name] = Observed(size: size, sha256: hasher.finalizeHex(), rows: splitter.lines)
                }
            }
            guard let manifest else {
                throw GuestModeError.badData(
                    "the archive '\(path)' has no \(BackupFormat.manifestName); it is truncated or was altered",
                    code: .missingManifest)
            }
            return ArchiveWalk(header: header, writtenVersion: writtenVersion, manifest: manifest, observed: observed, order: order)
        }
    }

    /// Every way the archive differs from its manifest; empty when it matches.
    var problems: [String] {
        var problems: [String] = []
        if manifest.formatVersion != writtenVersion {
            problems.append("manifest.json says format version \(manifest.formatVersion) but header.json says \(writtenVersion)")
        }
        let listed = Dictionary(manifest.entries.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        if listed.count != manifest.entries.count { problems.append("manifest.json lists an entry twice") }
        for name in order where name != BackupFormat.manifestName && listed[name] == nil {
            problems.append("\(name) is not listed in manifest.json")
        }
        var rowsPerTable: [String: Int] = [:]
        for entry in manifest.entries {
            guard let seen = observed[entry.name] else {
                problems.append("\(entry.name) is listed in manifest.json but missing from the archive")
                continue
            }
            if seen.size != entry.size {
                problems.append("\(entry.name) is \(seen.size) bytes but manifest.json says \(entry.size)")
            }
            if let sha256 = seen.sha256, sha256 != entry.sha256.lowercased() {
                problems.append("\(entry.name) has SHA-256 \(sha256) but manifest.json says \(entry.sha256)")
            }
            if let rows = seen.rows, rows != (entry.rows ?? 0) {
                problems.append("\(entry.name) has \(rows) rows but manifest.json says \(entry.rows ?? 0)")
            }
            if let table = entry.table { rowsPerTable[table, default: 0] += entry.rows ?? 0 }
        }
        for (table, count) in manifest.tables where (rowsPerTable[table] ?? 0) != count {
            problems.append("manifest.json counts \(count) rows in \(table) but its entries hold \(rowsPerTable[table] ?? 0)")
        }
        return problems
    }

    /// Throws the manifest mismatches as one error.
    func requireMatchingManifest(path: String) throws {
        let problems = problems
        guard let first = problems.first else { return }
        let more = problems.count > 1 ? " (and \(problems.count - 1) more problems)" : ""
        throw GuestModeError.badData(
            "the archive '\(path)' does not match its manifest: \(first)\(more); it is damaged or was altered, and nothing was changed",
            code: .manifestMismatch)
    }

    private static func decodeHeader(
        _ bytes: [UInt8], path: String, chain: ArchiveMigrationChain
    ) throws -> (BackupHeader, Int, [ArchiveMigration]) {
        guard var object = (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any],
              object["format"] as? String == BackupFormat.formatName,
              let version = object["format_version"] as? Int
        else {
            throw GuestModeError.badData(
                "the archive '\(path)' has a header.json that is not a guestmode backup header", code: .notABackup)
        }
        let migrations = try chain.steps(from: version, archive: path)
        for step in migrations {
            try step.upgradeHeader(&object)
            object["format_version"] = step.from + 1
        }
        do {
            let data = try JSONSerialization.data(withJSONObject: object)
            return (try BackupFormat.decoder().decode(BackupHeader.self, from: data), version, migrations)
        } catch {
            throw GuestModeError.badData(
                "the archive '\(path)' has a malformed header.json (\(describe(error)))", code: .badHeader)
        }
    }

    private static func decodeManifest(_ bytes: [UInt8], path: String) throws -> BackupManifest {
        do {
            return try BackupFormat.decoder().decode(BackupManifest.self, from: Data(bytes))
        } catch {
            throw GuestModeError.badData(
                "the archive '\(path)' has a malformed manifest.json (\(describe(error)))", code: .badManifest)
        }
    }

    private static func decodeRow(_ line: [UInt8], location: RowLocation, path: String) throws -> [String: CellValue] {
        do {
            return try JSONDecoder().decode([String: CellValue].self, from: Data(line))
        } catch {
            throw GuestModeError.badData(
                "the archive '\(path)' has a malformed row at \(location.description): expected a JSON object of column values",
                code: .badRow)
        }
    }

    private static func describe(_ error: Error) -> String {
        if case DecodingError.keyNotFound(let key, _) = error { return "missing '\(key.stringValue)'" }
        if case DecodingError.typeMismatch(_, let context) = error {
            return "wrong type at '\(context.codingPath.map(\.stringValue).joined(separator: "."))'"
        }
        return "not valid JSON"
    }
}

/// Cuts a stream of NDJSON chunks into lines without holding more than one line.
struct LineSplitter {
    let entry: String
    private(set) var lines = 0
    private var partial: [UInt8] = []

    init(entry: String) { self.entry = entry }

    mutating func feed(_ chunk: UnsafeRawBufferPointer, _ line: ([UInt8], RowLocation) throws -> Void) throws {
        var start = 0
        for index in 0..<chunk.count where chunk[index] == UInt8(ascii: "\n") {
            partial.append(contentsOf: chunk[start..<index])
            lines += 1
            try line(partial, RowLocation(entry: entry, line: lines))
            partial.removeAll(keepingCapacity: true)
            start = index + 1
        }
        partial.append(contentsOf: chunk[start...])
    }

    /// Every row ends with a newline, so leftover bytes mean a cut-off entry.
    func finish() throws {
        guard partial.isEmpty else {
            throw GuestModeError.badData(
                "\(entry) ends in the middle of a row (line \(lines + 1)); the archive is damaged", code: .badRow)
        }
    }
}

/// Checking and describing archives without a store.
public enum BackupArchive {
    public struct Verification: Codable, Sendable {
        public var archive: String
        public var ok: Bool
        public var full: Bool
        public var formatVersion: Int?
        public var profile: String?
        public var users: Int?
        public var entries: Int
        public var bytes: Int64
        public var tables: [String: Int]
        public var errors: [String]
    }

    public struct Inspection: Codable, Sendable {
        public var archive: String
        public var header: BackupHeader
        public var manifest: BackupManifest
    }

    /// A structural check (names, order, sizes against the manifest) or, with
    /// `full`, a hash of every entry and a parse of every row. Content
    /// problems are reported, not thrown; a missing file is thrown.
    public static func verify(path: String, full: Bool, limits: ArchiveLimits = .standard) throws -> Verification {
        var report = Verification(
            archive: path, ok: false, full: full, formatVersion: nil, profile: nil, users: nil, entries: 0, bytes: 0,
            tables: [:], errors: [])
        do {
            let walk = try ArchiveWalk.read(path: path, depth: full ? .full : .structure, limits: limits)
            report.formatVersion = walk.writtenVersion
            report.profile = "\(walk.header.profile.name) v\(walk.header.profile.version)"
            report.users = walk.header.users.count
            report.entries = walk.order.count
            report.bytes = walk.observed.values.reduce(0) { $0 + $1.size }
            report.tables = walk.manifest.tables
            report.errors = walk.problems
        } catch let error as GuestModeError where error.kind == .badData {
            report.errors = [error.message]
        }
        report.ok = report.errors.isEmpty
        return report
    }

    /// Reads, hashes and parses the whole archive and throws the first
    /// problem. Import calls it before opening the store so a damaged or
    /// hostile archive never reaches the store at all (opening a store
    /// already touches its file).
    public static func requireIntact(path: String, limits: ArchiveLimits = .standard) throws {
        try ArchiveWalk.read(path: path, depth: .full, limits: limits).requireMatchingManifest(path: path)
    }

    public static func inspect(path: String, limits: ArchiveLimits = .standard) throws -> Inspection {
        let walk = try ArchiveWalk.read(path: path, depth: .structure, limits: limits)
        return Inspection(archive: path, header: walk.header, manifest: walk.manifest)
    }
}
