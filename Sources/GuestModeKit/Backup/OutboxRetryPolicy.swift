import Foundation

/// When a queued backup whose pushes failed is tried again. The delay
/// doubles from one minute up to an hour, so a long outage costs a try an
/// hour; after `maxAttempts` failures the entry is held (kept, no longer
/// tried automatically) until a push asks to retry now.
public struct OutboxRetryPolicy: Sendable, Equatable {
    public static let firstDelay: TimeInterval = 60
    public static let longestDelay: TimeInterval = 3600

    public var maxAttempts: Int

    public init(maxAttempts: Int) {
        self.maxAttempts = maxAttempts
    }

    /// What a push does with one entry now.
    public enum Decision: Sendable, Equatable {
        /// Push it.
        case due
        /// Its next attempt is still in the future.
        case waiting(until: Date)
        /// It failed `maxAttempts` times.
        case held
    }

    /// The wait after the `attempts`-th failure in a row.
    public static func delay(afterAttempts attempts: Int) -> TimeInterval {
        min(firstDelay * pow(2, Double(max(attempts - 1, 0))), longestDelay)
    }

    /// When to try again after the `attempts`-th failure in a row, at `failedAt`.
    public func nextAttempt(afterAttempts attempts: Int, failedAt: Date) -> Date {
        failedAt.addingTimeInterval(Self.delay(afterAttempts: attempts))
    }

    /// Whether an entry that failed `attempts` times is no longer tried.
    public func isHeld(attempts: Int) -> Bool {
        attempts >= maxAttempts
    }

    /// `retryingNow` ignores the wait, never the hold.
    public func decision(for entry: OutboxEntry, now: Date, retryingNow: Bool) -> Decision {
        if isHeld(attempts: entry.attempts) { return .held }
        if !retryingNow, let next = entry.nextAttemptAt.flatMap(Timestamp.parse), next > now {
            return .waiting(until: next)
        }
        return .due
    }
}
