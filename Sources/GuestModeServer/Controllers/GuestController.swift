import Foundation
import GuestModeKit
import Hummingbird

/// Anonymous sign-in and session refresh (`/v1/guests`, `/v1/sessions/refresh`).
/// Their answers hold secrets, so no answer of theirs is kept for an
/// idempotency key.
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
            .post("sessions/refresh", use: refresh)
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
