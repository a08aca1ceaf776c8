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
            .appendingPathComponent(".\(url.lastPathComponent).tmp-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            .path
        let descriptor = open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw GuestModeError(
                .cannotCreateOutput,
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
                    .cannotCreateOutput,
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
            guard fsync(directoryDescriptor) == 0 else {
                throw ioError("cannot flush the directory '\(directory)' to disk")
            }
        }
    }

    /// Removes the temporary files `write` left in `directory` when its
    /// process was killed: `.<name>.tmp-<pid>-<n>` where `<name>` ends in
    /// one of `suffixes`, the file is ours, and no process `<pid>` is alive.
    /// Returns the paths removed; problems reading the directory are ignored
    /// (the push reports those itself).
    static func removeStaleTemporaries(in directory: String, suffixes: [String]) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return [] }
        var removed: [String] = []
        for name in names.sorted() where name.hasPrefix(".") {
            guard let marker = name.range(of: ".tmp-", options: .backwards) else { continue }
            let target = name[name.index(after: name.startIndex)..<marker.lowerBound]
            guard suffixes.contains(where: { target.hasSuffix($0) }) else { continue }
            let parts = name[marker.upperBound...].split(separator: "-", omittingEmptySubsequences: false)
            guard parts.count == 2, let pid = pid_t(parts[0]), pid > 0, UInt32(parts[1]) != nil else { continue }
            if pid == getpid() || kill(pid, 0) == 0 || errno != ESRCH { continue }
            let path = URL(fileURLWithPath: directory).appendingPathComponent(name).path
            var status = stat()
            guard lstat(path, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG, status.st_uid == getuid() else {
                continue
            }
            if unlink(path) == 0 { removed.append(path) }
        }
        return removed
    }

    private static func ioError(_ what: String) -> GuestModeError {
        GuestModeError(.ioError, "\(what): \(String(cString: strerror(errno)))")
    }
}
