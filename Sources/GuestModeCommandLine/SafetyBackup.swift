import Foundation
import GuestModeArchive
import GuestModeKit

/// The backup taken before anything is moved between users.
package enum SafetyBackup {
    package static func take(
        engine: GuestMode, users: [String], directory: String?, label: String, global: GlobalOptions, now: Date
    ) throws -> String {
        // The key first: a command that cannot sign leaves no folder behind either.
        let signingKey = try global.backupKeyCreatingIfMissing()
        let folder = folder(directory: directory, global: global)
        do {
            try FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw GuestModeError(
                .cannotCreateBackup,
                "cannot create the backup directory '\(folder.path)': \(error.localizedDescription)")
        }
        removeAbandoned(directory: directory, global: global)
        let stamp = Timestamp.format(now).replacingOccurrences(of: ":", with: "")
        let path = folder.appendingPathComponent("\(label)-\(stamp)-\(users[0].prefix(8)).gmbackup").path
        _ = try engine.exportBackup(
            .users(users), to: path, format: .tarZstd, now: now, toolVersion: GuestModeVersion.current,
            signingKey: signingKey)
        return path
    }

    /// `--backup-directory`, else `guestmode-backups/` beside a SQLite store,
    /// else (a PostgreSQL store has no folder of its own, and its URI is no
    /// path) `$XDG_STATE_HOME/guestmode/backups`, by default
    /// `~/.local/state/guestmode/backups`.
    package static func folder(directory: String?, global: GlobalOptions) -> URL {
        if let directory { return URL(fileURLWithPath: directory) }
        if case let .sqlite(path)? = try? global.storeLocation {
            return URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent("guestmode-backups")
        }
        let environment = ProcessInfo.processInfo.environment
        let state =
            environment["XDG_STATE_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? ((environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()) + "/.local/state")
        return URL(fileURLWithPath: state).appendingPathComponent("guestmode/backups")
    }

    /// A run killed while writing its backup left `.<name>.gmbackup.tmp-<pid>-<n>`
    /// behind; the files of processes that no longer exist are removed.
    package static func removeAbandoned(directory: String?, global: GlobalOptions) {
        StaleFiles.removeAbandoned(in: folder(directory: directory, global: global)) {
            StaleFiles.atomicTemporaryOwner(of: $0, fileSuffix: ".gmbackup")
        }
    }
}
