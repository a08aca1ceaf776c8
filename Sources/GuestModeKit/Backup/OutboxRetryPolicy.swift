import Foundation

/// When a queued backup whose pushes failed is tried again. The delay
/// doubles from one minute up to an hour, so a long outage costs a try an
/// hour; after `maxAttempts` failures the entry is held (kept, no longer
/// tried automatically) until a push asks to retry now.
package struct OutboxRetryPolicy: Sendable, Equatable {
    package static let firstDelay: TimeInterval = 60
    package static let longestDelay: TimeInterval = 3600

    package var maxAttempts: Int

    package init(maxAttempts: Int) {
        self.maxAttempts = maxAttempts
    }

    /// What a push does with one entry now.
    package enum Decision: Sendable, Equatable {
        /// Push it.
        case due
        /// Its next attempt is still in the future.
        case waiting(until: Date)
        /// It failed `maxAttempts` times.
        case held
    }

    /// The wait after the `attempts`-th failure in a row.
    package static func delay(afterAttempts attempts: Int) -> TimeInterval {
        min(firstDelay * pow(2, Double(max(attempts - 1, 0))), longestDelay)
    }

    /// When to try again after the `attempts`-th failure in a row, at `failedAt`.
    package func nextAttempt(afterAttempts attempts: Int, failedAt: Date) -> Date {
        failedAt.addingTimeInterval(Self.delay(afterAttempts: attempts))
    }

    /// Whether an entry that failed `attempts` times is no longer tried.
    package func isHeld(attempts: Int) -> Bool {
        attempts >= maxAttempts
    }

    /// `retryingNow` ignores the wait, never the hold.
    package func decision(for entry: OutboxEntry, now: Date, retryingNow: Bool) -> Decision {
        if isHeld(attempts: entry.attempts) { return .held }
        if !retryingNow, let next = entry.nextAttemptAt, next > now {
            return .waiting(until: next)
        }
        return .due
    }
}
