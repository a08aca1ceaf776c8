import Foundation
import GuestModeKit
import HTTPTypes
import Hummingbird

extension Services {
    /// The address a request comes from: the peer's, or, when the peer is
    /// one of the trusted proxies, the last address of its
    /// `X-Forwarded-For` (the one that proxy saw).
    func clientAddress(of request: Request, context: ServerContext) -> String {
        if let known = context.clientAddress { return known }
        return Self.clientAddress(
            peer: context.remoteAddress?.ipAddress ?? "unknown", forwardedFor: request.headers[.xForwardedFor],
            trustedProxies: trustedProxies)
    }

    /// What the per-address limits count a client address under (`--connections-per-address`,
    /// `--requests-per-address`, `--guests-per-hour`): an IPv6 address by its /64 network, since a host
    /// is given a whole /64 and picks any address in it at will, so counting each would let one client
    /// pass every limit; an IPv4 address written as IPv6 (`::ffff:10.0.0.1`) as the IPv4 address it is.
    /// Anything else (IPv4, or what cannot be read) as it is. The access log keeps the address itself.
    static func limitKey(of address: String) -> String {
        // As bytes: `contains` with a string went through Foundation's `NSString` search, 4.5 k instructions of every
        // request (bench/results.md, "Serving, round 20").
        guard address.utf8.contains(UInt8(ascii: ":")) else { return address }
        var bytes = in6_addr()
        guard inet_pton(AF_INET6, address, &bytes) == 1 else { return address }
        let octets = withUnsafeBytes(of: &bytes) { Array($0) }
        if octets[0..<10].allSatisfy({ $0 == 0 }) && octets[10] == 0xff && octets[11] == 0xff {
            return octets[12...].map(String.init).joined(separator: ".")
        }
        let groups = stride(from: 0, to: 8, by: 2).map {
            String(UInt16(octets[$0]) << 8 | UInt16(octets[$0 + 1]), radix: 16)
        }
        return groups.joined(separator: ":") + "::/64"
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
        let address = Self.limitKey(of: clientAddress(of: request, context: context))
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
