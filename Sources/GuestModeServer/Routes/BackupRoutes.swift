import Foundation
import GuestModeArchive
import GuestModeKit
import HTTPTypes
import Hummingbird

enum BackupRoutes {
    static func add(to router: ServerRouter, _ services: Services) {
        // `backup export USER`: the user's data as a tar.zst archive signed with the deployment's key,
        // which `backup import` (or PUT /v1/backup) checks. A session may take its own.
        router.get("/v1/users/:user/backup") { request, context -> Response in
            let (_, userID) = try await services.user(of: request, context: context)
            let key = services.backupKey
            let version = services.toolVersion
            let archive = try await services.perform { engine, now -> [UInt8] in
                let path = FileManager.default.temporaryDirectory.appendingPathComponent(
                    "guestmode-serve-\(UUID().uuidString).tar.zst"
                ).path
                defer { try? FileManager.default.removeItem(atPath: path) }
                _ = try engine.exportBackup(
                    .users([userID]), to: path, format: .tarZstd, now: now, toolVersion: version, signingKey: key)
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw GuestModeError(.ioError, "cannot read back the archive just written")
                }
                return Array(data)
            }
            var headers = HTTPFields()
            headers[.contentType] = "application/zstd"
            headers[.contentDisposition] = "attachment; filename=\"\(userID).tar.zst\""
            return Response(
                status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: archive)))
        }

        if let shelf = services.backupShelf { addPushed(to: router, services, shelf) }

        // `backup import`: an archive in the body (within the body cap); `?on_conflict=fail|skip|replace`
        // (default fail). Only an archive this deployment signed brings plans, usage and identities.
        router.put("/v1/backup") { request, _ -> Response in
            try await services.caller(of: request).requireKey(.admin)
            let bytes = try await RequestInput.body(of: request, limit: services.bodyLimit)
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
    }

    /// `backup push --to` and `backup pull --from` with this server's URL: the same PUT to a temporary
    /// name, MOVE onto the final one and GET a WebDAV server answers, under the user's own route. Each
    /// MOVE keeps one more archive; GET answers the latest (`latest`, or the latest of that name).
    private static func addPushed(to router: ServerRouter, _ services: Services, _ shelf: BackupShelf) {
        let route: RouterPath = "/v1/users/:user/backups/:name"
        router.put(route) { request, context -> Response in
            let (_, userID) = try await services.user(of: request, context: context)
            let name = try BackupShelf.checked(name: try RequestInput.segment("name", of: context))
            if let declared = request.headers[.contentLength].flatMap({ Int($0) }), declared > shelf.sizeLimit {
                throw RequestInput.tooLarge
            }
            try await shelf.receive(
                request.body, name: name, userID: userID, keys: BackupKeys(deployment: services.backupKey))
            return Response(status: .created)
        }
        router.on(route, method: .move) { request, context -> Response in
            let (_, userID) = try await services.user(of: request, context: context)
            let name = try BackupShelf.checked(name: try RequestInput.segment("name", of: context))
            let final = try BackupShelf.checked(name: try destinationName(of: request))
            try await services.pool.runIfActive { try shelf.settle(name, as: final, userID: userID) }
            return Response(status: .created)
        }
        router.get(route) { request, context -> Response in
            let (_, userID) = try await services.user(of: request, context: context)
            let name = try BackupShelf.checked(name: try RequestInput.segment("name", of: context))
            let archive = try await services.pool.runIfActive { () -> [UInt8] in
                let url = try shelf.latest(of: userID, named: name == "latest" ? nil : name)
                guard let data = FileManager.default.contents(atPath: url.path) else {
                    throw GuestModeError(
                        .archiveUnreadable, "cannot read the kept archive '\(url.path)'")
                }
                return Array(data)
            }
            var headers = HTTPFields()
            headers[.contentType] = "application/octet-stream"
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: archive)))
        }
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
