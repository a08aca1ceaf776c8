import Foundation

/// When a failed webhook delivery is tried again. The delay doubles from 30
/// seconds up to an hour, each spread by a jitter of ±25% so endpoints that
/// fail together are not all retried in the same second; the jitter is drawn
/// from the delivery's id and attempt count, so a run is reproducible. After
/// `maxAttempts` failures in a row the delivery is held.
package struct WebhookRetryPolicy: Sendable, Equatable {
    package static let firstDelay: TimeInterval = 30
    package static let longestDelay: TimeInterval = 3600

    package var maxAttempts: Int

    package init(maxAttempts: Int) {
        self.maxAttempts = maxAttempts
    }

    /// The wait after the `attempts`-th failure in a row of delivery `id`.
    package static func delay(afterAttempts attempts: Int, delivery id: Int64) -> TimeInterval {
        let base = min(firstDelay * pow(2, Double(min(max(attempts - 1, 0), 20))), longestDelay)
        return base * (0.75 + 0.5 * unitJitter(delivery: id, attempts: attempts))
    }

    /// A number in [0, 1) fixed by the delivery and attempt (SplitMix64's
    /// finaliser over both).
    static func unitJitter(delivery id: Int64, attempts: Int) -> Double {
        var z = UInt64(bitPattern: id) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(truncatingIfNeeded: attempts)
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Double(z >> 11) / Double(UInt64(1) << 53)
    }

    /// Whether a delivery that failed `attempts` times in a row is held.
    package func isHeld(attempts: Int) -> Bool { attempts >= maxAttempts }
}
