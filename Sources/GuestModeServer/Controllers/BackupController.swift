import Foundation
import GuestModeArchive
import GuestModeKit
import HTTPTypes
import Hummingbird
import Logging

/// `backup export USER` (`/v1/users/{user}/backup`), `backup import`
/// (`/v1/backup`), and, with `--backups-dir`, the pushed backups
/// (`/v1/users/{user}/backups/{name}`).
struct BackupController {
    let services: Services
    /// Where an archive's answer cut short is logged, beside the request's access line.
    let accessLogger: Logger

    var endpoints: RouteCollection<ServerContext> {
        let routes = RouteCollection(context: ServerContext.self)
            .get("users/:user/backup", use: export)
            .put("backup", use: importArchive)
        if services.backupShelf != nil {
            routes.get("users/:user/backups", use: listPushed)
            routes.post("users/:user/backups", use: keepSnapshot)
            let pushed: RouterPath = "users/:user/backups/:name"
            routes.put(pushed, use: receive)
            routes.on(pushed, method: .move, use: settle)
            routes.get(pushed, use: pull)
        }
        return routes
    }

    /// The user's data as a tar.zst archive signed with the deployment's key, which `backup import` (or
    /// PUT /v1/backup) checks. A session may take its own.
    @Sendable func export(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let key = services.backupKey
        let version = services.toolVersion
        let archive = try await services.perform { engine, now -> OpenedFile in
            let path = FileManager.default.temporaryDirectory.appendingPathComponent(
                "guestmode-serve-\(UUID().uuidString).tar.zst"
            ).path
            // Opened, then removed: the answer reads the open file, and nothing stays behind however it ends.
            defer { unlink(path) }
            _ = try engine.exportBackup(
                .users([userID]), to: path, format: .tarZstd, now: now, toolVersion: version, signingKey: key)
            return try OpenedFile(path: path)
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/zstd"
        headers[.contentDisposition] = "attachment; filename=\"\(userID).tar.zst\""
        return Response(
            status: .ok, headers: headers,
            body: archive.body(on: services, context: context, accessLogger: accessLogger))
    }

    /// An archive in the body (within the body cap); `?on_conflict=fail|skip|replace` (default fail).
    /// Only an archive this deployment signed brings plans, usage and identities.
    @Sendable func importArchive(_ request: Request, context: ServerContext) async throws -> Response {
        try await services.caller(of: request).requireKey(.admin)
        let bytes = try await RequestInput.body(of: request, context: context)
        let policyText = try RequestInput.query("on_conflict", of: request) ?? ConflictPolicy.fail.rawValue
        guard let policy = ConflictPolicy(rawValue: policyText) else {
            let known = ConflictPolicy.allCases.map(\.rawValue).joined(separator: ", ")
            throw GuestModeError(.usage, "on_conflict is one of \(known), not '\(policyText)'")
        }
        let keys = BackupKeys(deployment: services.backupKey)
        return try await services.perform { engine, now in
            try RequestInput.spooled(bytes, suffix: ".gmbackup") { url in
                let signature = try BackupArchive.requireIntact(path: url.path, keys: keys)
                var report = try engine.importBackup(
                    from: url.path, onConflict: policy, dryRun: false, keys: keys, signature: signature, now: now)
                report.archive = "-"
                return try Reply.document(report)
            }
        }.response
    }

    /// `backup push --to` with this server's URL: the PUT to a temporary name a WebDAV server answers,
    /// under the user's own route.
    @Sendable func receive(_ request: Request, context: ServerContext) async throws -> Response {
        let shelf = try shelf()
        let (_, userID) = try await services.user(of: request, context: context)
        let name = try BackupShelf.checked(name: try RequestInput.segment("name", of: context))
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        if let declared, declared > shelf.sizeLimit { throw RequestInput.tooLarge }
        try await shelf.receive(
            request.body, declared: declared, name: name, userID: userID,
            keys: BackupKeys(deployment: services.backupKey), on: services)
        return Response(status: .created)
    }

    /// The MOVE onto the final name that ends an upload: each keeps one more archive.
    @Sendable func settle(_ request: Request, context: ServerContext) async throws -> Response {
        let shelf = try shelf()
        let (_, userID) = try await services.user(of: request, context: context)
        let name = try BackupShelf.checked(name: try RequestInput.segment("name", of: context))
        let final = try BackupShelf.checked(name: try Self.destinationName(of: request))
        try await services.perform { _, _ in try shelf.settle(name, as: final, userID: userID) }
        return Response(status: .created)
    }

    /// Backs the user up now: the server exports the user's data, signed as `GET …/backup` signs it, and
    /// keeps it with the pushed archives (201), so a phone's "back up" needs no archive of its own; a
    /// retry with the same Idempotency-Key answers the backup it kept (200, Idempotent-Replayed).
    @Sendable func keepSnapshot(_ request: Request, context: ServerContext) async throws -> Response {
        let shelf = try shelf()
        let (_, userID) = try await services.user(of: request, context: context)
        guard try await RequestInput.body(of: request, context: context).isEmpty else {
            throw GuestModeError(.usage, "POST /v1/users/{user}/backups takes no body")
        }
        let idempotencyKey = try RequestInput.idempotencyKey(of: request)
        let key = services.backupKey
        let version = services.toolVersion
        let (backup, replayed) = try await services.perform { engine, now in
            try shelf.keepSnapshot(of: userID, idempotencyKey: idempotencyKey, now: now) { path in
                _ = try engine.exportBackup(
                    .users([userID]), to: path, format: .tarZstd, now: now, toolVersion: version, signingKey: key)
            }
        }
        var reply = try Reply.document(backup, status: replayed ? .ok : .created)
        if replayed { reply.headers[.idempotentReplayed] = "true" }
        return reply.response
    }

    /// The archives the user pushed, oldest first, so a device that signed in knows what it may pull.
    @Sendable func listPushed(_ request: Request, context: ServerContext) async throws -> Response {
        let shelf = try shelf()
        let (_, userID) = try await services.user(of: request, context: context)
        let archives = try await services.perform { _, _ in shelf.list(of: userID) }
        return try Reply.document(archives).response
    }

    /// `backup pull --from`: the latest (`latest`, or the latest of that name).
    @Sendable func pull(_ request: Request, context: ServerContext) async throws -> Response {
        let shelf = try shelf()
        let (_, userID) = try await services.user(of: request, context: context)
        let name = try BackupShelf.checked(name: try RequestInput.segment("name", of: context))
        let archive = try await services.perform { _, _ in
            try OpenedFile(path: try shelf.latest(of: userID, named: name == "latest" ? nil : name).path)
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/octet-stream"
        return Response(
            status: .ok, headers: headers,
            body: archive.body(on: services, context: context, accessLogger: accessLogger))
    }

    /// The shelf the pushed routes were added for.
    private func shelf() throws -> BackupShelf {
        guard let shelf = services.backupShelf else { throw GuestModeError(.routeNotFound, "no such route") }
        return shelf
    }

    /// The last segment of a MOVE's `Destination` (a URL or an absolute path, as WebDAV allows), which
    /// must name the same folder as the request: an upload moves only within its user's backups.
    private static func destinationName(of request: Request) throws -> String {
        guard let destination = request.headers[.destination] else {
            throw GuestModeError(.usage, "a MOVE needs a Destination header")
        }
        let path = URLComponents(string: destination)?.percentEncodedPath ?? ""
        let source = request.uri.path
        guard let slash = path.lastIndex(of: "/"), let sourceSlash = source.lastIndex(of: "/"),
            path[...slash].removingPercentEncoding == source[...sourceSlash].removingPercentEncoding,
            let name = path[path.index(after: slash)...].removingPercentEncoding
        else {
            throw GuestModeError(
                .usage, "the Destination header must name an archive in the same folder as the request's path")
        }
        return name
    }
}

extension HTTPField.Name {
    static let contentDisposition = HTTPField.Name("Content-Disposition")!
    static let destination = HTTPField.Name("Destination")!
}

extension HTTPRequest.Method {
    /// WebDAV's MOVE (RFC 4918), which `backup push` ends an upload with.
    static let move = HTTPRequest.Method("MOVE")!
}
