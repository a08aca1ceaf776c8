import CArchive
import Foundation
import GuestModeKit

// Every libarchive, zlib and zstd call in the engine lives in this file. The rest of the
// engine sees entries as names and bytes, and failures as `GuestModeError`. libarchive is
// opened on first use and called through its table (`la`, see `LibArchive`): a direct call
// does not link.

/// The container formats a backup can be written in.
public enum ArchiveFormat: String, CaseIterable, Codable, Sendable {
    case tarZstd = "tar.zst"
    case tarGzip = "tar.gz"
    case zip

    /// The file name extension written for this format.
    public var fileExtension: String {
        switch self {
        case .tarZstd: "gmbackup"
        case .tarGzip: "tar.gz"
        case .zip: "zip"
        }
    }

    /// Compression levels the codec accepts.
    public var levels: ClosedRange<Int> {
        switch self {
        case .tarZstd: 1...19
        case .tarGzip: 1...9
        case .zip: 0...9
        }
    }

    /// The format a file name promises, or nil when its extension promises none.
    public static func named(by path: String) -> ArchiveFormat? {
        let name = (path as NSString).lastPathComponent.lowercased()
        if name.hasSuffix(".gmbackup") || name.hasSuffix(".tar.zst") || name.hasSuffix(".tzst") { return .tarZstd }
        if name.hasSuffix(".tar.gz") || name.hasSuffix(".tgz") { return .tarGzip }
        if name.hasSuffix(".zip") { return .zip }
        return nil
    }

    var description: String {
        switch self {
        case .tarZstd: "a zstd-compressed tar archive"
        case .tarGzip: "a gzip-compressed tar archive"
        case .zip: "a zip archive"
        }
    }

    /// Recognises a format from the file's first bytes.
    static func sniffed(from prefix: [UInt8]) -> ArchiveFormat? {
        if prefix.starts(with: [0x28, 0xB5, 0x2F, 0xFD]) { return .tarZstd }
        if prefix.starts(with: [0x1F, 0x8B]) { return .tarGzip }
        if prefix.starts(with: [0x50, 0x4B, 0x03, 0x04]) || prefix.starts(with: [0x50, 0x4B, 0x05, 0x06]) {
            return .zip
        }
        return nil
    }
}

/// Bounds on what reading an archive may expand to. They are counted while
/// streaming; sizes declared in entry headers are never trusted to stay small.
public struct ArchiveLimits: Sendable, Equatable {
    /// The most entries an archive may hold.
    public var maximumEntries: Int
    /// The largest size of one entry, uncompressed, in bytes.
    public var maximumEntrySize: Int64
    /// The largest size of all entries together, uncompressed, in bytes.
    public var maximumTotalSize: Int64
    /// Expanded bytes per compressed byte read, checked once the expanded
    /// total passes `ratioFloor` so small archives with padding never trip it.
    public var maximumRatio: Int64
    /// Expanded bytes up to which `maximumRatio` is not checked.
    public var ratioFloor: Int64

    /// Limits of your own; each defaults to the standard one.
    public init(
        maximumEntries: Int = 100_000, maximumEntrySize: Int64 = 256 << 20,
        maximumTotalSize: Int64 = 16 << 30, maximumRatio: Int64 = 500, ratioFloor: Int64 = 16 << 20
    ) {
        self.maximumEntries = maximumEntries
        self.maximumEntrySize = maximumEntrySize
        self.maximumTotalSize = maximumTotalSize
        self.maximumRatio = maximumRatio
        self.ratioFloor = ratioFloor
    }

    /// The limits every import uses unless told otherwise.
    public static let standard = ArchiveLimits()
}

/// Writes regular-file entries into an archive on an open file descriptor.
final class ArchiveWriter {
    private let la: guestmode_libarchive
    private let handle: OpaquePointer
    private let path: String

    private init(la: guestmode_libarchive, handle: OpaquePointer, path: String) {
        self.la = la
        self.handle = handle
        self.path = path
    }

    /// Runs `body` with a writer on `descriptor`, then finishes the archive.
    /// The descriptor stays open for the caller to fsync and close.
    static func write(
        to descriptor: Int32, path: String, format: ArchiveFormat, level: Int?, encryption: BackupEncryption? = nil,
        _ body: (ArchiveWriter) throws -> Void
    ) throws {
        let la = try LibArchive.table()
        guard let handle = la.archive_write_new() else {
            throw GuestModeError(.archiveError, "libarchive could not allocate a writer")
        }
        var freed = false
        defer { if !freed { _ = la.archive_write_free(handle) } }
        let writer = ArchiveWriter(la: la, handle: handle, path: path)
        var compressor: ZstdCompressor?
        switch format {
        case .tarZstd:
            // libarchive's zstd filter writes frames without a content checksum: a flipped byte in
            // signature.json or in tar metadata would decompress silently. Compressed here instead, with one.
            try writer.check(la.archive_write_set_format_pax_restricted(handle), "choosing the tar format")
            compressor = try ZstdCompressor(level: level, path: path)
        case .tarGzip:
            try writer.check(la.archive_write_set_format_pax_restricted(handle), "choosing the tar format")
            try writer.check(la.archive_write_add_filter_gzip(handle), "enabling gzip")
            if let level {
                try writer.check(
                    la.archive_write_set_filter_option(handle, "gzip", "compression-level", "\(level)"),
                    "setting the gzip level")
            }
        case .zip:
            try writer.check(la.archive_write_set_format_zip(handle), "choosing the zip format")
            if let level {
                try writer.check(
                    la.archive_write_set_format_option(handle, "zip", "compression-level", "\(level)"),
                    "setting the zip level")
            }
        }
        // Without this the last block is padded to 10 KiB, which only wastes space in a compressed file.
        _ = la.archive_write_set_bytes_in_last_block(handle, 1)
        if encryption == nil && compressor == nil {
            try writer.check(la.archive_write_open_fd(handle, descriptor), "opening the output")
            try body(writer)
            try writer.check(la.archive_write_close(handle), "finishing the archive")
            return
        }
        // Otherwise libarchive hands its output to a callback: compressed, then sealed chunk by chunk.
        let encrypting = try encryption.map { encryption in
            try EncryptedArchive.Writer(encryption) { bytes in
                try bytes.withUnsafeBytes { try writeAll($0, to: descriptor, path: path) }
            }
        }
        let store: (UnsafeRawBufferPointer) throws -> Void = { bytes in
            if let encrypting { try encrypting.write(bytes) } else { try writeAll(bytes, to: descriptor, path: path) }
        }
        let sink = OutputSink { bytes in
            if let compressor { try compressor.compress(bytes, ending: false, into: store) } else { try store(bytes) }
        }
        let context = Unmanaged.passRetained(sink)
        defer {
            // Freeing an archive `body` left unfinished (it threw) closes it first, which hands libarchive's
            // last bytes to the callback: the sink must still be alive then, so it is released only after.
            _ = la.archive_write_free(handle)
            freed = true
            context.release()
        }
        let callback: @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafeRawPointer?, Int) -> Int = {
            _, context, buffer, length in
            guard let context else { return -1 }
            let sink = Unmanaged<OutputSink>.fromOpaque(context).takeUnretainedValue()
            do {
                try sink.write(UnsafeRawBufferPointer(start: buffer, count: length))
                return length
            } catch {
                sink.failure = error
                return -1
            }
        }
        let opened = la.archive_write_open(handle, context.toOpaque(), nil, callback, nil)
        if let failure = sink.failure { throw failure }
        try writer.check(opened, "opening the output")
        try body(writer)
        let closed = la.archive_write_close(handle)
        if let failure = sink.failure { throw failure }
        try writer.check(closed, "finishing the archive")
        try compressor?.compress(UnsafeRawBufferPointer(start: nil, count: 0), ending: true, into: store)
        try encrypting?.finish()
    }

    /// Where libarchive's output goes when it is not a plain descriptor; a
    /// failure is kept because the C callback can only say -1.
    private final class OutputSink {
        let write: (UnsafeRawBufferPointer) throws -> Void
        var failure: Error?
        init(_ write: @escaping (UnsafeRawBufferPointer) throws -> Void) { self.write = write }
    }

    /// One zstd frame with a content checksum (XXH64 of everything written),
    /// which libarchive's reader checks at the end of the frame.
    private final class ZstdCompressor {
        private let context: OpaquePointer
        private var output: [UInt8]
        private let path: String

        init(level: Int?, path: String) throws {
            guard let context = ZSTD_createCCtx() else {
                throw GuestModeError(.archiveError, "zstd could not allocate a compressor")
            }
            self.context = context
            self.path = path
            output = [UInt8](repeating: 0, count: ZSTD_CStreamOutSize())
            try check(ZSTD_CCtx_setParameter(context, ZSTD_c_checksumFlag, 1), "asking for a checksum")
            if let level {
                try check(ZSTD_CCtx_setParameter(context, ZSTD_c_compressionLevel, Int32(level)), "setting the level")
            }
        }

        deinit { ZSTD_freeCCtx(context) }

        func compress(
            _ input: UnsafeRawBufferPointer, ending: Bool, into store: (UnsafeRawBufferPointer) throws -> Void
        ) throws {
            var source = ZSTD_inBuffer(src: input.baseAddress, size: input.count, pos: 0)
            let capacity = output.count
            try output.withUnsafeMutableBytes { buffer in
                while true {
                    var destination = ZSTD_outBuffer(dst: buffer.baseAddress, size: capacity, pos: 0)
                    let remaining = ZSTD_compressStream2(
                        context, &destination, &source, ending ? ZSTD_e_end : ZSTD_e_continue)
                    try check(remaining, "compressing")
                    if destination.pos > 0 {
                        try store(UnsafeRawBufferPointer(rebasing: buffer[..<destination.pos]))
                    }
                    let done = ending ? remaining == 0 : source.pos == source.size && destination.pos < capacity
                    if done { return }
                }
            }
        }

        private func check(_ result: Int, _ step: String) throws {
            guard ZSTD_isError(result) != 0 else { return }
            throw GuestModeError(
                .archiveWriteFailed,
                "cannot write '\(path)' (\(step) with zstd): \(String(cString: ZSTD_getErrorName(result)))")
        }
    }

    private static func writeAll(_ buffer: UnsafeRawBufferPointer, to descriptor: Int32, path: String) throws {
        var offset = 0
        while offset < buffer.count {
            let written = Foundation.write(descriptor, buffer.baseAddress.map { $0 + offset }, buffer.count - offset)
            guard written > 0 else {
                if DiskSpace.isFull(errno) { throw DiskSpace.full(writing: path, what: "the archive") }
                throw GuestModeError(
                    .archiveWriteFailed, "cannot write '\(path)': \(String(cString: strerror(errno)))")
            }
            offset += written
        }
    }

    func addEntry(name: String, contents: UnsafeRawBufferPointer, modified: Date) throws {
        try addEntry(name: name, size: Int64(contents.count), modified: modified) { write in try write(contents) }
    }

    /// Adds an entry of `size` bytes that `body` writes in pieces, through
    /// the function it is given, so the contents are never held together.
    /// The pieces must add up to `size` exactly (a tar entry's size comes
    /// before its contents).
    func addEntry(
        name: String, size: Int64, modified: Date,
        _ body: (_ write: (UnsafeRawBufferPointer) throws -> Void) throws -> Void
    ) throws {
        guard let entry = la.archive_entry_new() else {
            throw GuestModeError(.archiveError, "libarchive could not allocate an entry")
        }
        defer { la.archive_entry_free(entry) }
        la.archive_entry_set_pathname(entry, name)
        la.archive_entry_set_filetype(entry, FileType.regular)
        la.archive_entry_set_perm(entry, 0o600)
        la.archive_entry_set_size(entry, la_int64_t(size))
        la.archive_entry_set_mtime(entry, time_t(modified.timeIntervalSince1970.rounded(.down)), 0)
        try check(la.archive_write_header(handle, entry), "writing the header of \(name)")
        var total: Int64 = 0
        try body { contents in
            guard total + Int64(contents.count) <= size else {
                throw GuestModeError(
                    .archiveError,
                    "\(name) grew past the \(size) bytes announced for it while it was written")
            }
            var offset = 0
            while offset < contents.count {
                let written = la.archive_write_data(handle, contents.baseAddress! + offset, contents.count - offset)
                if written <= 0 { try check(Int32(ARCHIVE_FATAL), "writing \(name)") }
                offset += written
            }
            total += Int64(contents.count)
        }
        guard total == size else {
            throw GuestModeError(
                .archiveError,
                "\(name) came to \(total) bytes, not the \(size) announced for it")
        }
    }

    private func check(_ status: Int32, _ step: String) throws {
        guard status < ARCHIVE_OK else { return }
        if DiskSpace.isFull(la.archive_errno(handle)) { throw DiskSpace.full(writing: path, what: "the archive") }
        throw GuestModeError(
            .archiveWriteFailed, "cannot write '\(path)' (\(step)): \(lastError(la, handle))")
    }
}

/// Reads an archive entry by entry, refusing anything that is not a regular
/// file with a relative, normalised, unique name, and enforcing `limits`.
final class ArchiveReader {
    private let la: guestmode_libarchive
    private let handle: OpaquePointer
    private let path: String
    private let limits: ArchiveLimits
    private var names: Set<String> = []
    private var expandedTotal: Int64 = 0
    private var currentName = ""
    private var buffer = [UInt8](repeating: 0, count: 64 << 10)
    /// True when the file was an encrypted archive, decrypted on the way in.
    private(set) var encrypted = false
    /// The decompressed tar stream, for .tar.gz and .tar.zst (kept alive here
    /// while libarchive reads from it).
    private var source: TarSource?

    private init(la: guestmode_libarchive, handle: OpaquePointer, path: String, limits: ArchiveLimits) {
        self.la = la
        self.handle = handle
        self.path = path
        self.limits = limits
    }

    /// Opens `path` as the format its name promises (or, for other names, the
    /// format its first bytes show) and runs `body` with a reader.
    static func read<T>(
        path: String, limits: ArchiveLimits, keys: BackupKeys = .none, _ body: (ArchiveReader) throws -> T
    ) throws -> T {
        let (format, decrypted) = try expectedFormat(of: path, keys: keys)
        defer { if let decrypted { close(decrypted) } }
        let la = try LibArchive.table()
        guard let handle = la.archive_read_new() else {
            throw GuestModeError(.archiveError, "libarchive could not allocate a reader")
        }
        defer { _ = la.archive_read_free(handle) }
        let reader = ArchiveReader(la: la, handle: handle, path: path, limits: limits)
        reader.encrypted = decrypted != nil
        let opened: Int32
        switch format {
        case .tarZstd, .tarGzip:
            // No filter is registered: libarchive sees plain tar, decompressed by TarSource.
            _ = la.archive_read_support_format_tar(handle)
            let source = try TarSource(path: path, descriptor: decrypted, format: format, limits: limits)
            reader.source = source
            let callback:
                @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<UnsafeRawPointer?>?)
                    -> la_ssize_t = { _, context, buffer in
                        guard let context else { return la_ssize_t(ARCHIVE_FATAL) }
                        let source = Unmanaged<TarSource>.fromOpaque(context).takeUnretainedValue()
                        do {
                            guard let chunk = try source.next() else { return 0 }
                            buffer?.pointee = chunk.baseAddress
                            return la_ssize_t(chunk.count)
                        } catch {
                            // The source keeps the failure; the reader reports it instead of libarchive's words.
                            return la_ssize_t(ARCHIVE_FATAL)
                        }
                    }
            opened = la.archive_read_open(handle, Unmanaged.passUnretained(source).toOpaque(), nil, callback, nil)
        case .zip:
            _ = la.archive_read_support_format_zip(handle)
            if try !zipEndsAtDirectory(path: path, descriptor: decrypted) {
                throw reader.refused("has data after the end of the zip archive")
            }
            if let problem = try ZipLayout.problem(path: path, descriptor: decrypted, limits: limits) {
                throw reader.refused(problem)
            }
            opened =
                decrypted.map { la.archive_read_open_fd(handle, $0, 64 << 10) }
                ?? la.archive_read_open_filename(handle, path, 64 << 10)
        }
        if opened != ARCHIVE_OK {
            if let failure = reader.source?.failure { throw failure }
            throw reader.damaged("cannot be opened as \(format.description)")
        }
        return try body(reader)
    }

    /// A zip archive written by guestmode ends with its end-of-central-directory
    /// record and no comment; anything else after it is refused.
    private static func zipEndsAtDirectory(path: String, descriptor: Int32?) throws -> Bool {
        let file: Int32 = descriptor ?? open(path, O_RDONLY | O_CLOEXEC)
        guard file >= 0 else {
            throw GuestModeError(.archiveUnreadable, "cannot open the archive '\(path)' for reading")
        }
        defer { if descriptor == nil { close(file) } }
        var status = stat()
        guard fstat(file, &status) == 0, status.st_size >= 22 else { return false }
        var tail = [UInt8](repeating: 0, count: 22)
        let count = tail.withUnsafeMutableBytes { pread(file, $0.baseAddress, 22, off_t(status.st_size - 22)) }
        guard count == 22, tail.starts(with: [0x50, 0x4B, 0x05, 0x06]), tail[20] == 0, tail[21] == 0 else {
            return false
        }
        // The central directory must end where this record starts (zip64 archives say 0xFFFFFFFF and are not checked).
        func word(_ offset: Int) -> Int64 {
            tail[offset..<offset + 4].reversed().reduce(Int64(0)) { $0 << 8 | Int64($1) }
        }
        let directorySize = word(12)
        let directoryOffset = word(16)
        if directoryOffset == 0xFFFF_FFFF || directorySize == 0xFFFF_FFFF { return true }
        return directoryOffset + directorySize == Int64(status.st_size) - 22
    }

    /// Checks the file's first bytes against the format its name promises, so
    /// a renamed file is reported as what it is rather than as garbage.
    private static func expectedFormat(of path: String, keys: BackupKeys) throws -> (ArchiveFormat, Int32?) {
        var status = stat()
        guard stat(path, &status) == 0 else {
            let reason = String(cString: strerror(errno))
            throw GuestModeError(.archiveNotFound, "cannot read the archive '\(path)': \(reason)")
        }
        guard (status.st_mode & S_IFMT) == S_IFREG else {
            throw GuestModeError(
                .notAnArchive, "'\(path)' is not a regular file, so it is not a guestmode backup")
        }
        guard status.st_size > 0 else {
            throw GuestModeError(.notAnArchive, "'\(path)' is empty, so it is not a guestmode backup")
        }
        guard let file = FileHandle(forReadingAtPath: path) else {
            throw GuestModeError(.archiveUnreadable, "cannot open the archive '\(path)' for reading")
        }
        defer { try? file.close() }
        var prefix = [UInt8]((try? file.read(upToCount: 8)) ?? Data())
        var decrypted: Int32?
        if EncryptedArchive.isEncrypted(prefix) {
            let descriptor = try EncryptedArchive.decryptToTemporary(path: path, keys: keys)
            decrypted = descriptor
            prefix = [UInt8](repeating: 0, count: 4)
            let count = prefix.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, 4, 0) }
            prefix = Array(prefix.prefix(max(count, 0)))
        }
        do {
            return (try format(path: path, prefix: prefix, encrypted: decrypted != nil), decrypted)
        } catch {
            if let decrypted { close(decrypted) }
            throw error
        }
    }

    private static func format(path: String, prefix: [UInt8], encrypted: Bool) throws -> ArchiveFormat {
        let named = ArchiveFormat.named(by: path)
        guard let sniffed = ArchiveFormat.sniffed(from: prefix) else {
            let expected = named.map { "; a .\($0.rawValue) file should be \($0.description)" } ?? ""
            throw GuestModeError(
                .notAnArchive,
                "'\(path)' is not a guestmode backup: its \(encrypted ? "decrypted " : "")content is not zstd, gzip or zip data\(expected)"
            )
        }
        if let named, named != sniffed {
            throw GuestModeError(
                .archiveFormatMismatch,
                "'\(path)' is named like \(named.description) but contains \(sniffed.description); rename it to end in .\(sniffed.fileExtension) if it is a guestmode backup"
            )
        }
        return sniffed
    }

    /// The next entry's name, once its header passed the type, name and
    /// limit checks, or nil at the end of the archive.
    /// The size the current entry's header declares, when it declares one
    /// (a MAC over an entry streamed in needs its length first); the bytes
    /// read may still differ.
    private(set) var declaredSize: Int64?

    func nextEntry() throws -> String? {
        var entry: OpaquePointer?
        let status = la.archive_read_next_header(handle, &entry)
        if let failure = source?.failure { throw failure }
        if status == ARCHIVE_EOF {
            // Past the end-of-archive marker only zeros, and past the compressed stream nothing, may follow.
            try source?.drain()
            return nil
        }
        guard status >= ARCHIVE_WARN, let entry else { throw damaged("has a damaged entry header") }
        guard let rawName = la.archive_entry_pathname(entry) else { throw refused("has an entry without a name") }
        let name = String(cString: rawName)
        currentName = name
        if la.archive_entry_hardlink(entry) != nil { throw refused("has a hard link '\(name)'") }
        let type = la.archive_entry_filetype(entry)
        guard type == FileType.regular else {
            throw refused("has \(FileType.describe(type)) '\(name)'; only regular files are allowed")
        }
        if let problem = Self.nameProblem(name) { throw refused("has an entry named '\(name)', which \(problem)") }
        guard names.insert(name).inserted else { throw refused("has two entries named '\(name)'") }
        guard names.count <= limits.maximumEntries else {
            throw refused("has more than \(limits.maximumEntries) entries")
        }
        declaredSize = la.archive_entry_size_is_set(entry) != 0 ? la.archive_entry_size(entry) : nil
        // A declared size past the limit is refused early; a smaller one is not believed (see readData).
        if la.archive_entry_size_is_set(entry) != 0, la.archive_entry_size(entry) > limits.maximumEntrySize {
            throw refused(
                "has an entry '\(name)' of \(la.archive_entry_size(entry)) bytes, more than the limit of \(limits.maximumEntrySize)"
            )
        }
        return name
    }

    /// Streams the current entry's bytes to `consume`, counting them against
    /// the limits as they arrive. Returns the entry's size.
    @discardableResult
    func readData(_ consume: (UnsafeRawBufferPointer) throws -> Void) throws -> Int64 {
        var size: Int64 = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { la.archive_read_data(handle, $0.baseAddress, $0.count) }
            if let failure = source?.failure { throw failure }
            if count == 0 { return size }
            guard count > 0 else { throw damaged("is damaged or truncated in '\(currentName)'") }
            size += Int64(count)
            expandedTotal += Int64(count)
            if size > limits.maximumEntrySize {
                throw refused(
                    "has an entry '\(currentName)' that expands past the limit of \(limits.maximumEntrySize) bytes")
            }
            if expandedTotal > limits.maximumTotalSize {
                throw refused("expands past the total limit of \(limits.maximumTotalSize) bytes")
            }
            if expandedTotal > limits.ratioFloor {
                let compressed = max(source?.compressedBytes ?? Int64(la.archive_filter_bytes(handle, -1)), 1)
                if expandedTotal / compressed > limits.maximumRatio {
                    throw refused(
                        "expands \(expandedTotal / compressed) times its compressed size, more than the limit of \(limits.maximumRatio) (a decompression bomb?)"
                    )
                }
            }
            try buffer.withUnsafeBytes { try consume(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        }
    }

    /// The current entry's bytes, for the small JSON entries.
    func readAll() throws -> [UInt8] {
        var bytes: [UInt8] = []
        try readData { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// Why a name is not a plain relative path, or nil when it is one.
    static func nameProblem(_ name: String) -> String? {
        if name.isEmpty { return "is empty" }
        if name.hasPrefix("/") { return "is an absolute path" }
        if name.utf8.count > 255 { return "is longer than 255 bytes" }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/".utf8)
        if !name.utf8.allSatisfy(allowed.contains) {
            return "has characters outside A-Z, a-z, 0-9, '.', '_', '-' and '/'"
        }
        for component in name.split(separator: "/", omittingEmptySubsequences: false) {
            if component == ".." { return "climbs out of the archive with '..'" }
            if component.isEmpty || component == "." { return "is not normalised" }
        }
        return nil
    }

    fileprivate func refused(_ problem: String) -> GuestModeError {
        Self.refusal(path: path, problem)
    }

    static func refusal(path: String, _ problem: String) -> GuestModeError {
        GuestModeError(
            .hostileArchive, "refusing the archive '\(path)': it \(problem); nothing was changed")
    }

    private func damaged(_ problem: String) -> GuestModeError {
        GuestModeError(
            .damagedArchive,
            "the archive '\(path)' \(problem): \(lastError(la, handle)); it may be truncated or not a guestmode backup")
    }
}

/// POSIX file type bits as libarchive reports them (its AE_IF* macros do not
/// import into Swift).
private enum FileType {
    static let regular: UInt32 = 0o100000

    static func describe(_ type: UInt32) -> String {
        switch type {
        case 0o120000: "a symbolic link"
        case 0o040000: "a directory"
        case 0o020000: "a character device"
        case 0o060000: "a block device"
        case 0o010000: "a FIFO"
        case 0o140000: "a socket"
        default: "an entry of unknown type"
        }
    }
}

private func lastError(_ la: guestmode_libarchive, _ handle: OpaquePointer) -> String {
    la.archive_error_string(handle).map { String(cString: $0) } ?? "unknown libarchive error"
}

/// The tar stream inside a .tar.gz or .tar.zst archive, decompressed under
/// guestmode's control rather than by libarchive's filter bidding, which
/// stacks a filter for every compressed layer it recognises and, in
/// libarchive 3.6.2, can spend unbounded memory and time on a gzip nested in
/// a gzip before the first entry. Here there is exactly one compression
/// layer, chosen by the magic bytes: gzip is inflated with zlib (which skips
/// over header fields of any length in constant memory), zstd by a
/// libarchive reader that knows only zstd and raw data. Every compressed
/// byte must belong to that one stream (`ZstdFrames`, or nothing after the
/// gzip trailer), and every decompressed byte to a tar entry (`TarLayout`);
/// the tar reader then sees plain tar and no filters at all.
final class TarSource {
    private let la: guestmode_libarchive
    private let descriptor: Int32
    private let ownsDescriptor: Bool
    private let path: String
    private let format: ArchiveFormat
    private let limits: ArchiveLimits
    private let input = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
    private let output = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
    private var readOffset: Int64 = 0
    private var inputEnded = false
    private var ended = false
    private var layout = TarLayout()
    private var frames = ZstdFrames()
    private var inflater: UnsafeMutablePointer<z_stream>?
    private var decoder: OpaquePointer?
    /// Compressed bytes read from the file.
    private(set) var compressedBytes: Int64 = 0
    /// Decompressed bytes handed on.
    private(set) var expandedBytes: Int64 = 0
    /// The first problem found, for the reader to report instead of libarchive's words.
    private(set) var failure: Error?

    init(path: String, descriptor: Int32?, format: ArchiveFormat, limits: ArchiveLimits) throws {
        do {
            la = try LibArchive.table()
        } catch {
            input.deallocate()
            output.deallocate()
            throw error
        }
        self.path = path
        self.format = format
        self.limits = limits
        if let descriptor {
            self.descriptor = descriptor
            ownsDescriptor = false
        } else {
            let opened = open(path, O_RDONLY | O_CLOEXEC)
            guard opened >= 0 else {
                input.deallocate()
                output.deallocate()
                throw GuestModeError(
                    .archiveUnreadable, "cannot open the archive '\(path)' for reading")
            }
            self.descriptor = opened
            ownsDescriptor = true
        }
        switch format {
        case .tarGzip:
            let stream = UnsafeMutablePointer<z_stream>.allocate(capacity: 1)
            stream.initialize(to: z_stream())
            inflater = stream
            // 15 + 16: a gzip wrapper only (no raw deflate, no zlib wrapper), the largest window.
            guard inflateInit2_(stream, 15 + 16, zlibVersion(), Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
                throw GuestModeError(.archiveError, "zlib could not allocate an inflater")
            }
        case .tarZstd:
            try openDecoder()
        case .zip:
            throw GuestModeError(.archiveError, "a zip archive has no tar stream")
        }
    }

    deinit {
        if let inflater {
            inflateEnd(inflater)
            inflater.deinitialize(count: 1)
            inflater.deallocate()
        }
        if let decoder { _ = la.archive_read_free(decoder) }
        if ownsDescriptor { close(descriptor) }
        input.deallocate()
        output.deallocate()
    }

    /// The next decompressed bytes, already checked by `TarLayout`, or nil at
    /// the end of a stream that ended cleanly. Valid until the next call.
    func next() throws -> UnsafeRawBufferPointer? {
        if let failure { throw failure }
        do {
            guard !ended else { return nil }
            let count = format == .tarGzip ? try inflateNext() : try decodeNext()
            guard count > 0 else {
                ended = true
                try layout.finish()
                return nil
            }
            let chunk = UnsafeRawBufferPointer(rebasing: output[0..<count])
            expandedBytes += Int64(count)
            if expandedBytes > limits.ratioFloor, expandedBytes / max(compressedBytes, 1) > limits.maximumRatio {
                throw LayoutProblem.refused(
                    "expands \(expandedBytes / max(compressedBytes, 1)) times its compressed size, more than the limit of \(limits.maximumRatio) (a decompression bomb?)"
                )
            }
            try layout.feed(chunk)
            return chunk
        } catch {
            let reported = describe(error)
            failure = reported
            throw reported
        }
    }

    /// Reads the rest of the stream once the tar reader has seen its end, so
    /// the bytes after the end-of-archive marker and after the compressed
    /// stream are checked too.
    func drain() throws {
        while try next() != nil {}
    }

    private func describe(_ error: Error) -> Error {
        switch error {
        case LayoutProblem.refused(let problem):
            ArchiveReader.refusal(path: path, problem)
        case LayoutProblem.damaged(let problem):
            GuestModeError(
                .damagedArchive, "the archive '\(path)' \(problem); it is damaged or not a guestmode backup")
        default: error
        }
    }

    /// Reads the next compressed bytes into `input`; 0 at the end of the file.
    private func readCompressed() throws -> Int {
        let count = pread(descriptor, input.baseAddress, input.count, off_t(readOffset))
        guard count >= 0 else {
            throw GuestModeError(
                .archiveUnreadable,
                "cannot read the archive '\(path)': \(String(cString: strerror(errno)))")
        }
        readOffset += Int64(count)
        compressedBytes += Int64(count)
        return count
    }

    private func bytesAfterReadOffset() -> Int64 {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return 0 }
        return max(Int64(status.st_size) - readOffset, 0)
    }

    private func inflateNext() throws -> Int {
        guard let stream = inflater else { return 0 }
        while true {
            if stream.pointee.avail_in == 0, !inputEnded {
                let count = try readCompressed()
                if count == 0 {
                    inputEnded = true
                } else {
                    stream.pointee.next_in = input.baseAddress?.assumingMemoryBound(to: Bytef.self)
                    stream.pointee.avail_in = uInt(count)
                }
            }
            stream.pointee.next_out = output.baseAddress?.assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = uInt(output.count)
            let status = inflate(stream, Z_NO_FLUSH)
            let produced = output.count - Int(stream.pointee.avail_out)
            switch status {
            case Z_STREAM_END:
                let trailing = Int64(stream.pointee.avail_in) + bytesAfterReadOffset()
                if trailing > 0 {
                    throw LayoutProblem.refused(
                        "has \(trailing) bytes after the end of its gzip stream; a guestmode backup holds nothing but its listed entries"
                    )
                }
                inputEnded = true
                if produced > 0 { return produced }
                return 0
            case Z_OK:
                if produced > 0 { return produced }
            case Z_BUF_ERROR where !inputEnded:
                continue
            case Z_BUF_ERROR:
                throw LayoutProblem.damaged("ends in the middle of its gzip stream (it is truncated)")
            default:
                let reason = stream.pointee.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                throw LayoutProblem.damaged("is not valid gzip data (\(reason))")
            }
        }
    }

    /// A libarchive reader that knows only zstd and raw data, fed through
    /// `ZstdFrames`: it yields the decompressed bytes of exactly one layer.
    private func openDecoder() throws {
        guard let handle = la.archive_read_new() else {
            throw GuestModeError(.archiveError, "libarchive could not allocate a reader")
        }
        decoder = handle
        _ = la.archive_read_support_filter_zstd(handle)
        _ = la.archive_read_support_format_raw(handle)
        let callback:
            @convention(c) (OpaquePointer?, UnsafeMutableRawPointer?, UnsafeMutablePointer<UnsafeRawPointer?>?)
                -> la_ssize_t = { _, context, buffer in
                    guard let context else { return -1 }
                    let source = Unmanaged<TarSource>.fromOpaque(context).takeUnretainedValue()
                    do {
                        let count = try source.readCompressed()
                        if count == 0 {
                            try source.frames.finish()
                        } else {
                            try source.frames.feed(UnsafeRawBufferPointer(rebasing: source.input[0..<count]))
                        }
                        buffer?.pointee = UnsafeRawPointer(source.input.baseAddress)
                        return la_ssize_t(count)
                    } catch {
                        source.failure = source.describe(error)
                        return la_ssize_t(ARCHIVE_FATAL)
                    }
                }
        let opened = la.archive_read_open(handle, Unmanaged.passUnretained(self).toOpaque(), nil, callback, nil)
        if let failure { throw failure }
        var entry: OpaquePointer?
        guard opened == ARCHIVE_OK, la.archive_read_next_header(handle, &entry) == ARCHIVE_OK else {
            if let failure { throw failure }
            throw describe(LayoutProblem.damaged("is not valid zstd data (\(lastError(la, handle)))"))
        }
        // The raw reader plus one zstd filter: any more is zstd inside zstd.
        guard la.archive_filter_count(handle) == 2 else {
            throw describe(
                LayoutProblem.refused(
                    "is compressed \(la.archive_filter_count(handle) - 1) times over; a guestmode backup is one tar archive compressed once"
                ))
        }
    }

    private func decodeNext() throws -> Int {
        guard let decoder else { return 0 }
        let count = la.archive_read_data(decoder, output.baseAddress, output.count)
        if let failure { throw failure }
        guard count >= 0 else { throw LayoutProblem.damaged("is not valid zstd data (\(lastError(la, decoder)))") }
        if count == 0 {
            // Whatever the decoder left unread is checked as frames too.
            while case let read = try readCompressed(), read > 0 {
                try frames.feed(UnsafeRawBufferPointer(rebasing: input[0..<read]))
            }
            try frames.finish()
        }
        return count
    }
}

/// libarchive's functions, from the library opened the first time an archive is read or written
/// (`CArchive/shim.h`): every other command starts without loading it and what it brings.
private enum LibArchive {
    private static let opened: Result<guestmode_libarchive, GuestModeError> = {
        var reason: UnsafePointer<CChar>?
        guard let table = guestmode_libarchive_open(&reason) else {
            return .failure(
                GuestModeError(
                    .cannotOpenStore,
                    "cannot load libarchive, which reading and writing backup archives needs (\(reason.map { String(cString: $0) } ?? "no reason given")); install it (Debian: libarchive13)"
                ))
        }
        return .success(table.pointee)
    }()

    /// The table, or why libarchive could not be opened.
    static func table() throws -> guestmode_libarchive { try opened.get() }
}
