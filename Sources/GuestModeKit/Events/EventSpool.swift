import Foundation

/// The decoded events of an event log, kept between `ingest`'s validating
/// pass and its applying pass so each line is parsed once. Events are held
/// in a compact binary form: in memory up to `memoryLimit` bytes, then in
/// an unlinked temporary file (nothing is left behind by a killed run), so
/// a log of any size is spooled in constant memory.
final class EventSpool {
    private var buffer: [UInt8] = []
    private var file: FileHandle?
    private let memoryLimit: Int
    private(set) var count = 0

    /// 1 MiB in memory: the applying pass runs beside SQLite's bulk page
    /// cache, and the whole process stays under 64 MB.
    init(memoryLimit: Int = 1 << 20) {
        self.memoryLimit = memoryLimit
    }

    deinit { try? file?.close() }

    /// Appends one event: a 4-byte length, then its fields.
    func append(_ event: TrackedEvent) throws {
        if buffer.capacity < memoryLimit {
            // Reserved once, with room for the last event, so it never doubles past the limit.
            buffer.reserveCapacity(memoryLimit + (64 << 10))
        }
        let start = buffer.count
        buffer.append(contentsOf: [0, 0, 0, 0])
        put(event.user)
        put(event.action)
        put64(event.at.timeIntervalSinceReferenceDate.bitPattern)
        put64(UInt64(bitPattern: Int64(event.count)))
        if let key = event.idempotencyKey {
            buffer.append(1)
            put(key)
        } else {
            buffer.append(0)
        }
        put32(UInt32(truncatingIfNeeded: event.properties.count))
        for (name, property) in event.properties {
            put(name)
            switch property {
            case .string(let text):
                buffer.append(0)
                put(text)
            case .number(let text):
                buffer.append(1)
                put(text)
            }
        }
        let length = UInt32(truncatingIfNeeded: buffer.count - start - 4)
        withUnsafeBytes(of: length.littleEndian) { bytes in
            for index in 0..<4 { buffer[start + index] = bytes[index] }
        }
        count += 1
        if buffer.count >= memoryLimit { try spill() }
    }

    /// Calls `body` with each event, in the order they were appended.
    func forEach(_ body: (TrackedEvent) throws -> Void) throws {
        guard let file else {
            let consumed = try buffer.withUnsafeBytes { try Self.decodeRecords(in: $0, body) }
            guard consumed == buffer.count else { throw Self.damaged() }
            return
        }
        try spill()
        buffer = []
        do {
            try file.seek(toOffset: 0)
        } catch {
            throw Self.ioError(error)
        }
        var pending: [UInt8] = []
        while true {
            let chunk: Data
            do {
                chunk = try file.read(upToCount: 256 << 10) ?? Data()
            } catch {
                throw Self.ioError(error)
            }
            if chunk.isEmpty { break }
            pending.append(contentsOf: chunk)
            let consumed = try pending.withUnsafeBytes { try Self.decodeRecords(in: $0, body) }
            pending.removeFirst(consumed)
        }
        guard pending.isEmpty else { throw Self.damaged() }
    }

    // MARK: - Writing

    private func put(_ text: String) {
        var text = text
        text.withUTF8 { utf8 in
            put32(UInt32(truncatingIfNeeded: utf8.count))
            buffer.append(contentsOf: utf8)
        }
    }

    private func put32(_ value: UInt32) {
        withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
    }

    private func put64(_ value: UInt64) {
        withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
    }

    /// Moves the buffered events to the temporary file, opening it first.
    private func spill() throws {
        if file == nil {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent(
                "guestmode-ingest-\(UUID().uuidString).spool")
            guard FileManager.default.createFile(atPath: url.path, contents: nil),
                let handle = FileHandle(forUpdatingAtPath: url.path)
            else {
                throw GuestModeError(
                    .ioError, code: .ioError,
                    "cannot create a temporary file in '\(url.deletingLastPathComponent().path)' to hold the events being ingested; check that the temporary directory (TMPDIR) is writable"
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

    // MARK: - Reading

    /// Decodes the complete records at the start of `bytes`; returns how many
    /// bytes they took (a partial record at the end is left).
    private static func decodeRecords(
        in bytes: UnsafeRawBufferPointer, _ body: (TrackedEvent) throws -> Void
    ) throws -> Int {
        var offset = 0
        while bytes.count - offset >= 4 {
            let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            guard bytes.count - offset - 4 >= length else { break }
            var reader = Reader(bytes: UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<(offset + 4 + length)]))
            let user = try reader.string()
            let action = try reader.string()
            let at = Date(timeIntervalSinceReferenceDate: Double(bitPattern: try reader.uint64()))
            let count = Int(Int64(bitPattern: try reader.uint64()))
            let key: String? = try reader.byte() == 1 ? try reader.string() : nil
            let propertyCount = Int(try reader.uint32())
            var properties: [String: EventProperty] = [:]
            if propertyCount > 0 {
                properties.reserveCapacity(propertyCount)
                for _ in 0..<propertyCount {
                    let name = try reader.string()
                    let isNumber = try reader.byte() == 1
                    let text = try reader.string()
                    properties[name] = isNumber ? .number(text) : .string(text)
                }
            }
            try body(
                TrackedEvent(
                    user: user, action: action, at: at, count: count, idempotencyKey: key, properties: properties))
            offset += 4 + length
        }
        return offset
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        mutating func byte() throws -> UInt8 {
            guard offset < bytes.count else { throw EventSpool.damaged() }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func uint32() throws -> UInt32 {
            guard bytes.count - offset >= 4 else { throw EventSpool.damaged() }
            defer { offset += 4 }
            return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        }

        mutating func uint64() throws -> UInt64 {
            guard bytes.count - offset >= 8 else { throw EventSpool.damaged() }
            defer { offset += 8 }
            return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }

        mutating func string() throws -> String {
            let length = Int(try uint32())
            guard bytes.count - offset >= length else { throw EventSpool.damaged() }
            defer { offset += length }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)]), as: UTF8.self)
        }
    }

    private static func damaged() -> GuestModeError {
        GuestModeError(
            .ioError, code: .ioError,
            "the temporary file holding the events being ingested was changed while in use; run the command again")
    }

    private static func ioError(_ error: any Error) -> GuestModeError {
        GuestModeError(
            .ioError, code: .ioError,
            "cannot use the temporary file holding the events being ingested: \(error.localizedDescription); check the space in the temporary directory (TMPDIR)"
        )
    }
}
