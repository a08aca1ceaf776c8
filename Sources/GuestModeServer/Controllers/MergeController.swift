import Foundation
import GuestModeKit
import Hummingbird

/// A second device's guest brought into the account after its link answered 409
/// `identity_already_exists`: `merge GUEST --into ACCOUNT` (`/v1/users/{account}/merges`), the journaled
/// `migrate GUEST --to ACCOUNT` (`…/migrations`, with `--backups-dir`), and the records that lost a merge
/// (`merge conflicts list|restore`, `…/merge-conflicts`). Moving a guest needs the account's credential
/// and proof of the guest: the guest's access or refresh token in the body, or a server key naming it.
struct MergeController {
    let services: Services

    var endpoints: RouteCollection<ServerContext> {
        let routes = RouteCollection(context: ServerContext.self)
            .post("merges", use: merge)
            .get("merge-conflicts", use: conflicts)
            .post("merge-conflicts/:id/restore", use: restore)
        // A migration keeps a safety backup of both users first, and only the pushed-backup folder is
        // somewhere the server may write one.
        if services.backupShelf != nil { routes.post("migrations", use: migrate) }
        return routes
    }

    /// `{"guest_token": "…", "policy": "keep-account", "dry_run": true}`, or with a key `{"guest": ID, …}`.
    struct MergeBody: Decodable {
        var guestToken: String?
        var guest: String?
        var policy: String
        var dryRun: Bool?

        enum CodingKeys: String, CodingKey {
            case guestToken = "guest_token", guest, policy, dryRun = "dry_run"
        }
    }

    /// `{"guest_token": "…", "dry_run": true}` or `{"guest_token": "…", "resume": true}`; with a key
    /// `{"guest": ID, …}`.
    struct MigrationBody: Decodable {
        var guestToken: String?
        var guest: String?
        var dryRun: Bool?
        var resume: Bool?

        enum CodingKeys: String, CodingKey {
            case guestToken = "guest_token", guest, dryRun = "dry_run", resume
        }
    }

    /// `{"key": "KEY"}`, or empty for the first free of KEY~restored, KEY~restored2, …
    struct RestoreBody: Decodable {
        var key: String?
    }

    @Sendable func merge(_ request: Request, context: ServerContext) async throws -> Response {
        let (caller, account) = try await services.user(of: request, context: context)
        let bytes = try await RequestInput.body(of: request, context: context)
        let body = try StrictRequestDecoder.decode(MergeBody.self, from: bytes)
        guard let policy = MergePolicy(rawValue: body.policy) else {
            let known = MergePolicy.allCases.map(\.rawValue).joined(separator: ", ")
            throw GuestModeError(.usage, "'policy' is one of \(known), not '\(body.policy)'")
        }
        let guest = try await self.guest(token: body.guestToken, named: body.guest, by: caller)
        let dryRun = body.dryRun ?? false
        if dryRun {
            let report = try await services.perform { engine, now in
                try engine.merge(guest: guest, into: account, policy: policy, dryRun: true, now: now)
            }
            return try Reply.document(report).response
        }
        return try await services.idempotent(request, principal: caller.principal, body: bytes) { engine, now in
            try Reply.document(engine.merge(guest: guest, into: account, policy: policy, dryRun: false, now: now))
        }.response
    }

    /// The plan with `dry_run`; else the migration, a safety backup of both users first (kept in the
    /// account's folder of `--backups-dir`, named in the answer by its file name only). A retry needs no
    /// Idempotency-Key: the journal refuses a second run (`already_migrated`, or `migration_unfinished`,
    /// which `resume` continues from its first unfinished step).
    @Sendable func migrate(_ request: Request, context: ServerContext) async throws -> Response {
        let (caller, account) = try await services.user(of: request, context: context)
        let bytes = try await RequestInput.body(of: request, context: context)
        let body = try StrictRequestDecoder.decode(MigrationBody.self, from: bytes)
        let dryRun = body.dryRun ?? false
        let resume = body.resume ?? false
        if dryRun && resume { throw GuestModeError(.usage, "'dry_run' and 'resume' exclude each other") }
        let guest = try await self.guest(token: body.guestToken, named: body.guest, by: caller)
        if dryRun {
            let plan = try await services.perform { engine, now in
                try engine.planMigration(guest: guest, to: account, now: now)
            }
            return try Reply.document(plan).response
        }
        guard let shelf = services.backupShelf else { throw GuestModeError(.routeNotFound, "no such route") }
        let key = services.backupKey
        let version = services.toolVersion
        var report = try await services.perform { engine, now in
            try engine.migrate(
                guest: guest, to: account, resuming: resume, now: now,
                takeBackup: { users in
                    try shelf.keepSafetyBackup(
                        of: users, for: account, label: "migrate", now: now,
                        export: { path in
                            _ = try engine.exportBackup(
                                .users(users), to: path, format: .tarZstd, now: now, toolVersion: version,
                                signingKey: key)
                        })
                })
        }
        report.journal.backupPath = report.journal.backupPath.map { URL(fileURLWithPath: $0).lastPathComponent }
        return try Reply.document(report).response
    }

    /// `merge conflicts list USER`: the records of the user that lost a merge, with the ids `restore` takes.
    @Sendable func conflicts(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let conflicts = try await services.perform { engine, _ in try engine.archivedConflicts(user: userID) }
        return try Reply.document(conflicts).response
    }

    /// `merge conflicts restore ID [--key KEY]`, for a conflict of this user only: another user's id is
    /// not found, as an id that never was.
    @Sendable func restore(_ request: Request, context: ServerContext) async throws -> Response {
        let (caller, userID) = try await services.user(of: request, context: context)
        let idText = try RequestInput.segment("id", of: context)
        guard let id = Int64(idText), id > 0, String(id) == idText else {
            throw GuestModeError(.usage, "the conflict id is a positive whole number, as the conflict list gives it")
        }
        let bytes = try await RequestInput.body(of: request, context: context)
        let body = bytes.isEmpty ? RestoreBody() : try StrictRequestDecoder.decode(RestoreBody.self, from: bytes)
        return try await services.idempotent(request, principal: caller.principal, body: bytes) { engine, now in
            try Reply.document(engine.restoreConflict(id: id, of: userID, key: body.key, now: now))
        }.response
    }

    /// The guest the body proves: a token of the guest's own session (access, or a live refresh token,
    /// which is not spent), or, for a server key, the id it names. A token that proves no one is 401,
    /// as a bad credential is; a session naming a guest by id alone proves nothing.
    private func guest(token: String?, named guest: String?, by caller: Caller) async throws -> String {
        if let token {
            // Only a refused token falls through to the refresh tokens: a store too busy to read the
            // signing keys is a 503 to retry, not a guest_token that proves no one.
            if token.contains(".") {
                do {
                    return try await services.tokens.verify(token, now: try services.now())
                } catch let error as GuestModeError where error.code == .unauthorized {}
            }
            if let user = try await services.perform({ engine, _ in try engine.holder(ofRefreshToken: token) }) {
                return user
            }
            throw GuestModeError(.unauthorized, "the guest_token is not a live session of any guest")
        }
        guard let guest else {
            throw GuestModeError(.usage, "the request body needs 'guest_token' (or, with a server key, 'guest')")
        }
        try caller.requireKey(.userData)
        return guest
    }
}
