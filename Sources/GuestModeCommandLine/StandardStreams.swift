import Foundation
import GuestModeKit

/// `-` as a file name: standard input where a file is read, standard output where one is written.
///
/// Archives are read twice (verified, then imported) and written atomically, so `-` goes through a
/// temporary file: created 0600 in $TMPDIR as `guestmode-stream-<pid>-<random><suffix>`, removed when the
/// command ends; one left behind by a killed run is removed by the next (StaleFiles).
package enum StandardStream {
    package static let prefix = "guestmode-stream-"

    package static var directory: URL { FileManager.default.temporaryDirectory }

    /// A new, empty, private temporary file ending in `suffix`.
    package static func temporaryFile(suffix: String) throws -> String {
        StaleFiles.removeAbandoned(in: directory) { StaleFiles.ownerPID(of: $0, prefix: prefix, suffix: "") }
        let path = directory.appendingPathComponent("\(prefix)\(getpid())-\(UUID().uuidString)\(suffix)").path
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            if DiskSpace.isFull(errno) { throw DiskSpace.full(writing: path, what: "a temporary file") }
            throw GuestModeError(
                .cannotCreateOutput,
                "cannot create a temporary file in \(directory.path): \(String(cString: strerror(errno)))")
        }
        close(descriptor)
        return path
    }

    /// Standard input copied to a private temporary file; returns its path.
    package static func spoolStandardInput(suffix: String = "") throws -> String {
        let path = try temporaryFile(suffix: suffix)
        let descriptor = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)
        guard descriptor >= 0 else {
            unlink(path)
            throw GuestModeError(.ioError, "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        do {
            try copy(from: STDIN_FILENO, to: descriptor, what: "standard input", spool: path)
        } catch {
            unlink(path)
            throw error
        }
        return path
    }

    /// Copies a finished file to standard output.
    package static func send(_ path: String) throws {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw GuestModeError(.ioError, "cannot read \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        try copy(from: descriptor, to: STDOUT_FILENO, what: "standard output")
    }

    /// The error for a write to `what` (standard output) that failed with `code`: a full disk is
    /// `disk_full`, anything else `io_error`.
    package static func writeFailure(_ code: Int32, what: String = "standard output") -> GuestModeError {
        if DiskSpace.isFull(code) {
            return GuestModeError(
                .diskFull, "no space left on the disk \(what) is written to; free space there and run the command again"
            )
        }
        return GuestModeError(.ioError, "cannot write \(what): \(String(cString: strerror(code)))")
    }

    /// All of standard input. Foundation's `FileHandle.readDataToEndOfFile()` traps on a read that
    /// fails (standard input a directory, an I/O error); this throws `io_error`.
    package static func readStandardInput() throws -> Data {
        var data = Data()
        while let chunk = try readStandardInput(upTo: 1 << 16) { data.append(chunk) }
        return data
    }

    /// The next bytes of standard input, at most `count`; nil at its end.
    package static func readStandardInput(upTo count: Int) throws -> Data? {
        var chunk = Data(count: count)
        let got = try chunk.withUnsafeMutableBytes {
            try readSome(from: STDIN_FILENO, into: $0, what: "standard input")
        }
        guard got > 0 else { return nil }
        chunk.count = got
        return chunk
    }

    /// One read(2) into `buffer`, again after a signal; 0 at the end. `what` names the source in the error.
    private static func readSome(
        from source: Int32, into buffer: UnsafeMutableRawBufferPointer, what: String
    ) throws
        -> Int
    {
        while true {
            let count = read(source, buffer.baseAddress, buffer.count)
            if count >= 0 { return count }
            if errno != EINTR {
                throw GuestModeError(.ioError, "cannot read \(what): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Writes all of `bytes` to `descriptor`, again after a signal or a partial write: the errno of the
    /// write that failed, nil once everything is written.
    package static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Int32? {
        var offset = 0
        while offset < bytes.count {
            let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written >= 0 {
                offset += written
            } else if errno != EINTR {
                return errno
            }
        }
        return nil
    }

    /// `spool` names the temporary file being written, if that is the destination.
    private static func copy(from source: Int32, to destination: Int32, what: String, spool: String? = nil) throws {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = try buffer.withUnsafeMutableBytes { try readSome(from: source, into: $0, what: what) }
            if count == 0 { return }
            let failure = buffer.withUnsafeBytes {
                writeAll(UnsafeRawBufferPointer(rebasing: $0[..<count]), to: destination)
            }
            guard let failure else { continue }
            if let spool, DiskSpace.isFull(failure) {
                throw DiskSpace.full(writing: spool, what: "the copy of \(what)")
            }
            throw writeFailure(failure, what: what)
        }
    }
}

/// An archive named on the command line: a path, or `-` for standard input spooled to a temporary file
/// that `close()` removes.
package struct ArchiveSource {
    package let path: String
    package let isStandardInput: Bool

    package init(_ name: String) throws {
        if name == "-" {
            path = try StandardStream.spoolStandardInput()
            isStandardInput = true
        } else {
            path = name
            isStandardInput = false
        }
    }

    package func close() { if isStandardInput { unlink(path) } }

    /// `body`, with its failures naming `-` instead of the spool file: the
    /// user gave `-`, and a temporary path that is already gone helps nobody.
    package func naming<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch var failure as GuestModeError where isStandardInput {
            failure.message = relabel(failure.message)
            throw failure
        }
    }

    /// `text` with the spool file named as `-`.
    package func relabel(_ text: String) -> String {
        isStandardInput ? text.replacingOccurrences(of: "'\(path)'", with: "'-'") : text
    }
}
