import Crypto
import Foundation
import GuestModeArchive
import GuestModeKit
import Hummingbird

/// The archives pushed to a server (guestmode-serve(1), PUSHED BACKUPS), one
/// folder per user under `directory`:
///
///     <user>/incoming/<name>     an upload whose signature held, waiting for its MOVE (the newest
///                                `keep` of them: an upload never moved does not stay for ever)
///     <user>/<sequence>-<name>   a kept archive; the highest sequence is the latest
///
/// An upload becomes visible only by a rename, after it was flushed to disk
/// and its signature checked, so a reader never meets half an archive or one
/// this deployment did not sign. Kept archives are taken by `link`, which
/// never replaces a file, so servers sharing the folder never write one
/// sequence twice.
struct BackupShelf: Sendable {
    let directory: String
    /// How many archives each user keeps; older ones are removed.
    let keep: Int
    /// The largest archive taken, in bytes.
    let sizeLimit: Int
    /// What the uploads being received take together on disk before each is checked (`--upload-space`).
    let space: BodyBudget

    /// A name as the path gives it: one path segment that names a file in
    /// the user's folder, short enough for one once a sequence is put before it.
    static func checked(name: String) throws -> String {
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/"), !name.contains("\0"),
            name.utf8.count <= 200
        else {
            throw GuestModeError(
                .usage, "'\(name)' is not a backup name: one path segment of 1 to 200 bytes")
        }
        return name
    }

    private func folder(of userID: String) -> URL {
        URL(fileURLWithPath: directory).appendingPathComponent(GuestMode.fileName(for: userID))
    }

    /// Removes the user's folder, every kept archive and upload in it, when the user is deleted: what
    /// a deleted user pushed is not kept either. Nothing to remove is no failure.
    func removeAll(of userID: String) throws {
        let folder = folder(of: userID)
        guard FileManager.default.fileExists(atPath: folder.path) else { return }
        do {
            try FileManager.default.removeItem(at: folder)
        } catch {
            throw GuestModeError(.ioError, "cannot remove the pushed backups in '\(folder.path)': \(error)")
        }
    }

    /// Writes the backup a migration takes before it moves anything into the account's `safety`
    /// folder, which `list` and `latest` never show (they are the device's own archives) and deleting
    /// the account removes. `export` writes the archive at the path given, as `exportBackup` does:
    /// to a temporary file, flushed, then renamed.
    func keepSafetyBackup(
        of users: [String], for account: String, label: String, now: Date, export: (String) throws -> Void
    ) throws -> String {
        let safety = folder(of: account).appendingPathComponent("safety")
        try Self.makeFolder(safety)
        let stamp = Timestamp.format(now).replacingOccurrences(of: ":", with: "")
        let source = GuestMode.fileName(for: users[0]).prefix(8)
        let path = safety.appendingPathComponent("\(label)-\(stamp)-\(source)-\(UUID().uuidString.prefix(8)).gmbackup")
        try export(path.path)
        try Self.flush(safety)
        return path.path
    }

    /// Writes `body` into the user's incoming folder as `name`, replacing an
    /// upload of that name, once it is on disk and signed by `keys`'s
    /// deployment for `userID` alone, and removes the user's oldest uploads
    /// past `keep` that no MOVE kept. Every file call runs on the services'
    /// pool, bounded as the engine's calls are (`Services.perform`): a flush
    /// waits for the disk and the signature check reads the whole archive, and
    /// on the request's own task they would hold a thread that every other
    /// request is answered on. The bytes are taken from `space` as they come
    /// (`declared` all at once, before any is written) and given back once the
    /// upload is checked or removed.
    func receive(
        _ body: RequestBody, declared: Int?, name: String, userID: String, keys: BackupKeys, on services: Services
    ) async throws {
        let lease = BodyLease(budget: space)
        defer { lease.giveBack() }
        if let declared { try lease.take(declared) }
        let incoming = folder(of: userID).appendingPathComponent("incoming")
        let upload = incoming.appendingPathComponent(".upload-\(UUID().uuidString)")
        let descriptor = try await services.perform { _, _ in
            try Self.makeFolder(incoming)
            let descriptor = open(upload.path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw Self.failure("cannot create an upload in '\(incoming.path)'") }
            return descriptor
        }
        var isOpen = true
        do {
            var size = 0
            // One chunk as it arrives: the body never sits whole in memory.
            for try await buffer in body {
                size += buffer.readableBytes
                guard size <= min(sizeLimit, declared ?? sizeLimit) else { throw RequestInput.tooLarge }
                if declared == nil { try lease.take(buffer.readableBytes) }
                try await services.perform { _, _ in
                    try buffer.withUnsafeReadableBytes { bytes in
                        var offset = 0
                        while offset < bytes.count {
                            let written = write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                            if written < 0 && errno == EINTR { continue }
                            guard written > 0 else {
                                throw Self.failure("cannot write an upload in '\(incoming.path)'")
                            }
                            offset += written
                        }
                    }
                }
            }
            try await services.perform { _, _ in
                guard fsync(descriptor) == 0 else { throw Self.failure("cannot flush an upload to disk") }
            }
            isOpen = false
            close(descriptor)
            try await services.perform { _, _ in
                try Self.requireSigned(upload.path, for: userID, keys: keys)
                guard rename(upload.path, incoming.appendingPathComponent(name).path) == 0 else {
                    throw Self.failure("cannot move an upload into place in '\(incoming.path)'")
                }
                try Self.flush(incoming)
                removeWaitingUploads(in: incoming, pastThe: keep, sparing: name)
            }
        } catch {
            // Removing a large file frees its blocks: on the pool too, or here when the pool is shutting
            // down or busy past its wait, so a refused upload never stays.
            let stillOpen = isOpen
            let remove: @Sendable () -> Void = {
                if stillOpen { close(descriptor) }
                unlink(upload.path)
            }
            do { try await services.perform { _, _ in remove() } } catch { remove() }
            throw error
        }
    }

    /// Removes the oldest uploads waiting in `incoming` for a MOVE beyond the newest `count`, `name`
    /// (the one just received) always spared: a client may push under any name, and names never moved
    /// would otherwise pile up. Uploads still being written (`.upload-…`, `.snapshot-…`) are not
    /// waiting, and are left alone.
    private func removeWaitingUploads(in incoming: URL, pastThe count: Int, sparing name: String) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: incoming.path)) ?? []
        let waiting = names.filter { !$0.hasPrefix(".") && $0 != name }.compactMap { other -> (String, Date)? in
            let path = incoming.appendingPathComponent(other).path
            guard let changed = try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date
            else { return nil }
            return (path, changed)
        }.sorted { $0.1 > $1.1 }
        for (path, _) in waiting.dropFirst(max(0, count - 1)) { unlink(path) }
    }

    /// Keeps the upload `name` as the user's latest archive, called `final`,
    /// and removes the oldest beyond `keep`.
    func settle(_ name: String, as final: String, userID: String) throws {
        let user = folder(of: userID)
        let upload = user.appendingPathComponent("incoming").appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: upload.path) else {
            throw GuestModeError(.archiveNotFound, "no upload '\(name)' for user '\(userID)'")
        }
        var sequence = (kept(in: user).last?.sequence ?? 0) + 1
        while true {
            let target = user.appendingPathComponent(String(format: "%010d-", sequence) + final)
            if link(upload.path, target.path) == 0 { break }
            guard errno == EEXIST else { throw Self.failure("cannot keep an archive in '\(user.path)'") }
            sequence += 1
        }
        unlink(upload.path)
        try Self.flush(user)
        for old in kept(in: user).dropLast(keep) { unlink(old.url.path) }
    }

    /// Keeps a backup the server makes of the user itself (`POST /v1/users/{user}/backups`), the way
    /// a push keeps one: `export` writes the archive into the user's `incoming` folder, then it is
    /// kept as the latest. With an Idempotency-Key the archive is named after the key (`snapshot-` and
    /// 16 hex digits of its SHA-256), and a retry that finds it kept answers it instead of keeping
    /// another: a phone that lost the answer and sends the call again gets one backup, not two.
    func keepSnapshot(
        of userID: String, idempotencyKey: String?, now: Date, export: (String) throws -> Void
    ) throws -> (backup: PushedBackup, replayed: Bool) {
        let user = folder(of: userID)
        let final: String
        if let idempotencyKey {
            let digest = SHA256.hash(data: Data(idempotencyKey.utf8)).map { String(format: "%02x", $0) }.joined()
            final = "snapshot-\(digest.prefix(16)).gmbackup"
            if let kept = list(of: userID).last(where: { $0.name == final }) { return (kept, true) }
        } else {
            let stamp = Timestamp.format(now).replacingOccurrences(of: ":", with: "")
            final = "snapshot-\(stamp)-\(UUID().uuidString.prefix(8).lowercased()).gmbackup"
        }
        let incoming = user.appendingPathComponent("incoming")
        try Self.makeFolder(incoming)
        let upload = ".snapshot-\(UUID().uuidString)"
        defer { unlink(incoming.appendingPathComponent(upload).path) }
        try export(incoming.appendingPathComponent(upload).path)
        try settle(upload, as: final, userID: userID)
        guard let kept = list(of: userID).last(where: { $0.name == final }) else {
            throw Self.failure("cannot find the backup just kept in '\(user.path)'")
        }
        return (kept, false)
    }

    /// The archives kept for the user, oldest first: what a device that signed in may pull back.
    func list(of userID: String) -> [PushedBackup] {
        kept(in: folder(of: userID)).map { archive in
            let size = (try? FileManager.default.attributesOfItem(atPath: archive.url.path)[.size] as? Int) ?? 0
            return PushedBackup(name: archive.name, sequence: archive.sequence, size: size)
        }
    }

    /// The user's latest archive; with `final`, the latest kept under that name.
    func latest(of userID: String, named final: String?) throws -> URL {
        let archives = kept(in: folder(of: userID)).filter { final == nil || $0.name == final }
        guard let newest = archives.last else {
            throw GuestModeError(
                .archiveNotFound, "no pushed backup\(final.map { " named '\($0)'" } ?? "") for user '\(userID)'")
        }
        return newest.url
    }

    /// The kept archives in `folder`, oldest first.
    private func kept(in folder: URL) -> [(sequence: Int, name: String, url: URL)] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.compactMap { name -> (Int, String, URL)? in
            guard let dash = name.firstIndex(of: "-"), name.distance(from: name.startIndex, to: dash) == 10,
                let sequence = Int(name[..<dash])
            else { return nil }
            return (sequence, String(name[name.index(after: dash)...]), folder.appendingPathComponent(name))
        }.sorted { $0.0 < $1.0 }
    }

    private static func requireSigned(_ path: String, for userID: String, keys: BackupKeys) throws {
        guard try BackupArchive.requireIntact(path: path, keys: keys) == .thisDeployment else {
            throw GuestModeError(
                .badSignature, "the archive is not signed by this deployment: only its own backups are kept")
        }
        let users = try BackupArchive.inspect(path: path, keys: keys).header.users
        guard users == [userID] else {
            throw GuestModeError(
                .archiveUserMismatch,
                "the archive holds \(users.count == 1 ? "user '\(users[0])'" : "\(users.count) users"), not '\(userID)' alone"
            )
        }
    }

    private static func makeFolder(_ url: URL) throws {
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            throw GuestModeError(.cannotCreateOutput, "cannot create the folder '\(url.path)'")
        }
    }

    /// A rename is only durable once its folder's entry is on disk.
    private static func flush(_ folder: URL) throws {
        let descriptor = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure("cannot open the folder '\(folder.path)'") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw failure("cannot flush the folder '\(folder.path)' to disk") }
    }

    private static func failure(_ what: String) -> GuestModeError {
        GuestModeError(.ioError, "\(what): \(String(cString: strerror(errno)))")
    }
}

/// One archive a user pushed: the name it was pushed under, its place in the user's sequence (the
/// newest is the highest), and its size in bytes.
struct PushedBackup: Encodable, Sendable {
    var name: String
    var sequence: Int
    var size: Int
}
