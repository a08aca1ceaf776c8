import Foundation
import Testing

@testable import GuestModeKit

/// The token bucket of guest sign-ins, as arithmetic on a given time.
@Suite struct SignInLimitPolicyTests {
    let limit = SignInLimit(perHour: 30, burst: 30)

    @Test func aNewAddressStartsFullAndTakesOne() {
        let taken = SignInLimitPolicy.take(from: nil, limit: limit, now: day(1))
        #expect(taken.retryAfter == nil)
        #expect(taken.bucket == SignInBucket(tokens: 29, updatedAt: day(1)))
    }

    @Test func anEmptyBucketSaysWhenTheNextTokenComes() {
        let empty = SignInBucket(tokens: 0, updatedAt: day(1))
        let refused = SignInLimitPolicy.take(from: empty, limit: limit, now: day(1))
        #expect(refused.retryAfter == 120, "30 an hour is one every 120 s")
        #expect(refused.bucket == empty, "a refusal takes nothing")
        let halfway = SignInLimitPolicy.take(from: empty, limit: limit, now: day(1).addingTimeInterval(60))
        #expect(halfway.retryAfter == 60)
        let refilled = SignInLimitPolicy.take(from: empty, limit: limit, now: day(1).addingTimeInterval(120))
        #expect(refilled.retryAfter == nil)
        #expect(refilled.bucket.tokens == 0)
    }

    @Test func aBucketNeverHoldsMoreThanItsBurst() {
        let old = SignInBucket(tokens: 2, updatedAt: day(1))
        let taken = SignInLimitPolicy.take(from: old, limit: limit, now: day(9))
        #expect(taken.bucket.tokens == 29)
        let smaller = SignInLimitPolicy.take(
            from: SignInBucket(tokens: 30, updatedAt: day(1)), limit: SignInLimit(perHour: 2, burst: 2), now: day(1))
        #expect(smaller.bucket.tokens == 1, "a bucket kept under a larger limit is cut to the burst")
    }

    @Test func aClockThatGoesBackRefillsNothing() {
        let bucket = SignInBucket(tokens: 0.5, updatedAt: day(2))
        let taken = SignInLimitPolicy.take(from: bucket, limit: limit, now: day(1))
        #expect(taken.retryAfter == 60)
        #expect(taken.bucket.updatedAt == day(2))
    }
}
