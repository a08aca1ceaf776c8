import Foundation

/// How many guests one client address may create: a token bucket holding
/// `burst` tokens, refilled at `perHour` an hour. 0 an hour is no limit.
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

/// One client address's bucket as stored: the tokens it held at `updatedAt`.
/// Kept in the store, so every server of a deployment draws on the same one.
package struct SignInBucket: Sendable, Equatable {
    package var tokens: Double
    package var updatedAt: Date

    package init(tokens: Double, updatedAt: Date) {
        self.tokens = tokens
        self.updatedAt = updatedAt
    }
}

/// The token-bucket arithmetic of guest sign-ins, pure: the time is given.
package enum SignInLimitPolicy {
    /// What taking one token from `bucket` (nil: an address never seen, a
    /// full bucket) at `now` leaves, and, when there was no whole token, how
    /// many seconds until there is one (the refusal's `Retry-After`). A clock
    /// that went back refills nothing and never moves the bucket's time back.
    /// How long an untouched bucket takes to refill completely: from then on
    /// it is the same as no bucket, and may be forgotten.
    package static func refillTime(of limit: SignInLimit) -> TimeInterval {
        guard limit.perHour > 0 else { return 0 }
        return Double(max(1, limit.burst)) * 3600 / Double(limit.perHour)
    }

    package static func take(
        from bucket: SignInBucket?, limit: SignInLimit, now: Date
    ) -> (bucket: SignInBucket, retryAfter: Int?) {
        let burst = Double(max(1, limit.burst))
        let rate = Double(limit.perHour) / 3600
        var next = bucket ?? SignInBucket(tokens: burst, updatedAt: now)
        let elapsed = max(0, now.timeIntervalSince(next.updatedAt))
        next.tokens = min(burst, max(0, next.tokens) + elapsed * rate)
        next.updatedAt = max(next.updatedAt, now)
        guard next.tokens >= 1 else {
            return (next, max(1, Int(((1 - next.tokens) / rate).rounded(.up))))
        }
        next.tokens -= 1
        return (next, nil)
    }
}

extension GuestMode {
    /// Takes one guest sign-in from `address`'s bucket in the store, in one
    /// transaction, so servers sharing the store share the limit. Returns nil
    /// when the sign-in may go on, else the seconds until it may; with no
    /// limit (0 an hour) the store is not touched. An address seen for the
    /// first time also clears away the buckets that have refilled, which are
    /// as good as none, so the table holds only the addresses of the last
    /// refill time (an hour by default).
    package func takeSignIn(from address: String, limit: SignInLimit, now: Date) throws -> Int? {
        guard limit.perHour > 0 else { return nil }
        try TextRule.check(address, what: "the client address")
        return try store.write { transaction in
            var retryAfter: Int?
            var isNewAddress = false
            try transaction.updateSignInBucket(address: address) { stored in
                let taken = SignInLimitPolicy.take(from: stored, limit: limit, now: now)
                retryAfter = taken.retryAfter
                isNewAddress = stored == nil
                return taken.bucket
            }
            if isNewAddress {
                try transaction.deleteSignInBuckets(
                    updatedBefore: now.addingTimeInterval(-SignInLimitPolicy.refillTime(of: limit)))
            }
            return retryAfter
        }
    }
}
