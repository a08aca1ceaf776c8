import Foundation

/// Records kept between two passes of one command, in memory up to
/// `memoryLimit` bytes, then in an unlinked temporary file (nothing is left
/// behind by a killed run), so any number of them takes constant memory.
/// Each record is a 4-byte length, then what its writer put; a file changed
/// while in use is reported, never decoded into something else.
final class RecordSpool {
    private var buffer: [UInt8] = []
    private var file: FileHandle?
    private let memoryLimit: Int
    /// What the records are, for messages ("the events being ingested").
    private let contents: String
    /// The temporary file's name starts with `guestmode-<fileTag>-`.
    private let fileTag: String
    private(set) var count = 0

    init(holding contents: String, fileTag: String, memoryLimit: Int) {
        self.contents = contents
        self.fileTag = fileTag
        self.memoryLimit = memoryLimit
    }

    deinit { try? file?.close() }

    /// Appends one record: `write` puts its fields.
    func append(_ write: (inout Writer) -> Void) throws {
        // The buffer is moved into the writer and back, never shared: a second
        // reference would make each append copy the whole buffer.
        var writer = Writer(buffer: [])
        swap(&writer.buffer, &buffer)
        if writer.buffer.capacity < memoryLimit {
            // Reserved once, with room for the last record, so it never doubles past the limit.
            writer.buffer.reserveCapacity(memoryLimit + (64 << 10))
        }
        let start = writer.buffer.count
        writer.put32(0)
        write(&writer)
        writer.setLength(at: start)
        count += 1
        swap(&writer.buffer, &buffer)
        if buffer.count >= memoryLimit { try spill() }
    }

    /// Forgets every record (a transaction run again starts afresh).
    func removeAll() throws {
        buffer.removeAll(keepingCapacity: true)
        count = 0
        do {
            try file?.truncate(atOffset: 0)
        } catch {
            throw ioError(error)
        }
    }

    /// Calls `body` with a reader of each record, in the order they were appended.
    func forEach(_ body: (inout Reader) throws -> Void) throws {
        guard let file else {
            let consumed = try buffer.withUnsafeBytes { try decode($0, body) }
            guard consumed == buffer.count else { throw Self.damaged(contents) }
            return
        }
        try spill()
        // Read back in chunks: the memory the buffer held is not needed again.
        buffer = []
        do {
            try file.seek(toOffset: 0)
        } catch {
            throw ioError(error)
        }
        var pending: [UInt8] = []
        while true {
            let chunk: Data
            do {
                chunk = try file.read(upToCount: 256 << 10) ?? Data()
            } catch {
                throw ioError(error)
            }
            if chunk.isEmpty { break }
            pending.append(contentsOf: chunk)
            let consumed = try pending.withUnsafeBytes { try decode($0, body) }
            pending.removeFirst(consumed)
        }
        guard pending.isEmpty else { throw Self.damaged(contents) }
    }

    /// Moves the buffered records to the end of the temporary file, opening it first.
    private func spill() throws {
        if file == nil {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent(
                "guestmode-\(fileTag)-\(UUID().uuidString).spool")
            guard FileManager.default.createFile(atPath: url.path, contents: nil),
                let handle = FileHandle(forUpdatingAtPath: url.path)
            else {
                throw GuestModeError(
                    .ioError, code: .ioError,
                    "cannot create a temporary file in '\(url.deletingLastPathComponent().path)' to hold \(contents); check that the temporary directory (TMPDIR) is writable"
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
            throw ioError(error)
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Decodes the complete records at the start of `bytes`; returns how many
    /// bytes they took (a partial record at the end is left).
    private func decode(_ bytes: UnsafeRawBufferPointer, _ body: (inout Reader) throws -> Void) throws -> Int {
        var offset = 0
        while bytes.count - offset >= 4 {
            let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            guard bytes.count - offset - 4 >= length else { break }
            var reader = Reader(
                bytes: UnsafeRawBufferPointer(rebasing: bytes[(offset + 4)..<(offset + 4 + length)]),
                contents: contents)
            try body(&reader)
            offset += 4 + length
        }
        return offset
    }

    fileprivate static func damaged(_ contents: String) -> GuestModeError {
        GuestModeError(
            .ioError, code: .ioError,
            "the temporary file holding \(contents) was changed while in use; run the command again")
    }

    private func ioError(_ error: any Error) -> GuestModeError {
        GuestModeError(
            .ioError, code: .ioError,
            "cannot use the temporary file holding \(contents): \(error.localizedDescription); check the space in the temporary directory (TMPDIR)"
        )
    }

    /// Puts the fields of one record.
    struct Writer {
        fileprivate var buffer: [UInt8]

        mutating func byte(_ value: UInt8) { buffer.append(value) }

        /// Writes the length of the record that starts at `start` over its 4-byte placeholder.
        fileprivate mutating func setLength(at start: Int) {
            let length = UInt32(truncatingIfNeeded: buffer.count - start - 4)
            withUnsafeBytes(of: length.littleEndian) { bytes in
                for index in 0..<4 { buffer[start + index] = bytes[index] }
            }
        }

        mutating func put32(_ value: UInt32) {
            withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
        }

        mutating func put64(_ value: UInt64) {
            withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
        }

        /// A 4-byte length, then the UTF-8.
        mutating func put(_ text: String) {
            var text = text
            text.withUTF8 { utf8 in
                put32(UInt32(truncatingIfNeeded: utf8.count))
                buffer.append(contentsOf: utf8)
            }
        }
    }

    /// Reads the fields of one record, in the order they were put.
    struct Reader {
        let bytes: UnsafeRawBufferPointer
        /// Named only when a record turns out damaged.
        let contents: String
        var offset = 0

        mutating func byte() throws -> UInt8 {
            guard offset < bytes.count else { throw RecordSpool.damaged(contents) }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func uint32() throws -> UInt32 {
            guard bytes.count - offset >= 4 else { throw RecordSpool.damaged(contents) }
            defer { offset += 4 }
            return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
        }

        mutating func uint64() throws -> UInt64 {
            guard bytes.count - offset >= 8 else { throw RecordSpool.damaged(contents) }
            defer { offset += 8 }
            return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
        }

        mutating func string() throws -> String {
            let length = Int(try uint32())
            guard bytes.count - offset >= length else { throw RecordSpool.damaged(contents) }
            defer { offset += length }
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)]), as: UTF8.self)
        }
    }
}
