import Foundation
import GuestModeKit

/// What a push of the backup queue did.
public struct BackupPushReport: Codable, Sendable {
    /// A user whose archive was written to the destination.
    public struct Pushed: Codable, Sendable {
        /// The user's id.
        public var user: String
        /// The path or URL of the archive written.
        public var archive: String
        /// True when the user changed again while the archive was written, so they stay queued.
        public var isRequeued: Bool
    }

    /// A user whose push failed; they stay queued.
    public struct Failed: Codable, Sendable {
        /// The user's id.
        public var user: String
        /// Why the push failed.
        public var error: String
        /// Failed attempts so far, this one included.
        public var attempts: Int
        /// When the next attempt is due.
        public var nextAttemptAt: Date
    }

    /// The directory or URL archives are written to.
    public var destination: String
    /// Users pushed.
    public var pushed: [Pushed] = []
    /// Users whose push failed.
    public var failed: [Failed] = []
    /// Entries whose next attempt is still in the future.
    public var waiting: [OutboxEntry] = []
    /// Entries that failed --max-attempts times and are no longer tried automatically.
    public var held: [OutboxEntry] = []
    /// Users deleted since they were queued: nothing left to back up.
    public var dropped: [String] = []
    /// Temporary files an interrupted push (killed) left in the destination, now removed.
    public var removedStale: [String] = []

    /// True when something queued was not delivered and needs another push.
    public var needsRetry: Bool { !failed.isEmpty || !held.isEmpty }
}

/// Where a push puts each queued user's archive: a local directory
/// (`GuestMode.pushBackups(to:…)`) or a server (GuestModeRemote).
package protocol BackupDestination {
    /// How reports and messages name the destination.
    var name: String { get }

    /// Removes the temporary files an interrupted push left; returns them.
    func removeStaleTemporaries(suffixes: [String]) -> [String]

    /// Puts the archive `export` writes (at the local path it is given) at
    /// `fileName` for `userID`, so a reader of the destination sees the
    /// previous archive or this one whole, never part of one. Returns where
    /// it is. A destination that cannot take it now throws a failure of kind
    /// `cannotCreate`, `ioError` or `tryAgainLater`: the entry stays queued.
    func store(_ fileName: String, of userID: String, export: (_ path: String) throws -> Void) throws -> String
}

/// A directory on this machine; `exportBackup` replaces a file atomically.
struct DirectoryDestination: BackupDestination {
    let directory: String

    var name: String { directory }

    func removeStaleTemporaries(suffixes: [String]) -> [String] {
        AtomicFile.removeStaleTemporaries(in: directory, suffixes: suffixes)
    }

    func store(_ fileName: String, of userID: String, export: (String) throws -> Void) throws -> String {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw GuestModeError(
                .destinationUnavailable,
                "the backup destination '\(directory)' is not a reachable directory")
        }
        let archive = URL(fileURLWithPath: directory).appendingPathComponent(fileName).path
        try export(archive)
        return archive
    }
}

extension GuestMode {
    /// Writes one archive per due outbox entry into `directory` (replacing
    /// the user's previous one atomically) and removes the entry only after
    /// its archive is on disk. A destination that cannot be written keeps the
    /// entry with its attempt count and next retry time.
    public func pushBackups(
        to directory: String, maxAttempts: Int, retryNow: Bool, now: Date, toolVersion: String,
        signingKey: BackupKey? = nil, encryption: BackupEncryption? = nil,
        progress: (_ done: Int, _ total: Int) -> Void = { _, _ in }
    ) throws -> BackupPushReport {
        try pushBackups(
            to: DirectoryDestination(directory: directory), maxAttempts: maxAttempts, retryNow: retryNow, now: now,
            toolVersion: toolVersion, signingKey: signingKey, encryption: encryption, progress: progress)
    }

    /// Puts one archive per due outbox entry at `destination`, named after
    /// its user, and removes the entry only once the destination holds it.
    /// A destination that cannot take it keeps the entry with its attempt
    /// count and next retry time; any other failure stops the push.
    package func pushBackups(
        to destination: some BackupDestination, maxAttempts: Int, retryNow: Bool, now: Date, toolVersion: String,
        signingKey: BackupKey?, encryption: BackupEncryption?, progress: (_ done: Int, _ total: Int) -> Void
    ) throws -> BackupPushReport {
        guard maxAttempts >= 1 else {
            throw GuestModeError(
                .invalidAttempts, "the maximum number of attempts must be at least 1, not \(maxAttempts)")
        }
        let retry = OutboxRetryPolicy(maxAttempts: maxAttempts)
        let format = ArchiveFormat(rawValue: profile.backup.format) ?? .tarZstd
        var report = BackupPushReport(destination: destination.name)
        report.removedStale = destination.removeStaleTemporaries(
            suffixes: ArchiveFormat.allCases.map { ".\($0.fileExtension)" })
        let queue = try backupQueue()
        for (index, entry) in queue.enumerated() {
            defer { progress(index + 1, queue.count) }
            switch retry.decision(for: entry, now: now, retryingNow: retryNow) {
            case .held:
                report.held.append(entry)
                continue
            case .waiting:
                report.waiting.append(entry)
                continue
            case .due:
                break
            }
            let archive: String
            do {
                archive = try destination.store(
                    "\(Self.fileName(for: entry.userID)).\(format.fileExtension)", of: entry.userID
                ) { path in
                    _ = try exportBackup(
                        .users([entry.userID]), to: path, format: format, now: now, toolVersion: toolVersion,
                        signingKey: signingKey, encryption: encryption)
                }
            } catch let error as GuestModeError where error.code == .userNotFound {
                if try dropQueuedBackup(of: entry) { report.dropped.append(entry.userID) }
                continue
            } catch let error as GuestModeError where [.cannotCreate, .ioError, .tryAgainLater].contains(error.kind) {
                let failed = try recordFailedPush(of: entry, error: error.message, retry: retry, now: now)
                report.failed.append(
                    .init(
                        user: entry.userID, error: error.message, attempts: failed.attempts,
                        nextAttemptAt: failed.nextAttemptAt))
                continue
            }
            let outcome = try settlePush(of: entry, now: now)
            report.pushed.append(.init(user: entry.userID, archive: archive, isRequeued: outcome == .keptQueued))
        }
        return report
    }

    /// The wait after the `attempts`-th failed push in a row (`OutboxRetryPolicy`).
    package static func retryDelay(afterAttempts attempts: Int) -> TimeInterval {
        OutboxRetryPolicy.delay(afterAttempts: attempts)
    }

    /// User ids become file names; anything outside a safe set is percent-encoded
    /// so no id can name a path outside the destination.
    package static func fileName(for userID: String) -> String {
        let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-".utf8)
        var name = ""
        for byte in userID.utf8 {
            if safe.contains(byte) {
                name.unicodeScalars.append(UnicodeScalar(byte))
            } else {
                name += String(format: "%%%02X", byte)
            }
        }
        return name.isEmpty ? "%" : name
    }
}
