import Foundation
import GuestModeKit
import HTTPTypes
import Hummingbird

extension Services {
    /// The address a request comes from: the peer's, or, when the peer is
    /// one of the trusted proxies, the last address of its
    /// `X-Forwarded-For` (the one that proxy saw).
    func clientAddress(of request: Request, context: ServerContext) -> String {
        Self.clientAddress(
            peer: context.remoteAddress?.ipAddress ?? "unknown", forwardedFor: request.headers[.xForwardedFor],
            trustedProxies: trustedProxies)
    }

    /// `clientAddress` from its parts, for the connection layer too, which sees no `Request`.
    static func clientAddress(peer: String, forwardedFor forwarded: String?, trustedProxies: Set<String>) -> String {
        guard trustedProxies.contains(peer), let forwarded else { return peer }
        let last = forwarded.split(separator: ",").last?.trimmingCharacters(in: .whitespaces) ?? ""
        return last.isEmpty ? peer : last
    }

    /// The refusal of a guest sign-in past the address's limit (429 with
    /// `Retry-After`), or nil when it may go on. The buckets are the store's
    /// (`GuestMode.takeSignIn`), so every server on one store shares them;
    /// the time is the request's, so `--now` drives them as every decision.
    func refusedSignIn(_ request: Request, context: ServerContext) async throws -> Reply? {
        let address = clientAddress(of: request, context: context)
        let limit = signInLimit
        guard
            let wait = try await perform({ engine, now in
                try engine.takeSignIn(from: address, limit: limit, now: now)
            })
        else { return nil }
        var reply = Reply.failure(
            GuestModeError(
                .rateLimited,
                "too many guests were created from this address; try again in \(wait) seconds"))
        reply.headers[.retryAfter] = "\(wait)"
        return reply
    }
}

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}
