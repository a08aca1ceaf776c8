import Hummingbird
import NIOCore

/// A request's context: Hummingbird's own, with the address of the peer
/// that sent the request (guest sign-in is rate-limited per address).
struct ServerContext: RequestContext, RemoteAddressRequestContext {
    var coreContext: CoreRequestContextStorage
    let remoteAddress: SocketAddress?

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
