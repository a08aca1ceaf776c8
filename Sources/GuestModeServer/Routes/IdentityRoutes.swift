import Foundation
import GuestModeKit
import Hummingbird

enum IdentityRoutes {
    static func add(to router: ServerRouter, _ services: Services) {
        // `link`, two ways. {"provider": "apple", "subject": "001234.abcd", "email": null} from an app
        // backend, which verified the provider's sign-in: a server key. Or {"provider": "apple",
        // "id_token": "…", "nonce": "…"} from the guest's own session (or a key): the server verifies the
        // provider's ID token itself (`--oidc`) and links (provider, its `sub`). An identity that belongs
        // to another user is 409 identity_already_exists and the guest stays exactly as it was.
        router.post("/v1/users/:user/identities") { request, context -> Response in
            let caller = try await services.caller(of: request)
            let userID = try RequestInput.segment("user", of: context)
            let bytes = try await RequestInput.body(of: request, limit: services.bodyLimit)
            let body = try RequestInput.object(bytes)
            let provider = try body.requiredText("provider")
            let subject: String
            let email: String?
            if let idToken = try body.text("id_token") {
                try caller.requireAccess(to: userID)
                guard try body.text("subject") == nil else {
                    throw GuestModeError(
                        .usage, "give the identity as an id_token or as a subject, not both")
                }
                let identity = try await services.identityTokens.verify(
                    idToken, provider: provider, nonce: try body.text("nonce"), now: try services.now())
                subject = identity.subject
                email = identity.email
            } else {
                try caller.requireKey(.userData)
                subject = try body.requiredText("subject")
                email = try body.text("email")
            }
            return try await services.idempotent(request, principal: caller.principal, body: bytes) { engine, now in
                let result = try engine.link(user: userID, provider: provider, subject: subject, email: email, now: now)
                let user = try engine.user(userID)
                let change = IdentityChange(
                    userId: userID, action: "link", provider: provider, subject: subject,
                    changed: result.isNewlyLinked, state: user.state,
                    removedAnonymousCredentials: result.didRemoveAnonymousCredentials)
                return try Reply.document(change, status: result.isNewlyLinked ? .created : .ok)
            }.response
        }

        // `unlink`: a server key, as linking is.
        router.delete("/v1/users/:user/identities/:provider") { request, context -> Response in
            try await services.caller(of: request).requireKey(.userData)
            let userID = try RequestInput.segment("user", of: context)
            let provider = try RequestInput.segment("provider", of: context)
            let updated = try await services.perform { engine, now in
                try engine.unlink(user: userID, provider: provider, now: now)
            }
            return try Reply.document(
                IdentityChange(
                    userId: userID, action: "unlink", provider: provider, subject: nil, changed: true,
                    state: updated.state, removedAnonymousCredentials: false)
            ).response
        }
    }
}
