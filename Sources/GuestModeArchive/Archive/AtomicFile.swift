import Foundation
import GuestModeKit

/// Writes a file so that readers see either the old file or the complete
/// new one: a private temporary file in the same directory, fsynced, then
/// renamed over the destination and the directory fsynced.
enum AtomicFile {
    static func write(path: String, _ body: (Int32) throws -> Void) throws {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        let temporary = url.deletingLastPathComponent()
            .appendingPathComponent(".\(url.lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))").path
        let descriptor = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw GuestModeError(
                .cannotCreate, code: .cannotCreateOutput,
                "cannot create '\(path)': \(String(cString: strerror(errno))) (in the directory '\(directory)')")
        }
        var isOpen = true
        do {
            try body(descriptor)
            guard fsync(descriptor) == 0 else { throw ioError("cannot flush '\(path)' to disk") }
            isOpen = false
            guard close(descriptor) == 0 else { throw ioError("cannot close '\(path)'") }
            guard rename(temporary, path) == 0 else {
                throw GuestModeError(
                    .cannotCreate, code: .cannotCreateOutput,
                    "cannot move the finished archive into place at '\(path)': \(String(cString: strerror(errno)))")
            }
        } catch {
            if isOpen { close(descriptor) }
            unlink(temporary)
            throw error
        }
        // The rename is only durable once the directory entry is on disk.
        let directoryDescriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryDescriptor >= 0 {
            defer { close(directoryDescriptor) }
            guard fsync(directoryDescriptor) == 0 else { throw ioError("cannot flush the directory '\(directory)' to disk") }
        }
    }

    private static func ioError(_ what: String) -> GuestModeError {
        GuestModeError(.ioError, code: .ioError, "\(what): \(String(cString: strerror(errno)))")
    }
}
