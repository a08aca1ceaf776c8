import Foundation
import GuestModeArchive
import GuestModeKit

/// A server that keeps pushed backups: a WebDAV folder (nginx's DAV module,
/// Apache's mod_dav) or `guestmode serve`'s user routes (guestmode-backup(1),
/// REMOTE DESTINATIONS). A user's archives live at
/// `<base><user>/backups/<user>.<extension>`, the name a push into a
/// directory gives the file; `<user>` is `GuestMode.fileName(for:)`.
package struct RemoteBackups: Sendable {
    let base: RemoteURL
    let token: String?
    let transport: HTTPTransport

    /// `token`, when given, is sent as `Authorization: Bearer` and never
    /// appears in a message.
    package init(base: RemoteURL, token: String?, userAgent: String, timeout: Double = 10) {
        self.base = base
        self.token = token
        // A pulled archive is held in memory whole, up to the size one entry of an archive may expand to.
        transport = HTTPTransport(
            userAgent: userAgent, timeout: timeout, responseLimit: Int(ArchiveLimits.standard.maximumEntrySize))
    }

    /// `<base><user>/backups/`, built as text: `fileName(for:)` is already
    /// percent-encoding, which a server decodes back to the user's id (the
    /// route `guestmode serve` reads it from).
    private func folder(of userID: String) -> String {
        let base = base.description
        return (base.hasSuffix("/") ? base : base + "/") + GuestMode.fileName(for: userID) + "/backups/"
    }

    private func file(_ fileName: String, in folder: String) throws -> RemoteURL {
        try RemoteURL(folder + fileName, what: "the backup destination")
    }

    private var authorization: [(String, String)] {
        token.map { [("Authorization", "Bearer \($0)")] } ?? []
    }

    /// Sends a request and returns a 2xx answer; any other answer is a
    /// failure that names the status and what the server said.
    private func send(
        _ method: String, to url: RemoteURL, headers: [(String, String)] = [], body: [UInt8]? = nil
    ) throws -> HTTPAnswer {
        let answer = try transport.sendWaiting(method, to: url, headers: authorization + headers, body: body)
        guard !answer.isSuccess else { return answer }
        var said = String(answer.bodyText.trimmingCharacters(in: .whitespacesAndNewlines).prefix(200))
        // A server that echoes the request back must not get the token printed.
        if let token { said = said.replacingOccurrences(of: token, with: "…") }
        let detail = "\(method) \(url) answered \(answer.status)\(said.isEmpty ? "" : ": \(said)")"
        switch answer.status {
        case 401, 403:
            throw GuestModeError(
                .destinationUnauthorized,
                "\(detail); the backup destination refused the token (check the token file or GUESTMODE_BACKUP_TOKEN)"
            )
        case 404 where method == "GET":
            throw GuestModeError(.archiveNotFound, detail)
        // The server is busy or failing: the push is tried again later, as with no answer at all.
        case 408, 429, 500...599:
            throw GuestModeError(.destinationUnavailable, detail)
        default:
            throw GuestModeError(.destinationRefused, detail)
        }
    }

    /// The archive at a temporary name, then a MOVE onto its final name: a
    /// reader sees the previous archive or this one, whole. The temporary
    /// name is fixed per user, so an interrupted push leaves at most one
    /// file, which the next push of that user replaces.
    fileprivate func upload(_ bytes: [UInt8], as fileName: String, of userID: String) throws -> RemoteURL {
        let folder = folder(of: userID)
        let temporary = try file(".\(fileName).part", in: folder)
        let final = try file(fileName, in: folder)
        _ = try send("PUT", to: temporary, headers: [("Content-Type", "application/octet-stream")], body: bytes)
        _ = try send("MOVE", to: temporary, headers: [("Destination", final.description), ("Overwrite", "T")])
        return final
    }

    /// The user's latest archive, saved at `path`: the first of `fileNames`
    /// the server holds. Returns its URL.
    fileprivate func download(of userID: String, fileNames: [String], to path: String) throws -> RemoteURL {
        for fileName in fileNames {
            let url = try file(fileName, in: folder(of: userID))
            let answer: HTTPAnswer
            do {
                answer = try send("GET", to: url)
            } catch let error as GuestModeError where error.code == .archiveNotFound {
                continue
            }
            guard !answer.isBodyCut else {
                throw GuestModeError(
                    .destinationRefused,
                    "the archive at \(url) is larger than \(ArchiveLimits.standard.maximumEntrySize) bytes")
            }
            guard
                FileManager.default.createFile(
                    atPath: path, contents: Data(answer.body), attributes: [.posixPermissions: 0o600])
            else {
                throw GuestModeError(.cannotSpool, "cannot hold the pulled archive at '\(path)'")
            }
            return url
        }
        throw GuestModeError(
            .archiveNotFound, "no backup of user '\(userID)' at \(folder(of: userID))")
    }
}

/// Pushes to a `RemoteBackups` server: each archive is written to a local
/// temporary file, then uploaded.
struct RemoteDestination: BackupDestination {
    let remote: RemoteBackups

    var name: String { remote.base.description }

    /// Nothing to look for here: a remote push leaves no local file, and the
    /// server's leftover is replaced by the user's next push.
    func removeStaleTemporaries(suffixes: [String]) -> [String] { [] }

    func store(_ fileName: String, of userID: String, export: (String) throws -> Void) throws -> String {
        try Scratch.withFolder { folder in
            let path = folder.appendingPathComponent(fileName).path
            try export(path)
            guard let bytes = FileManager.default.contents(atPath: path) else {
                throw GuestModeError(.archiveUnreadable, "cannot read back the archive just written")
            }
            return try remote.upload(Array(bytes), as: fileName, of: userID).description
        }
    }
}

/// A private temporary folder, removed after use.
enum Scratch {
    static func withFolder<T>(_ body: (URL) throws -> T) throws -> T {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("guestmode-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        } catch {
            throw GuestModeError(.cannotSpool, "cannot create a temporary folder: \(error)")
        }
        defer { try? FileManager.default.removeItem(at: folder) }
        return try body(folder)
    }
}

extension GuestMode {
    /// `pushBackups(to:…)` with a server as the destination.
    package func pushBackups(
        to remote: RemoteBackups, maxAttempts: Int, retryNow: Bool, now: Date, toolVersion: String,
        signingKey: BackupKey?, encryption: BackupEncryption?, progress: (_ done: Int, _ total: Int) -> Void
    ) throws -> BackupPushReport {
        try pushBackups(
            to: RemoteDestination(remote: remote), maxAttempts: maxAttempts, retryNow: retryNow, now: now,
            toolVersion: toolVersion, signingKey: signingKey, encryption: encryption, progress: progress)
    }

    /// The "new phone" restore: fetches `userID`'s latest archive from
    /// `remote`, checks it as `importBackup` does and that this deployment
    /// signed it, then imports it, all or nothing. An archive that does not
    /// hold changes nothing.
    package func pullBackup(
        of userID: String, from remote: RemoteBackups, onConflict: ConflictPolicy, limits: ArchiveLimits,
        keys: BackupKeys, now: Date, progress: (_ rows: Int) -> Void = { _ in }
    ) throws -> BackupImportReport {
        // The profile's format first: the name this deployment's pushes give the archive.
        let preferred = ArchiveFormat(rawValue: profile.backup.format) ?? .tarZstd
        let formats = [preferred] + ArchiveFormat.allCases.filter { $0 != preferred }
        let fileNames = formats.map { "\(Self.fileName(for: userID)).\($0.fileExtension)" }
        return try Scratch.withFolder { folder in
            let path = folder.appendingPathComponent("pulled").path
            let source = try remote.download(of: userID, fileNames: fileNames, to: path)
            let signature = try BackupArchive.requireIntact(path: path, limits: limits, keys: keys)
            guard signature == .thisDeployment else {
                throw GuestModeError(
                    .badSignature,
                    "the archive at \(source) is not signed by this deployment's backup key; nothing was imported")
            }
            // Signed by this deployment yet someone else's: the server put another user's archive at this name.
            guard try BackupArchive.lists(userID, path: path, limits: limits, keys: keys) else {
                throw GuestModeError(
                    .archiveUserMismatch,
                    "the archive at \(source) does not hold user '\(userID)'; nothing was imported")
            }
            var report = try importBackup(
                from: path, onConflict: onConflict, dryRun: false, limits: limits, keys: keys, signature: signature,
                now: now, progress: progress)
            report.archive = source.description
            return report
        }
    }
}
