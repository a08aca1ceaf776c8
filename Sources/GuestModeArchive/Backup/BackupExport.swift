import Foundation
import GuestModeKit

/// What ``GuestMode/exportBackup(_:to:format:level:now:toolVersion:signingKey:encryption:)`` wrote.
public struct BackupExportSummary: Codable, Sendable {
    /// The path of the archive written.
    public var archive: String
    /// The archive's format.
    public var format: ArchiveFormat
    /// How many users the archive holds.
    public var users: Int
    /// Rows written, by table.
    public var tables: [String: Int]
    /// The archive's size in bytes.
    public var bytes: Int64
    /// The id of the deployment key that signed the archive, or nil when unsigned.
    public var signedBy: String?
    /// "deployment-key" or "passphrase" when encrypted, else nil.
    public var encryption: String?
}

extension GuestMode {
    /// Writes the selected users' rows to an archive at `path`, atomically and
    /// with mode 0600, streaming rows from one read snapshot.
    /// `progress`, when given, receives (rows written, rows in total): the
    /// rows are counted first for it, a scan of every table, so a caller that
    /// shows no progress passes none. With `signingKey`
    /// the archive ends with `signature.json`; with `encryption` the whole
    /// file is sealed in chunks (see `EncryptedArchive`).
    public func exportBackup(
        _ selection: BackupSelection, to path: String, format: ArchiveFormat, level: Int? = nil, now: Date,
        toolVersion: String, signingKey: BackupKey? = nil, encryption: BackupEncryption? = nil,
        progress: ((_ written: Int, _ total: Int) -> Void)? = nil
    ) throws -> BackupExportSummary {
        if let level, !format.levels.contains(level) {
            throw GuestModeError(
                .invalidLevel,
                "compression level \(level) is out of range for \(format.rawValue); use \(format.levels.lowerBound)...\(format.levels.upperBound)"
            )
        }
        return try store.readBackupRows(selection, guestOwner: profile.guestOwner) { snapshot in
            if case .users(let requested) = selection {
                var present: Set<String> = []
                try snapshot.forEachUser { present.insert($0) }
                var seen: Set<String> = []
                let missing = requested.filter { !present.contains($0) && seen.insert($0).inserted }
                if !missing.isEmpty {
                    throw GuestModeError(
                        .userNotFound, "no user \(missing.map { "'\($0)'" }.joined(separator: ", ")) in the store")
                }
            }
            var total = 0
            if progress != nil { for table in BackupTable.all { total += try snapshot.rowCount(in: table) } }
            // The user list is streamed twice: once for the header's size (an
            // entry's size comes before it), once to write it. The snapshot
            // scans the store for the first and gives the second from its spool.
            let header = try StreamedHeader(
                BackupHeader(
                    format: BackupFormat.formatName, formatVersion: BackupFormat.currentVersion,
                    toolVersion: toolVersion, profile: .init(name: profile.name, version: profile.version), users: [],
                    guestOwner: snapshot.guestOwner, created: Timestamp.format(now), signingKeyId: signingKey?.id))
            var headerSize = 0
            let users = try header.write(users: snapshot) { headerSize += $0.count }
            var signer = signingKey?.signer(headerSize: headerSize)
            var manifest = BackupManifest(formatVersion: BackupFormat.currentVersion, entries: [], tables: [:])
            var written = 0
            try AtomicFile.write(path: path) { descriptor in
                try ArchiveWriter.write(
                    to: descriptor, path: path, format: format, level: level, encryption: encryption
                ) { writer in
                    var headerHash = StreamingSHA256()
                    try writer.addEntry(name: BackupFormat.headerName, size: Int64(headerSize), modified: now) {
                        write in
                        let listed = try header.write(users: snapshot) { piece in
                            try piece.withUnsafeBytes { bytes in
                                headerHash.update(bytes)
                                signer?.update(header: bytes)
                                try write(bytes)
                            }
                        }
                        guard listed == users else {
                            throw GuestModeError(
                                .internalFailure,
                                "the store's snapshot gave \(listed) users after \(users); nothing was written")
                        }
                    }
                    manifest.entries.append(
                        .init(
                            name: BackupFormat.headerName, size: Int64(headerSize), sha256: headerHash.finalizeHex(),
                            table: nil, rows: nil))
                    let pipeline = EntryPipeline(writer: writer, modified: now)
                    // Whatever ends this scope, the second thread is done with the writer first.
                    defer { pipeline.drain() }
                    var chunk = RowBuffer(capacity: BackupFormat.chunkTarget + (64 << 10))
                    for table in BackupTable.all {
                        var chunkRows = 0
                        var index = 0
                        var tableRows = 0
                        func flush() throws {
                            guard chunkRows > 0 else { return }
                            index += 1
                            chunk = try pipeline.add(
                                BackupFormat.dataEntryName(table: table.name, index: index), chunk,
                                table: table.name, rows: chunkRows)
                            chunkRows = 0
                        }
                        var keys = RowEncoder.Keys([])
                        try snapshot.forEachRawRow(in: table) { columns, cells in
                            if keys.count != columns.count { keys = RowEncoder.Keys(columns) }
                            try RowEncoder.appendRow(
                                cells, keys: &keys, columns: columns, table: table.name, to: &chunk)
                            chunkRows += 1
                            tableRows += 1
                            written += 1
                            if written % 10_000 == 0 { progress?(written, total) }
                            if chunk.count >= BackupFormat.chunkTarget { try flush() }
                        }
                        try flush()
                        manifest.tables[table.name] = tableRows
                    }
                    manifest.entries += try pipeline.finish()
                    let manifestBytes = Array(try BackupFormat.encoder().encode(manifest))
                    try manifestBytes.withUnsafeBytes {
                        try writer.addEntry(name: BackupFormat.manifestName, contents: $0, modified: now)
                    }
                    if let signingKey, let signer {
                        let mac = signer.signature(manifest: manifestBytes)
                        let signature = BackupSignature(
                            algorithm: BackupSignature.algorithmName, keyId: signingKey.id,
                            mac: mac.map { String(format: "%02x", $0) }.joined())
                        let signatureBytes = Array(try BackupFormat.encoder().encode(signature))
                        try signatureBytes.withUnsafeBytes {
                            try writer.addEntry(name: BackupFormat.signatureName, contents: $0, modified: now)
                        }
                    }
                }
            }
            progress?(written, total)
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? 0
            return BackupExportSummary(
                archive: path, format: format, users: users, tables: manifest.tables, bytes: size,
                signedBy: signingKey?.id,
                encryption: encryption.map { if case .passphrase = $0 { "passphrase" } else { "deployment-key" } })
        }
    }
}

/// Data entries compressed, written and hashed on a second thread while the
/// next chunk's rows are read and encoded, as the plain tools' `sqlite3 | zstd`
/// runs on two processors. One entry at a time, in order, so the archive is
/// the same byte for byte; two buffers take turns. The first failure is
/// thrown by the next call.
private final class EntryPipeline: @unchecked Sendable {
    private let queue = DispatchQueue(label: "guestmode.backup-export.entries")
    /// Signalled when no entry is in flight.
    private let idle = DispatchSemaphore(value: 1)
    // Written by the second thread only while an entry is in flight, read by
    // the first only after `idle` says it is done.
    private let writer: ArchiveWriter
    private let modified: Date
    private var entries: [BackupManifest.Entry] = []
    private var failure: (any Error)?
    /// The chunk being written; once written, the buffer for the next chunk but one.
    private var inFlight: RowBuffer?

    init(writer: ArchiveWriter, modified: Date) {
        self.writer = writer
        self.modified = modified
    }

    /// Hands `chunk` over as the data entry `name` and returns an empty
    /// buffer for the next one, once the entry before it is written.
    func add(_ name: String, _ chunk: RowBuffer, table: String, rows: Int) throws -> RowBuffer {
        idle.wait()
        if let failure {
            idle.signal()
            throw failure
        }
        let next = inFlight ?? RowBuffer(capacity: chunk.capacity)
        next.removeAll()
        inFlight = chunk
        queue.async { [self] in
            defer { idle.signal() }
            guard let chunk = inFlight else { return }
            do {
                try writer.addEntry(name: name, contents: chunk.bytes, modified: modified)
                entries.append(
                    .init(
                        name: name, size: Int64(chunk.count), sha256: StreamingSHA256.hex(of: chunk.bytes),
                        table: table, rows: rows))
            } catch {
                failure = error
            }
        }
        return next
    }

    /// The manifest entries of every data entry, in order, once all are written.
    func finish() throws -> [BackupManifest.Entry] {
        drain()
        if let failure { throw failure }
        return entries
    }

    /// Waits until no entry is in flight.
    func drain() {
        idle.wait()
        idle.signal()
    }
}

extension RowEncoder {
    /// Each column's `"name":` (after a comma for all but the first),
    /// encoded once per table, end to end in one array: a row takes its keys
    /// without retaining an array per cell.
    struct Keys {
        let bytes: [UInt8]
        /// Where each column's key ends in `bytes`.
        let ends: [Int]

        init(_ columns: [String]) {
            var bytes: [UInt8] = []
            var ends: [Int] = []
            for (index, column) in columns.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                appendString(column, to: &bytes)
                bytes.append(UInt8(ascii: ":"))
                ends.append(bytes.count)
            }
            self.bytes = bytes
            self.ends = ends
        }

        var count: Int { ends.count }
    }

    /// Appends one row as a JSON object and a newline, its text straight
    /// from the store's bytes (a string made per cell was most of an export's allocations). The keys and the
    /// buffer come `inout`, though neither changes: the caller's are captured variables, and passed by value
    /// each was copied, a retain and a release for every row.
    static func appendRow(
        _ cells: UnsafeBufferPointer<RawCell>, keys: inout Keys, columns: [String], table: String,
        to buffer: inout RowBuffer
    ) throws {
        try keys.bytes.withUnsafeBufferPointer { keyBytes in
            try keys.ends.withUnsafeBufferPointer { ends in
                buffer.append(UInt8(ascii: "{"))
                var start = 0
                for index in 0..<cells.count {
                    buffer.append(UnsafeBufferPointer(rebasing: keyBytes[start..<ends[index]]))
                    start = ends[index]
                    switch cells[index] {
                    case .null: appendNull(to: buffer)
                    case .integer(let value): appendNumber(value, to: buffer)
                    case .real(let value):
                        guard value.isFinite else {
                            throw GuestModeError(
                                .unexportableValue,
                                "\(table).\(columns[index]) holds \(value), which a backup cannot carry; fix the row in the store and export again"
                            )
                        }
                        appendNumber(value, to: buffer)
                    case .text(let value): appendString(value, to: buffer)
                    }
                }
                buffer.append(UInt8(ascii: "}"))
                buffer.append(UInt8(ascii: "\n"))
            }
        }
    }

    private static func appendNull(to buffer: RowBuffer) {
        buffer.reserve(4)
        let out = buffer.base + buffer.count
        out[0] = UInt8(ascii: "n")
        out[1] = UInt8(ascii: "u")
        out[2] = UInt8(ascii: "l")
        out[3] = UInt8(ascii: "l")
        buffer.advance(by: 4)
    }
}
