import Foundation

/// Purge candidates kept between a purge's decisions and its report, so the
/// report can follow the commit: in memory up to `memoryLimit` bytes, then in
/// an unlinked temporary file (nothing is left behind by a killed run), so
/// any number of candidates takes constant memory. Each candidate is its
/// last-seen time and record count (8 bytes each), then its id (a 4-byte
/// length and UTF-8).
final class PurgeSpool {
    private var buffer: [UInt8] = []
    private var file: FileHandle?
    private let memoryLimit: Int
    private(set) var count = 0

    init(memoryLimit: Int = 1 << 20) {
        self.memoryLimit = memoryLimit
    }

    deinit { try? file?.close() }

    /// Appends one candidate.
    func append(_ candidate: PurgeCandidate) throws {
        put64(candidate.lastSeenAt.timeIntervalSinceReferenceDate.bitPattern)
        put64(UInt64(bitPattern: Int64(candidate.records)))
        var id = candidate.id
        id.withUTF8 { utf8 in
            put32(UInt32(truncatingIfNeeded: utf8.count))
            buffer.append(contentsOf: utf8)
        }
        count += 1
        if buffer.count >= memoryLimit { try spill() }
    }

    /// Forgets every candidate.
    func removeAll() throws {
        buffer.removeAll(keepingCapacity: true)
        count = 0
        do {
            try file?.truncate(atOffset: 0)
        } catch {
            throw Self.ioError(error)
        }
    }

    /// Calls `body` with each candidate, in the order they were appended.
    func forEach(_ body: (PurgeCandidate) throws -> Void) throws {
        guard let file else {
            let consumed = try buffer.withUnsafeBytes { try Self.decode($0, body) }
            guard consumed == buffer.count else { throw Self.damaged() }
            return
        }
        try spill()
        var pending: [UInt8] = []
        do {
            try file.seek(toOffset: 0)
        } catch {
            throw Self.ioError(error)
        }
        while true {
            let chunk: Data
            do {
                chunk = try file.read(upToCount: 256 << 10) ?? Data()
            } catch {
                throw Self.ioError(error)
            }
            if chunk.isEmpty { break }
            pending.append(contentsOf: chunk)
            let consumed = try pending.withUnsafeBytes { try Self.decode($0, body) }
            pending.removeFirst(consumed)
        }
        guard pending.isEmpty else { throw Self.damaged() }
    }

    private func put32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
    }

    private func put64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
    }

    /// Moves the buffered candidates to the end of the temporary file,
    /// opening it first.
    private func spill() throws {
        if file == nil {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent(
                "guestmode-purge-\(UUID().uuidString).spool")
            guard FileManager.default.createFile(atPath: url.path, contents: nil),
                let handle = FileHandle(forUpdatingAtPath: url.path)
            else {
                throw GuestModeError(
                    .ioError, code: .ioError,
                    "cannot create a temporary file in '\(url.deletingLastPathComponent().path)' to hold the guests being purged; check that the temporary directory (TMPDIR) is writable"
                )
            }
            // Unlinked at once: the open handle keeps it until the process ends.
            try? FileManager.default.removeItem(at: url)
            file = handle
        }
        guard let file, !buffer.isEmpty else { return }
        do {
            try file.seekToEnd()
            try file.write(contentsOf: buffer)
        } catch {
            throw Self.ioError(error)
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Decodes the complete candidates at the start of `bytes`; returns how
    /// many bytes they took (a partial one at the end is left).
    private static func decode(
        _ bytes: UnsafeRawBufferPointer, _ body: (PurgeCandidate) throws -> Void
    ) throws
        -> Int
    {
        var offset = 0
        while bytes.count - offset >= 20 {
            let lastSeen = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            let records = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self))
            let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 16, as: UInt32.self)))
            guard bytes.count - offset - 20 >= length else { break }
            let id = String(
                decoding: UnsafeRawBufferPointer(rebasing: bytes[(offset + 20)..<(offset + 20 + length)]), as: UTF8.self
            )
            try body(
                PurgeCandidate(
                    id: id, lastSeenAt: Date(timeIntervalSinceReferenceDate: Double(bitPattern: lastSeen)),
                    records: Int(Int64(bitPattern: records))))
            offset += 20 + length
        }
        return offset
    }

    private static func damaged() -> GuestModeError {
        GuestModeError(
            .ioError, code: .ioError,
            "the temporary file holding the guests being purged was changed while in use; run the command again")
    }

    private static func ioError(_ error: any Error) -> GuestModeError {
        GuestModeError(
            .ioError, code: .ioError,
            "cannot use the temporary file holding the guests being purged: \(error.localizedDescription); check the space in the temporary directory (TMPDIR)"
        )
    }
}
