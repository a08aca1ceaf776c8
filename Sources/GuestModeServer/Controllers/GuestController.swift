import Foundation
import GuestModeKit
import Hummingbird

/// Sessions: anonymous sign-in (`/v1/guests`), sign-in by an identity
/// (`/v1/sessions`), refresh and sign-out (`/v1/sessions/refresh`,
/// `/v1/sessions/revoke`). Their answers hold secrets, so no answer of theirs
/// is kept for an idempotency key.
///
/// A device id is an attribute of the guest, never a credential: it is no
/// secret (it travels to analytics and crash reports), so every sign-in
/// creates a new guest, whatever device it names. What a device keeps to come
/// back to its user is the refresh token (guestmode-serve(1), "Sessions").
struct GuestController {
    let services: Services

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .post("guests", use: signIn)
            .post("sessions", use: signInByIdentity)
            .post("sessions/refresh", use: refresh)
            .post("sessions/revoke", use: signOut)
    }

    struct SignInBody: Decodable {
        var device: String?
    }

    struct RefreshBody: Decodable {
        var refreshToken: String

        enum CodingKeys: String, CodingKey { case refreshToken = "refresh_token" }
    }

    @Sendable func signIn(_ request: Request, context: ServerContext) async throws -> Response {
        // The body is checked before the address's sign-in bucket is touched: a malformed request
        // costs its sender nothing it could later need.
        let body = try await request.decode(as: SignInBody.self, context: context)
        if let device = body.device { try GuestMode.checkDevice(device) }
        // Rate-limited per client address: sign-in is what an abuser repeats.
        if let refused = try await services.refusedSignIn(request, context: context) { return refused.response }
        let (guest, grant, now) = try await services.perform { engine, now in
            let guest = try engine.createGuest(device: body.device, now: now)
            return (guest, try engine.startSession(for: guest.id, now: now), now)
        }
        let document = try await SessionDocument(
            guest: GuestDocument(user: guest, created: true), grant: grant, now: now, tokens: services.tokens)
        return try Reply.document(document, status: .created).response
    }

    /// The session of the user holding the identity, or of a new account user created with it (201,
    /// `"new": true`): a person who linked on one device signs in on another. The identity is an ID
    /// token the server verifies (`--oidc`), or a subject a backend with a user-data key vouches for;
    /// nothing else.
    @Sendable func signInByIdentity(_ request: Request, context: ServerContext) async throws -> Response {
        let body = try await request.decode(as: IdentityController.IdentityBody.self, context: context)
        let (subject, email) = try await body.identity(
            services: services, forToken: {},
            forSubject: { try await services.caller(of: request).requireKey(.userData) })
        // A first sign-in creates a user: the address's bucket limits it as it limits guests.
        if let refused = try await services.refusedSignIn(request, context: context) { return refused.response }
        let provider = body.provider
        let (signIn, now) = try await services.perform { engine, now in
            (try engine.signIn(provider: provider, subject: subject, email: email, now: now), now)
        }
        let document = try await SessionDocument(
            guest: GuestDocument(user: signIn.grant.user, created: signIn.isNew), grant: signIn.grant, now: now,
            tokens: services.tokens)
        return try Reply.document(document, status: signIn.isNew ? .created : .ok).response
    }

    /// Signs out: the refresh token's session is revoked (its access tokens stay valid until they expire).
    @Sendable func signOut(_ request: Request, context: ServerContext) async throws -> Response {
        let token = try await request.decode(as: RefreshBody.self, context: context).refreshToken
        let user = try await services.perform { engine, now in try engine.revokeSession(token, now: now) }
        return try Reply.document(SessionsRevoked(userID: user, revoked: 1)).response
    }

    @Sendable func refresh(_ request: Request, context: ServerContext) async throws -> Response {
        let token = try await request.decode(as: RefreshBody.self, context: context).refreshToken
        let (grant, now) = try await services.perform { engine, now in
            (try engine.refreshSession(token, now: now), now)
        }
        let document = try await SessionDocument(
            guest: GuestDocument(user: grant.user, created: false), grant: grant, now: now, tokens: services.tokens)
        return try Reply.document(document).response
    }
}

/// A guest document (as `guest new` prints it) with the session: an access
/// token, when it expires, and the refresh token that gets the next one.
struct SessionDocument: Encodable {
    var guest: GuestDocument
    var accessToken: String
    var expiresAt: Date
    var expiresIn: Int
    var refreshToken: String

    init(guest: GuestDocument, grant: SessionGrant, now: Date, tokens: AccessTokens) async throws {
        let issued = try await tokens.issue(for: grant.user, now: now)
        self.guest = guest
        accessToken = issued.token
        expiresAt = issued.expiresAt
        expiresIn = Int(tokens.lifetime)
        refreshToken = grant.refreshToken
    }

    enum CodingKeys: String, CodingKey {
        case accessToken, tokenType, expiresIn, expiresAt, refreshToken
    }

    func encode(to encoder: any Encoder) throws {
        try guest.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(accessToken, forKey: .accessToken)
        try container.encode("bearer", forKey: .tokenType)
        try container.encode(expiresIn, forKey: .expiresIn)
        try container.encode(expiresAt, forKey: .expiresAt)
        try container.encode(refreshToken, forKey: .refreshToken)
    }
}

/// The sessions a sign-out revoked.
struct SessionsRevoked: Encodable {
    var userID: String
    var revoked: Int
}
