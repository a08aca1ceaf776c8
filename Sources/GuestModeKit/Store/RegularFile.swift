import Foundation

/// Reads the small files a command is pointed at for a secret (a backup key,
/// a passphrase). Such a file must be a regular file: a FIFO would block the
/// command forever, `/dev/zero` never ends, `/dev/null` is not a key, and a
/// directory is not a file; each gets a message that says which it is.
package enum RegularFile {
    /// The file's bytes, or nil when there is no such file. `what` names it in
    /// messages ("the backup key file"); more than `limit` bytes is refused.
    package static func read(_ path: String, what: String, limit: Int = 1 << 16) throws -> Data? {
        // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one.
        let descriptor = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else {
            if errno == ENOENT { return nil }
            throw GuestModeError(
                .ioError, "cannot read \(what) '\(path)': \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            throw GuestModeError(
                .ioError, "cannot read \(what) '\(path)': \(String(cString: strerror(errno)))")
        }
        let kind = status.st_mode & S_IFMT
        guard kind == S_IFREG else {
            let noun =
                switch kind {
                case S_IFDIR: "a directory"
                case S_IFIFO: "a FIFO (named pipe)"
                case S_IFCHR: "a character device"
                case S_IFBLK: "a block device"
                case S_IFSOCK: "a socket"
                default: "not a regular file"
                }
            throw GuestModeError(
                .notAFile, "\(what) '\(path)' is \(noun), not a regular file; give the file itself")
        }
        guard Int(status.st_size) <= limit else {
            throw GuestModeError(
                .fileTooLarge,
                "\(what) '\(path)' is \(status.st_size) bytes; a \(what.replacingOccurrences(of: "the ", with: "")) is at most \(limit)"
            )
        }
        var data = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Foundation.read(descriptor, &buffer, buffer.count)
            if count < 0 {
                if errno == EINTR { continue }
                throw GuestModeError(
                    .ioError, "cannot read \(what) '\(path)': \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            data.append(contentsOf: buffer[..<count])
            if data.count > limit {
                throw GuestModeError(
                    .fileTooLarge, "\(what) '\(path)' grew past \(limit) bytes while being read")
            }
        }
        return data
    }
}

extension FileHandle {
    /// The next mebibyte (or less) of the file; empty at its end. A read
    /// that fails is `io_error` naming `file` ("the export 'users.json'").
    func nextChunk(of file: String) throws -> Data {
        do {
            return try read(upToCount: 1 << 20) ?? Data()
        } catch {
            throw GuestModeError(.ioError, "cannot read \(file): \(error.localizedDescription)")
        }
    }
}
