import Foundation

/// Records kept between two passes of one command, in memory up to
/// `memoryLimit` bytes, then in an unlinked temporary file (nothing is left
/// behind by a killed run), so any number of them takes constant memory.
/// Each record is a 4-byte length, then what its writer put; a file changed
/// while in use is reported, never decoded into something else.
///
/// A spool made `sorted` gives its records back ordered by their first
/// field, a string (byte order, as SQLite's and PostgreSQL's "C" collation
/// compare ids), records with the same first field in the order they were
/// appended: an external merge sort, whose runs of `runLimit` bytes are
/// sorted in memory and merged from the file, so the order costs constant
/// memory too. Records appended already in order (mostly) make one run
/// however many times they spill, and the merge has little to do.
final class RecordSpool {
    private let buffer = SpoolBytes()
    private var file: FileHandle?
    private let memoryLimit: Int
    private let isSorted: Bool
    /// Bytes a sorted spool gathers in memory before it sorts them into a run of the file.
    private let runLimit: Int
    /// The sorted runs in the file, as byte ranges.
    private(set) var runs: [Range<UInt64>] = []
    /// The first field of the last record of the last run: records spilled
    /// in order (an export's rows come in id order) continue that run, so
    /// there is nothing to merge them with. Nil once runs were merged into others.
    private var lastRunKey: [UInt8]?
    private var fileLength: UInt64 = 0
    /// Where the temporary file was made, named by a full disk's message.
    private var filePath: String?
    /// What the records are, for messages ("the events being ingested").
    private let contents: String
    /// The temporary file's name starts with `guestmode-<fileTag>-`.
    private let fileTag: String
    private(set) var count = 0
    /// Set while `forEach` reads the records.
    private var isReading = false

    init(holding contents: String, fileTag: String, memoryLimit: Int, sorted: Bool = false, runLimit: Int = 8 << 20) {
        self.contents = contents
        self.fileTag = fileTag
        self.memoryLimit = memoryLimit
        self.isSorted = sorted
        self.runLimit = sorted ? max(runLimit, memoryLimit) : memoryLimit
    }

    deinit { try? file?.close() }

    /// Appends one record: `write` puts its fields.
    func append(_ write: (inout Writer) -> Void) throws {
        // The reading pass holds the block's pointer: a record appended meanwhile could move the block under it.
        precondition(!isReading, "a record appended to \(contents) while they are read")
        if buffer.capacity < runLimit {
            // Reserved once, with room for the last record, so it never doubles past the limit.
            buffer.reserve(runLimit + (64 << 10))
        }
        var writer = Writer(block: Unmanaged.passUnretained(buffer))
        let start = buffer.count
        writer.put32(0)
        write(&writer)
        writer.setLength(at: start)
        count += 1
        if buffer.count >= runLimit { try spill() }
    }

    /// Calls `body` with a reader of each record, in the order they were
    /// appended (a sorted spool: in the order of their first field).
    func forEach(_ body: (inout Reader) throws -> Void) throws {
        isReading = true
        defer { isReading = false }
        // A sorted spool keeps at most `memoryLimit` bytes for the reading pass.
        if isSorted && file == nil {
            guard buffer.count > memoryLimit else {
                let bytes = buffer.bytes
                for start in Self.sortedRecords(bytes) { try deliver(bytes, at: start, body) }
                return
            }
            try spill()
        }
        guard let file else {
            let consumed = try decode(buffer.bytes, body)
            guard consumed == buffer.count else { throw Self.damaged(contents) }
            return
        }
        try spill()
        // Read back in chunks: the memory the buffer held is not needed again.
        buffer.release()
        if isSorted { return try merge(file, body) }
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

    /// Calls `body` with the record that starts at `start` of `bytes`.
    private func deliver(
        _ bytes: UnsafeRawBufferPointer, at start: Int, _ body: (inout Reader) throws -> Void
    ) throws {
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self)))
        var reader = Reader(
            bytes: UnsafeRawBufferPointer(rebasing: bytes[(start + 4)..<(start + 4 + length)]), contents: contents)
        try body(&reader)
    }

    /// The starts of the complete records in `bytes`, ordered by their first
    /// field, then by where they start (the order they were appended).
    private static func sortedRecords(_ bytes: UnsafeRawBufferPointer) -> [Int] {
        var starts: [Int] = []
        var offset = 0
        while bytes.count - offset >= 4 {
            let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            guard bytes.count - offset - 4 >= length else { break }
            starts.append(offset)
            offset += 4 + length
        }
        starts.sort { left, right in
            let order = compareKeys(bytes, left, bytes, right)
            return order != 0 ? order < 0 : left < right
        }
        return starts
    }

    /// Compares the first fields of the records at `left` and `right`: below,
    /// at or above 0 as memcmp does, a shorter prefix first. A record too
    /// short to hold its first field sorts as an empty one (and is reported
    /// damaged when it is read).
    private static func compareKeys(
        _ leftBytes: UnsafeRawBufferPointer, _ left: Int, _ rightBytes: UnsafeRawBufferPointer, _ right: Int
    ) -> Int {
        compare(key: key(leftBytes, left), withKeyOf: rightBytes, at: right)
    }

    /// The first field of the record at `start`.
    private static func key(_ bytes: UnsafeRawBufferPointer, _ start: Int) -> UnsafeRawBufferPointer {
        let record = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self)))
        guard record >= 4 else { return UnsafeRawBufferPointer(rebasing: bytes[start..<start]) }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: start + 4, as: UInt32.self)))
        guard length <= record - 4 else { return UnsafeRawBufferPointer(rebasing: bytes[start..<start]) }
        return UnsafeRawBufferPointer(rebasing: bytes[(start + 8)..<(start + 8 + length)])
    }

    /// Compares `leftKey` with the first field of the record at `right`, as `compareKeys` does.
    private static func compare(
        key leftKey: UnsafeRawBufferPointer, withKeyOf rightBytes: UnsafeRawBufferPointer, at right: Int
    ) -> Int {
        let rightKey = key(rightBytes, right)
        let common = min(leftKey.count, rightKey.count)
        if common > 0 {
            let order = memcmp(leftKey.baseAddress!, rightKey.baseAddress!, common)
            if order != 0 { return Int(order) }
        }
        return leftKey.count - rightKey.count
    }

    /// At most this many runs are merged at once: each is read in chunks of
    /// at least 16 KiB, so more would take more than the merge's budget of
    /// about 1 MiB. A spool with more runs (a log of tens of millions of
    /// events, a purge of millions of guests) first merges them in groups
    /// into longer runs at the end of the file, as often as needed, so
    /// memory stays the same at any size.
    static let maximumMergeWidth = 64

    /// Merges the sorted runs of the file: each run is read in chunks that
    /// together take about `mergeBudget` bytes, whatever the number of runs;
    /// records with the same first field come from the earlier run first.
    private func merge(_ file: FileHandle, _ body: (inout Reader) throws -> Void) throws {
        while runs.count > Self.maximumMergeWidth {
            var longer: [Range<UInt64>] = []
            for first in stride(from: 0, to: runs.count, by: Self.maximumMergeWidth) {
                let group = Array(runs[first..<min(first + Self.maximumMergeWidth, runs.count)])
                let start = fileLength
                var staged: [UInt8] = []
                staged.reserveCapacity(256 << 10)
                func writeStaged() throws {
                    do {
                        try file.seek(toOffset: fileLength)
                        try file.write(contentsOf: staged)
                    } catch {
                        throw ioError(error)
                    }
                    fileLength += UInt64(staged.count)
                    staged.removeAll(keepingCapacity: true)
                }
                try merge(group, of: file) { bytes, start in
                    let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self)))
                    staged.append(contentsOf: bytes[start..<(start + 4 + length)])
                    if staged.count >= 256 << 10 { try writeStaged() }
                }
                try writeStaged()
                longer.append(start..<fileLength)
            }
            runs = longer
            lastRunKey = nil
        }
        try merge(runs, of: file) { bytes, start in try deliver(bytes, at: start, body) }
    }

    /// Merges `runs` of the file, handing `emit` each record (its 4-byte
    /// length and its fields) at `start` of the bytes given, in order.
    private func merge(
        _ runs: [Range<UInt64>], of file: FileHandle,
        _ emit: (_ bytes: UnsafeRawBufferPointer, _ start: Int) throws -> Void
    ) throws {
        let mergeBudget = 1 << 20
        let chunk = max(16 << 10, mergeBudget / max(runs.count, 1))
        var cursors: [RunCursor] = []
        for (index, run) in runs.enumerated() {
            let cursor = RunCursor(run: index, range: run)
            if try cursor.load(from: file, chunk: chunk, spool: self) { cursors.append(cursor) }
        }
        // A binary heap of the runs, smallest next record on top. Unmanaged: `cursors` holds them, and a counted
        // reference was a retain and a release, each an atomic instruction, at every comparison.
        var heap = cursors.map { Unmanaged.passUnretained($0) }
        func isBefore(_ left: Unmanaged<RunCursor>, _ right: Unmanaged<RunCursor>) -> Bool {
            left._withUnsafeGuaranteedRef { left in
                right._withUnsafeGuaranteedRef { right in
                    let order = Self.compareKeys(left.bytes, left.start, right.bytes, right.start)
                    return order != 0 ? order < 0 : left.run < right.run
                }
            }
        }
        func siftDown(_ index: Int) {
            var parent = index
            while true {
                let first = 2 * parent + 1
                guard first < heap.count else { return }
                var child = first
                if first + 1 < heap.count && isBefore(heap[first + 1], heap[first]) { child = first + 1 }
                guard isBefore(heap[child], heap[parent]) else { return }
                heap.swapAt(child, parent)
                parent = child
            }
        }
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(index) }
        while let top = heap.first {
            let more = try top._withUnsafeGuaranteedRef { top in
                try emit(top.bytes, top.start)
                top.advance()
                return try top.load(from: file, chunk: chunk, spool: self)
            }
            if !more {
                heap.swapAt(0, heap.count - 1)
                heap.removeLast()
            }
            siftDown(0)
        }
        withExtendedLifetime(cursors) {}
    }

    /// The reading position in one sorted run: its current record starts at
    /// `start` of `bytes`, which holds the run's next bytes, in memory of the
    /// cursor's own so that reading them counts no reference.
    private final class RunCursor {
        let run: Int
        private var position: UInt64
        private let end: UInt64
        private var base: UnsafeMutableRawPointer?
        private var capacity = 0
        private var count = 0
        private(set) var start = 0

        init(run: Int, range: Range<UInt64>) {
            self.run = run
            position = range.lowerBound
            end = range.upperBound
        }

        deinit { base?.deallocate() }

        /// The run's bytes read and not yet passed over; valid until the next `load`.
        var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

        /// Moves past the current record.
        func advance() {
            start += 4 + Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self)))
        }

        /// Makes the current record whole in `bytes`, reading on when needed;
        /// false when the run has no more records.
        func load(from file: FileHandle, chunk: Int, spool: RecordSpool) throws -> Bool {
            while true {
                let available = count - start
                if available >= 4 {
                    let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self)))
                    if available - 4 >= length { return true }
                }
                guard position < end else {
                    guard available == 0 else { throw RecordSpool.damaged(spool.contents) }
                    return false
                }
                let wanted = Int(min(UInt64(chunk), end - position))
                let data: Data
                do {
                    try file.seek(toOffset: position)
                    data = try file.read(upToCount: wanted) ?? Data()
                } catch {
                    throw spool.ioError(error)
                }
                guard !data.isEmpty else { throw RecordSpool.damaged(spool.contents) }
                keep(available, adding: data)
                position += UInt64(data.count)
            }
        }

        /// Moves the `available` bytes not passed over to the start, then appends `data`.
        private func keep(_ available: Int, adding data: Data) {
            if available + data.count > capacity {
                let grown = UnsafeMutableRawPointer.allocate(
                    byteCount: max(available + data.count, capacity * 2), alignment: 8)
                if let base {
                    grown.copyMemory(from: base + start, byteCount: available)
                    base.deallocate()
                }
                base = grown
                capacity = max(available + data.count, capacity * 2)
            } else if available > 0, start > 0 {
                base!.copyMemory(from: base! + start, byteCount: available)
            }
            start = 0
            count = available
            data.withUnsafeBytes { base!.advanced(by: count).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            count += data.count
        }
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
                    .ioError,
                    "cannot create a temporary file in '\(url.deletingLastPathComponent().path)' to hold \(contents); check that the temporary directory (TMPDIR) is writable"
                )
            }
            // Unlinked at once: the open handle keeps it until the process ends.
            try? FileManager.default.removeItem(at: url)
            file = handle
            filePath = url.path
        }
        guard let file, buffer.count > 0 else { return }
        do {
            try file.seek(toOffset: fileLength)
            if isSorted {
                // One sorted run, written through a small buffer.
                let bytes = buffer.bytes
                let order = Self.sortedRecords(bytes)
                var continuesRun = false
                if let lastRunKey, runs.last?.upperBound == fileLength, let first = order.first {
                    continuesRun = lastRunKey.withUnsafeBytes {
                        Self.compare(key: $0, withKeyOf: bytes, at: first) <= 0
                    }
                }
                if let last = order.last { lastRunKey = Array(Self.key(bytes, last)) }
                var staged: [UInt8] = []
                staged.reserveCapacity(256 << 10)
                var written = 0
                for start in order {
                    let length = Int(
                        UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self)))
                    staged.append(contentsOf: bytes[start..<(start + 4 + length)])
                    written += 4 + length
                    if staged.count >= 256 << 10 {
                        try file.write(contentsOf: staged)
                        staged.removeAll(keepingCapacity: true)
                    }
                }
                try file.write(contentsOf: staged)
                guard written == buffer.count else { throw Self.damaged(contents) }
                if continuesRun, let last = runs.popLast() {
                    runs.append(last.lowerBound..<(fileLength + UInt64(written)))
                } else {
                    runs.append(fileLength..<(fileLength + UInt64(written)))
                }
            } else {
                try file.write(contentsOf: buffer.bytes)
            }
            fileLength += UInt64(buffer.count)
        } catch let error as GuestModeError {
            throw error
        } catch {
            throw ioError(error)
        }
        buffer.removeAll()
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

    static func damaged(_ contents: String) -> GuestModeError {
        GuestModeError(
            .ioError,
            "the temporary file holding \(contents) was changed while in use; run the command again")
    }

    private func ioError(_ error: any Error) -> GuestModeError {
        Self.temporaryFileError(error, path: filePath, holding: contents)
    }

    /// What a temporary file holding `contents` (at `path`, unlinked since)
    /// that could not be used is answered with: a full disk as every full
    /// disk is (`disk_full`, exit 74, naming the folder and TMPDIR), anything
    /// else as an I/O error.
    static func temporaryFileError(_ error: any Error, path: String?, holding contents: String) -> GuestModeError {
        if let path, isOutOfSpace(error) {
            return DiskSpace.full(writing: path, what: "the temporary file holding \(contents)")
        }
        return GuestModeError(
            .ioError,
            "cannot use the temporary file holding \(contents): \(error.localizedDescription); check the space in the temporary directory (TMPDIR)"
        )
    }

    /// Whether Foundation's file calls failed for want of space (they throw
    /// `fileWriteOutOfSpace` for ENOSPC, with the errno beneath it).
    private static func isOutOfSpace(_ error: any Error) -> Bool {
        if let cocoa = error as? CocoaError, cocoa.code == .fileWriteOutOfSpace { return true }
        let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError ?? (error as NSError)
        return underlying.domain == NSPOSIXErrorDomain && DiskSpace.isFull(Int32(truncatingIfNeeded: underlying.code))
    }

    /// Puts the fields of one record.
    struct Writer {
        /// Not counted: `append` holds the spool, and the spool the block, while the writer exists. A counted
        /// reference cost a retain and a release, each an atomic instruction, for every field a record puts.
        fileprivate let block: Unmanaged<SpoolBytes>

        private func append(_ source: UnsafeRawBufferPointer) { block._withUnsafeGuaranteedRef { $0.append(source) } }

        private func append<Value: FixedWidthInteger>(_ value: Value) {
            block._withUnsafeGuaranteedRef { $0.append(value) }
        }

        mutating func byte(_ value: UInt8) { append(value) }

        /// Writes the length of the record that starts at `start` over its 4-byte placeholder.
        fileprivate mutating func setLength(at start: Int) {
            block._withUnsafeGuaranteedRef {
                $0.store(UInt32(truncatingIfNeeded: $0.count - start - 4).littleEndian, at: start)
            }
        }

        mutating func put32(_ value: UInt32) { append(value.littleEndian) }

        mutating func put64(_ value: UInt64) { append(value.littleEndian) }

        /// A 4-byte length, then the UTF-8.
        mutating func put(_ text: String) {
            text.withUTF8Bytes { utf8 in
                put32(UInt32(truncatingIfNeeded: utf8.count))
                append(UnsafeRawBufferPointer(utf8))
            }
        }

        /// One field that reads back as `"\(tag)\0\(first)"`, or with `"\0\(second)"`
        /// after it, written without making that string.
        mutating func put(_ tag: StaticString, _ first: String, _ second: String? = nil) {
            first.withUTF8Bytes { first in
                let secondLength = second.map { $0.utf8.count + 1 } ?? 0
                put32(UInt32(truncatingIfNeeded: tag.utf8CodeUnitCount + 1 + first.count + secondLength))
                append(UnsafeRawBufferPointer(start: tag.utf8Start, count: tag.utf8CodeUnitCount))
                append(UInt8(0))
                append(UnsafeRawBufferPointer(first))
            }
            if let second {
                second.withUTF8Bytes { second in
                    append(UInt8(0))
                    append(UnsafeRawBufferPointer(second))
                }
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

        /// A field `put` wrote, as its bytes, valid only while the record is being read.
        mutating func field() throws -> UnsafeRawBufferPointer {
            let length = Int(try uint32())
            guard bytes.count - offset >= length else { throw RecordSpool.damaged(contents) }
            defer { offset += length }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)])
        }
    }
}

/// A spool's records in memory: one block, grown by doubling and written
/// through its pointer. Appended to an `[UInt8]`, each field of a record was
/// a generic `append(contentsOf:)` of about 100 instructions, a dozen a fact
/// of an import (bench/results.md).
private final class SpoolBytes {
    private var base: UnsafeMutableRawPointer?
    private(set) var count = 0
    private(set) var capacity = 0

    deinit { base?.deallocate() }

    /// The bytes appended so far; valid until the next append.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }

    /// Makes room for `total` bytes in all.
    func reserve(_ total: Int) {
        guard total > capacity else { return }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: total, alignment: 8)
        if let base {
            grown.copyMemory(from: base, byteCount: count)
            base.deallocate()
        }
        base = grown
        capacity = total
    }

    func append(_ source: UnsafeRawBufferPointer) {
        guard let start = source.baseAddress, !source.isEmpty else { return }
        if count + source.count > capacity { reserve(max(capacity * 2, count + source.count)) }
        base!.advanced(by: count).copyMemory(from: start, byteCount: source.count)
        count += source.count
    }

    /// The bytes of `value` as it lies in memory.
    func append<Value: FixedWidthInteger>(_ value: Value) {
        if count + MemoryLayout<Value>.size > capacity { reserve(max(capacity * 2, count + 64)) }
        base!.storeBytes(of: value, toByteOffset: count, as: Value.self)
        count += MemoryLayout<Value>.size
    }

    /// The bytes of `value` over those at `offset`, which must be appended already.
    func store<Value: FixedWidthInteger>(_ value: Value, at offset: Int) {
        precondition(offset + MemoryLayout<Value>.size <= count)
        base!.storeBytes(of: value, toByteOffset: offset, as: Value.self)
    }

    /// Forgets the bytes, keeping the block for the next ones.
    func removeAll() { count = 0 }

    /// Forgets the bytes and gives the block back.
    func release() {
        base?.deallocate()
        base = nil
        count = 0
        capacity = 0
    }
}
