import Hummingbird
import NIOCore

/// A request's context: Hummingbird's own, with the address of the peer
/// that sent the request (guest sign-in is rate-limited per address), the
/// largest body it may send, what its body takes of the server's
/// `--body-memory`, and the strict decoder its body is read with.
struct ServerContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?
    /// The connection the request came on: an answer that waits too long on its client closes it.
    let channel: any Channel
    /// `--body-limit`'s bytes, set by `BodyLimitMiddleware` before any route runs.
    var maxUploadSize = 1 << 20
    /// What the request's body takes of `--body-memory`, set by `BodyLimitMiddleware`; nil (nothing
    /// counted) only for a context that has not passed it.
    var bodyLease: BodyLease?
    /// The client's address as `Services.clientAddress(of:context:)` reads it, set by
    /// `ObservabilityMiddleware` before any route runs.
    var clientAddress: String?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }

    var requestDecoder: StrictRequestDecoder { StrictRequestDecoder(lease: bodyLease) }
}

/// Gives each request's context the server's body limit and a lease on its
/// `--body-memory`, given back once the route has answered (its body's bytes
/// are the route's until then): a context is made by Hummingbird from the
/// connection alone, before the server's settings can reach it.
struct BodyLimitMiddleware: RouterMiddleware {
    typealias Context = ServerContext

    let limit: Int
    let budget: BodyBudget

    func handle(
        _ request: Request, context: ServerContext, next: (Request, ServerContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.maxUploadSize = limit
        let lease = BodyLease(budget: budget)
        context.bodyLease = lease
        defer { lease.giveBack() }
        return try await next(request, context)
    }
}
