import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

@Suite struct OutboxRetryPolicyTests {
    @Test func delayDoublesFromAMinuteUpToAnHour() {
        #expect(
            [0, 1, 2, 3, 6, 7, 20].map(OutboxRetryPolicy.delay(afterAttempts:)) == [60, 60, 120, 240, 1920, 3600, 3600])
    }

    @Test func nextAttemptIsTheFailureTimePlusTheDelay() {
        let policy = OutboxRetryPolicy(maxAttempts: 5)
        #expect(policy.nextAttempt(afterAttempts: 1, failedAt: day(1)) == day(1).addingTimeInterval(60))
        #expect(policy.nextAttempt(afterAttempts: 3, failedAt: day(1)) == day(1).addingTimeInterval(240))
    }

    func entry(attempts: Int, next: Date?) -> OutboxEntry {
        OutboxEntry(
            userID: "u", queuedAt: day(1), attempts: attempts, lastError: nil, nextAttemptAt: next)
    }

    @Test func dueWaitingAndHeld() {
        let policy = OutboxRetryPolicy(maxAttempts: 3)
        let now = day(2)
        #expect(policy.decision(for: entry(attempts: 0, next: nil), now: now, retryingNow: false) == .due)
        #expect(policy.decision(for: entry(attempts: 1, next: now), now: now, retryingNow: false) == .due)
        let later = now.addingTimeInterval(60)
        #expect(
            policy.decision(for: entry(attempts: 2, next: later), now: now, retryingNow: false)
                == .waiting(until: later))
        #expect(policy.decision(for: entry(attempts: 2, next: later), now: now, retryingNow: true) == .due)
        #expect(policy.decision(for: entry(attempts: 3, next: nil), now: now, retryingNow: false) == .held)
        #expect(
            policy.decision(for: entry(attempts: 4, next: later), now: now, retryingNow: true) == .held,
            "retrying now never lifts a hold")
        #expect(policy.isHeld(attempts: 3) && !policy.isHeld(attempts: 2))
    }
}
