import Foundation
import GuestModeKit
import HTTPTypes
import Hummingbird

/// How many guests one client address may create: a token bucket holding
/// `burst` tokens, refilled at `perHour` an hour.
package struct SignInLimit: Sendable, Equatable {
    package var perHour: Int
    package var burst: Int

    package init(perHour: Int, burst: Int) {
        self.perHour = perHour
        self.burst = burst
    }

    /// 30 an hour, as Supabase's anonymous sign-ins default to.
    package static let standard = SignInLimit(perHour: 30, burst: 30)
}

/// The buckets of guest creation, one per client address, kept by this
/// process. The time is the request's (the server's clock), so `--now`
/// drives it as it drives every decision.
actor SignInLimiter {
    private struct Bucket {
        var tokens: Double
        var at: Date
    }

    private let limit: SignInLimit
    private var buckets: [String: Bucket] = [:]

    init(limit: SignInLimit) {
        self.limit = limit
    }

    /// Takes a token for `address`; when there is none, how many seconds
    /// until there is one.
    func take(for address: String, now: Date) -> Int? {
        guard limit.perHour > 0 else { return nil }
        let rate = Double(limit.perHour) / 3600
        var bucket = buckets[address] ?? Bucket(tokens: Double(limit.burst), at: now)
        bucket.tokens = min(Double(limit.burst), bucket.tokens + max(0, now.timeIntervalSince(bucket.at)) * rate)
        bucket.at = max(bucket.at, now)
        guard bucket.tokens >= 1 else {
            buckets[address] = bucket
            return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up)))
        }
        bucket.tokens -= 1
        buckets[address] = bucket
        if buckets.count > 100_000 { forgetFull(now: now, rate: rate) }
        return nil
    }

    /// Drops the buckets that have refilled: they are as good as new.
    private func forgetFull(now: Date, rate: Double) {
        buckets = buckets.filter { _, bucket in
            bucket.tokens + now.timeIntervalSince(bucket.at) * rate < Double(limit.burst)
        }
    }
}

extension Services {
    /// The address a request comes from: the peer's, or, when the peer is
    /// one of the trusted proxies, the last address of its
    /// `X-Forwarded-For` (the one that proxy saw).
    func clientAddress(of request: Request, context: ServerContext) -> String {
        let peer = context.remoteAddress?.ipAddress ?? "unknown"
        guard trustedProxies.contains(peer), let forwarded = request.headers[.xForwardedFor] else { return peer }
        let last = forwarded.split(separator: ",").last?.trimmingCharacters(in: .whitespaces) ?? ""
        return last.isEmpty ? peer : last
    }

    /// The refusal of a guest sign-in past the address's limit (429 with
    /// `Retry-After`), or nil when it may go on.
    func refusedSignIn(_ request: Request, context: ServerContext) async throws -> Reply? {
        let address = clientAddress(of: request, context: context)
        guard let wait = await signIns.take(for: address, now: try now()) else { return nil }
        var reply = Reply.failure(
            GuestModeError(
                .tryAgainLater, code: .rateLimited,
                "too many guests were created from this address; try again in \(wait) seconds"))
        reply.headers[.retryAfter] = "\(wait)"
        return reply
    }
}

extension HTTPField.Name {
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}
