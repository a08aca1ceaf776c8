import GuestModeKit
import Hummingbird
import Synchronization

/// Answers 503 `server_busy` (with `Retry-After`) to a request that arrives while `--max-requests`
/// others are already being answered, before it reads its body or waits for a store connection: a
/// burst past what the machine can serve is turned away at once instead of queueing until every
/// client times out. The operations routes (`/healthz`, `/readyz`, `/metrics`) are never turned away:
/// a monitor must still see a busy server.
struct InFlightLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    let limit: Int
    let inFlight: Counter

    /// The requests being answered now, shared by every connection of the server.
    final class Counter: Sendable {
        private let value = Atomic<Int>(0)

        /// Takes a place; false (and nothing taken) when `limit` are already taken.
        func enter(limit: Int) -> Bool {
            let now = value.add(1, ordering: .relaxed).newValue
            guard now > limit else { return true }
            value.subtract(1, ordering: .relaxed)
            return false
        }

        func leave() { value.subtract(1, ordering: .relaxed) }
    }

    init(limit: Int) {
        self.limit = limit
        self.inFlight = Counter()
    }

    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        if isOperations(request) { return try await next(request, context) }
        guard inFlight.enter(limit: limit) else {
            return Reply.failure(
                GuestModeError(
                    .serverBusy,
                    "the server is answering as many requests as --max-requests allows (\(limit)); nothing was done: try again in a moment"
                )
            ).response
        }
        defer { inFlight.leave() }
        return try await next(request, context)
    }
}

/// Answers 429 `rate_limited` (with `Retry-After`) to a request from an address already having
/// `--requests-per-address` answered, before the server-wide `--max-requests` counts it: one client
/// (slow bodies, or a burst) cannot take every place of the server from the others. The address is the
/// client's, so behind a trusted proxy each of its clients has places of its own. The operations
/// routes are never turned away.
struct AddressInFlightLimitMiddleware: RouterMiddleware {
    typealias Context = ServerContext

    let limit: Int
    let services: Services
    let inFlight = AddressCounts()

    func handle(
        _ request: Request, context: ServerContext, next: (Request, ServerContext) async throws -> Response
    ) async throws -> Response {
        if isOperations(request) { return try await next(request, context) }
        let address = Services.limitKey(of: services.clientAddress(of: request, context: context))
        guard inFlight.enter(address, limit: limit) else {
            var reply = Reply.failure(
                GuestModeError(
                    .rateLimited,
                    "this address has as many requests being answered as --requests-per-address allows (\(limit)); nothing was done: try again in a moment"
                ))
            reply.headers[.retryAfter] = "1"
            return reply.response
        }
        defer { inFlight.leave(address) }
        return try await next(request, context)
    }
}

/// The operations routes, which no limit turns away: a monitor must still see a busy or throttled server.
private func isOperations(_ request: Request) -> Bool {
    ["/healthz", "/readyz", "/metrics"].contains(request.uri.path)
}
