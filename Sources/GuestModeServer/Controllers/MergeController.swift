import Foundation
import GuestModeKit
import Hummingbird

/// `merge GUEST --into ACCOUNT` (`/v1/users/{account}/merges`): a second device's guest folded into the
/// account after its link answered 409 `identity_already_exists`. It needs the account's credential
/// and proof of the guest: the guest's access or refresh token in the body, or a server key naming it.
struct MergeController {
    let services: Services

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .post(use: merge)
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

    @Sendable func merge(_ request: Request, context: ServerContext) async throws -> Response {
        let (caller, account) = try await services.user(of: request, context: context)
        let bytes = try await RequestInput.body(of: request, limit: context.maxUploadSize)
        let body = try StrictRequestDecoder.decode(MergeBody.self, from: bytes)
        guard let policy = MergePolicy(rawValue: body.policy) else {
            let known = MergePolicy.allCases.map(\.rawValue).joined(separator: ", ")
            throw GuestModeError(.usage, "'policy' is one of \(known), not '\(body.policy)'")
        }
        let guest = try await self.guest(proven: body, by: caller)
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

    /// The guest the body proves: a token of the guest's own session (access, or a live refresh token,
    /// which is not spent), or, for a server key, the id it names. A token that proves no one is 401,
    /// as a bad credential is; a session naming a guest by id alone proves nothing.
    private func guest(proven body: MergeBody, by caller: Caller) async throws -> String {
        if let token = body.guestToken {
            if token.contains("."), let user = try? await services.tokens.verify(token, now: try services.now()) {
                return user
            }
            if let user = try await services.perform({ engine, _ in try engine.holder(ofRefreshToken: token) }) {
                return user
            }
            throw GuestModeError(.unauthorized, "the guest_token is not a live session of any guest")
        }
        guard let guest = body.guest else {
            throw GuestModeError(.usage, "the request body needs 'guest_token' (or, with a server key, 'guest')")
        }
        try caller.requireKey(.userData)
        return guest
    }
}
