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
                    throw GuestModeError(.ioError, code: .ioError, "cannot read back the archive just written")
                }
                return Array(data)
            }
            var headers = HTTPFields()
            headers[.contentType] = "application/zstd"
            headers[.contentDisposition] = "attachment; filename=\"\(userID).tar.zst\""
            return Response(
                status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: archive)))
        }

        // `backup import`: an archive in the body (within the body cap); `?on_conflict=fail|skip|replace`
        // (default fail). Only an archive this deployment signed brings plans, usage and identities.
        router.put("/v1/backup") { request, _ -> Response in
            try await services.caller(of: request).requireKey(.admin)
            let bytes = try await RequestInput.body(of: request, limit: services.bodyLimit)
            let policyText = RequestInput.query("on_conflict", of: request) ?? ConflictPolicy.fail.rawValue
            guard let policy = ConflictPolicy(rawValue: policyText) else {
                let known = ConflictPolicy.allCases.map(\.rawValue).joined(separator: ", ")
                throw GuestModeError.usage("on_conflict is one of \(known), not '\(policyText)'", code: .usage)
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
}

extension HTTPField.Name {
    static let contentDisposition = HTTPField.Name("Content-Disposition")!
}
