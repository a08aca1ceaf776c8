import Foundation
import GuestModeKit
import Hummingbird

/// `link` and `unlink` (`/v1/users/{user}/identities`).
struct IdentityController {
    let services: Services

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .post(use: link)
            .delete(":provider", use: unlink)
    }

    /// An identity, for linking and for signing in (`POST /v1/sessions`): `{"provider": "apple",
    /// "subject": "001234.abcd", "email": null}` from an app backend with a key, or `{"provider":
    /// "apple", "id_token": "…", "nonce": "…"}` that the server verifies itself.
    struct IdentityBody: Decodable {
        var provider: String
        var idToken: String?
        var nonce: String?
        var subject: String?
        var email: String?

        enum CodingKeys: String, CodingKey {
            case provider, idToken = "id_token", nonce, subject, email
        }

        /// The identity the body names: its ID token verified against the provider's key set, or
        /// its subject, which only a server key may vouch for. `forToken` and `forSubject` check
        /// the caller for each way before anything is verified.
        func identity(
            services: Services, forToken: () async throws -> Void, forSubject: () async throws -> Void
        ) async throws -> (subject: String, email: String?) {
            if let idToken {
                try await forToken()
                guard subject == nil else {
                    throw GuestModeError(.usage, "give the identity as an id_token or as a subject, not both")
                }
                let identity = try await services.identityTokens.verify(
                    idToken, provider: provider, nonce: nonce, now: try services.now())
                return (identity.subject, identity.email)
            }
            guard let subject else {
                throw GuestModeError(.usage, "the request body needs 'id_token' (or, with a server key, 'subject')")
            }
            try await forSubject()
            return (subject, email)
        }
    }

    /// `link`, two ways. A subject from an app backend, which verified the provider's sign-in: a server
    /// key. Or an ID token from the guest's own session (or a key): the server verifies the provider's
    /// ID token itself (`--oidc`) and links (provider, its `sub`). An identity that belongs to another
    /// user is 409 identity_already_exists and the guest stays exactly as it was.
    @Sendable func link(_ request: Request, context: ServerContext) async throws -> Response {
        let caller = try await services.caller(of: request)
        let userID = try RequestInput.segment("user", of: context)
        let bytes = try await RequestInput.body(of: request, context: context)
        let body = try StrictRequestDecoder.decode(IdentityBody.self, from: bytes)
        let (subject, email) = try await body.identity(
            services: services, forToken: { try caller.requireAccess(to: userID) },
            forSubject: { try caller.requireKey(.userData) })
        let provider = body.provider
        return try await services.idempotent(request, principal: caller.principal, body: bytes) { engine, now in
            let result = try engine.link(user: userID, provider: provider, subject: subject, email: email, now: now)
            let user = try engine.user(userID)
            let change = IdentityChange(
                userID: userID, action: "link", provider: provider, subject: subject,
                changed: result.isNewlyLinked, state: user.state,
                removedAnonymousCredentials: result.didRemoveAnonymousCredentials)
            return try Reply.document(change, status: result.isNewlyLinked ? .created : .ok)
        }.response
    }

    /// `unlink`: a server key, as linking is.
    @Sendable func unlink(_ request: Request, context: ServerContext) async throws -> Response {
        try await services.caller(of: request).requireKey(.userData)
        let userID = try RequestInput.segment("user", of: context)
        let provider = try RequestInput.segment("provider", of: context)
        let updated = try await services.perform { engine, now in
            try engine.unlink(user: userID, provider: provider, now: now)
        }
        return try Reply.document(
            IdentityChange(
                userID: userID, action: "unlink", provider: provider, subject: nil, changed: true,
                state: updated.state, removedAnonymousCredentials: false)
        ).response
    }
}
