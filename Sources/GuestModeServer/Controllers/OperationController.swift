import Foundation
import GuestModeKit
import Hummingbird

/// What monitors, app developers and token verifiers read: `/healthz`, `/readyz`, `/metrics`,
/// `/v1/profile`, `/v1/openapi.json` and `/.well-known/jwks.json`.
struct OperationController {
    let services: Services

    /// The longest `/readyz` waits for a thread; with `Services.startMargin` for the store it stays
    /// under a second, with room to answer.
    static let readinessWait = Duration.milliseconds(500)

    var endpoints: RouteCollection<ServerContext> {
        let routes = RouteCollection(context: ServerContext.self)
            .get("healthz", use: health)
            .get("readyz", use: readiness)
            .get("v1/profile", use: profile)
            .get("v1/openapi.json", use: openAPI)
            .get(".well-known/jwks.json", use: jwks)
        if services.metricsExposition != nil { routes.get("metrics", use: metrics) }
        return routes
    }

    /// The process answers.
    @Sendable func health(_ request: Request, context: ServerContext) async throws -> Response {
        try Reply.document(["status": "ok"]).response
    }

    /// Ready: the pool has room and the store answers, with the schema this build expects, all within
    /// `readinessWait`, so a load balancer asking often learns fast and routes around a saturated
    /// server or an unreachable store instead of queueing its probes behind the requests.
    @Sendable func readiness(_ request: Request, context: ServerContext) async throws -> Response {
        guard !services.isSaturated else {
            throw GuestModeError(
                .poolExhausted, "every store connection is in use and calls are waiting for one; not ready")
        }
        let schema = try await services.perform(waitingAtMost: Self.readinessWait) { engine, _ in
            try engine.schemaStatus()
        }
        guard schema.pending.isEmpty else {
            throw GuestModeError(
                .storeBusy, "the store's schema has pending migrations: \(schema.pending.joined(separator: ", "))")
        }
        return try Reply.document(["status": "ready"]).response
    }

    /// `profile show`: the profile the store is bound to, as the YAML's vocabulary resolves it, for
    /// whoever may reach the API: an app reads its caps and prompts from it.
    @Sendable func profile(_ request: Request, context: ServerContext) async throws -> Response {
        _ = try await services.caller(of: request)
        return Reply(status: .ok, body: ProfileDocument.value(of: services.engine.profile).text(pretty: true) + "\n")
            .response
    }

    /// The request and store-pool metrics in Prometheus's text format, for a scraper: route templates
    /// and counts, nothing a request carried, so no credential.
    @Sendable func metrics(_ request: Request, context: ServerContext) async throws -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
        let text = services.metricsExposition?() ?? ""
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// The OpenAPI 3.1 document of every route (schemas/openapi.json, built into the binary).
    @Sendable func openAPI(_ request: Request, context: ServerContext) async throws -> Response {
        Reply(status: .ok, body: OpenAPIDocument.text).response
    }

    /// The public keys access tokens are verified with (RFC 7517): every signing key not retired, so
    /// a token signed before a rotation verifies until it expires. Public by design, no credential;
    /// caches may keep it five minutes (a verifier that meets an unknown `kid` reads it again).
    @Sendable func jwks(_ request: Request, context: ServerContext) async throws -> Response {
        let keys = try await services.tokens.published().map { key in
            PublicJWK(kid: key.kid, alg: key.algorithm, x: key.x, y: key.y)
        }
        var reply = try Reply.document(KeySet(keys: keys))
        reply.headers[.cacheControl] = "public, max-age=300"
        return reply.response
    }
}

/// `/.well-known/jwks.json`'s document.
private struct KeySet: Encodable {
    var keys: [PublicJWK]
}

/// One public key as a JWK (RFC 7517, RFC 7518 §6.2): an EC key on P-256 for ES256 signatures.
private struct PublicJWK: Encodable {
    var kty = "EC"
    var crv = "P-256"
    var use = "sig"
    var kid: String
    var alg: String
    var x: String
    var y: String

    init(kid: String, alg: String, x: String, y: String) {
        self.kid = kid
        self.alg = alg
        self.x = x
        self.y = y
    }
}
