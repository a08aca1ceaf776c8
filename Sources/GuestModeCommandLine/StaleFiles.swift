import Foundation

/// Temporary files a guestmode process names after itself (its pid), so a
/// later run can remove the ones a killed run left behind: a file whose
/// process no longer exists is abandoned. Files of live processes, of other
/// users, or with names it does not recognise are never touched.
package enum StaleFiles {
    /// Removes the regular files in `directory` that `owner` recognises and
    /// whose owning process is gone. Best effort: a failure leaves the file.
    package static func removeAbandoned(in directory: URL, owner: (String) -> pid_t?) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return }
        let me = getuid()
        for name in names {
            guard let pid = owner(name), pid > 0, pid != getpid(), !isAlive(pid) else { continue }
            let path = directory.appendingPathComponent(name).path
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_uid == me else { continue }
            unlink(path)
        }
    }

    /// The pid in `<prefix><pid>-<anything><suffix>`, if the name has that shape.
    package static func ownerPID(of name: String, prefix: String, suffix: String) -> pid_t? {
        guard name.hasPrefix(prefix), name.hasSuffix(suffix), name.count > prefix.count + suffix.count else {
            return nil
        }
        let middle = name.dropFirst(prefix.count).dropLast(suffix.count)
        guard let dash = middle.firstIndex(of: "-") else { return nil }
        return pid_t(middle[..<dash])
    }

    /// The pid in an atomic file's temporary name, `.<name>.tmp-<pid>-<random>`,
    /// for names ending in `fileSuffix` before `.tmp-`.
    package static func atomicTemporaryOwner(of name: String, fileSuffix: String) -> pid_t? {
        guard name.hasPrefix("."), let range = name.range(of: fileSuffix + ".tmp-", options: .backwards) else {
            return nil
        }
        let rest = name[range.upperBound...]
        let parts = rest.split(separator: "-")
        guard parts.count == 2, UInt32(parts[1]) != nil else { return nil }
        return pid_t(parts[0])
    }

    package static func isAlive(_ pid: pid_t) -> Bool {
        kill(pid, 0) == 0 || errno != ESRCH
    }
}
