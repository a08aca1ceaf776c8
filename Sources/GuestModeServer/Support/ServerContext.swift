import Hummingbird
import NIOCore

/// A request's context: Hummingbird's own, with the address of the peer
/// that sent the request (guest sign-in is rate-limited per address), the
/// largest body it may send, and the strict decoder its body is read with.
struct ServerContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?
    /// The connection the request came on: an answer that waits too long on its client closes it.
    let channel: any Channel
    /// `--body-limit`'s bytes, set by `BodyLimitMiddleware` before any route runs.
    var maxUploadSize = 1 << 20

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
        channel = source.channel
    }

    var requestDecoder: StrictRequestDecoder { StrictRequestDecoder() }
}

/// Gives each request's context the server's body limit: a context is made
/// by Hummingbird from the connection alone, before the server's settings
/// can reach it.
struct BodyLimitMiddleware: RouterMiddleware {
    typealias Context = ServerContext

    let limit: Int

    func handle(
        _ request: Request, context: ServerContext, next: (Request, ServerContext) async throws -> Response
    ) async throws -> Response {
        var context = context
        context.maxUploadSize = limit
        return try await next(request, context)
    }
}
