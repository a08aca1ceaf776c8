import Foundation

/// A full disk, said as such: exit 74 (`disk_full`) naming the folder that is
/// full, and TMPDIR when it is the temporary folder that ran out, not the
/// store or the output everyone would look at first.
package enum DiskSpace {
    /// errno values that mean the disk, or the user's quota on it, is full.
    package static func isFull(_ code: Int32) -> Bool { code == ENOSPC || code == EDQUOT }

    /// The folder `path` is in.
    package static func folder(of path: String) -> String {
        URL(fileURLWithPath: path).deletingLastPathComponent().standardizedFileURL.path
    }

    /// Where SQLite's unix VFS keeps temporary files (large sorts, temporary
    /// indexes), found as SQLite looks: SQLITE_TMPDIR, TMPDIR, then fixed folders.
    package static var sqliteTemporaryFolder: (variable: String?, path: String) {
        let environment = ProcessInfo.processInfo.environment
        for variable in ["SQLITE_TMPDIR", "TMPDIR"] {
            if let path = environment[variable], !path.isEmpty, isWritableFolder(path) { return (variable, path) }
        }
        for path in ["/var/tmp", "/usr/tmp", "/tmp"] where isWritableFolder(path) { return (nil, path) }
        return (nil, ".")
    }

    /// The error for a write to `path` that found no space.
    package static func full(writing path: String, what: String? = nil) -> GuestModeError {
        let folder = folder(of: path)
        let subject = what.map { "\($0) '\(path)'" } ?? "'\(path)'"
        if let variable = temporaryVariable(naming: folder) {
            return GuestModeError(
                .diskFull,
                "no space left in the temporary folder '\(folder)' (\(variable)) while writing \(subject); free space there or point \(variable) at a folder with room"
            )
        }
        return GuestModeError(
            .diskFull,
            "no space left on the disk holding '\(folder)' while writing \(subject); free space there and run the command again"
        )
    }

    /// The error for SQLITE_FULL on the store at `storePath`: the store's own
    /// disk, unless SQLite's temporary folder is on another disk with less
    /// room, which is then the one that filled up.
    package static func fullUsingStore(_ storePath: String) -> GuestModeError {
        let storeFolder = folder(of: storePath)
        let temporary = sqliteTemporaryFolder
        if let storeDevice = device(of: storeFolder), let temporaryDevice = device(of: temporary.path),
            storeDevice != temporaryDevice,
            (available(in: temporary.path) ?? .max) < (available(in: storeFolder) ?? .max)
        {
            let named = temporary.variable.map { " (\($0))" } ?? ""
            let remedy =
                temporary.variable.map { "free space there or point \($0) at a folder with room" }
                ?? "free space there or set TMPDIR to a folder with room"
            return GuestModeError(
                .diskFull,
                "no space left in the temporary folder '\(temporary.path)'\(named), where SQLite keeps the temporary files of large queries on the store '\(storePath)'; \(remedy)"
            )
        }
        return GuestModeError(
            .diskFull,
            "no space left on the disk holding the store '\(storePath)' (in '\(storeFolder)'); free space there and run the command again"
        )
    }

    /// Whether the store's disk or SQLite's temporary folder is all but full:
    /// SQLite reports some writes that found no space (growing its shared-memory
    /// file) as a plain I/O error, which on a disk with no room left is that.
    package static func looksFull(usingStore storePath: String) -> Bool {
        let nearlyNothing: UInt64 = 1 << 20
        return [folder(of: storePath), sqliteTemporaryFolder.path].contains { folder in
            (available(in: folder) ?? .max) < nearlyNothing
        }
    }

    /// The environment variable that named `folder` as the temporary folder, if one did.
    private static func temporaryVariable(naming folder: String) -> String? {
        let environment = ProcessInfo.processInfo.environment
        let resolved = resolve(folder)
        for variable in ["TMPDIR", "SQLITE_TMPDIR"] {
            if let path = environment[variable], !path.isEmpty, resolve(path) == resolved { return variable }
        }
        return nil
    }

    private static func resolve(_ path: String) -> String {
        URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
    }

    private static func isWritableFolder(_ path: String) -> Bool {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) && isDirectory.boolValue
            && access(path, W_OK | X_OK) == 0
    }

    private static func device(of path: String) -> UInt64? {
        var status = stat()
        return stat(path, &status) == 0 ? UInt64(status.st_dev) : nil
    }

    private static func available(in path: String) -> UInt64? {
        var status = statvfs()
        return statvfs(path, &status) == 0 ? UInt64(status.f_bavail) * UInt64(status.f_frsize) : nil
    }
}
