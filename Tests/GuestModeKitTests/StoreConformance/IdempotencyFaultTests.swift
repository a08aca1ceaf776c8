import Foundation
import Synchronization
import Testing

@testable import GuestModeKit

/// A failure injected after the idempotency key was checked (and stored with
/// its write, not yet committed) rolls the key back with the write: the retry
/// is counted exactly once, and a second retry is a duplicate. The key is
/// never claimed apart from its write, so a lost write cannot leave a key
/// that makes the retry count zero times (openmeter#5118).
@Suite("Idempotency keys under an injected failure")
struct IdempotencyFaultTests {
    struct InjectedFailure: Error {}

    /// An engine over a voice store with guest u1 whose first `failures`
    /// writes of `write` fail after the key check.
    private func failingEngine(
        _ backend: StoreBackend, failing write: IdempotentWrite, failures: Int
    ) throws -> GuestMode {
        let (store, profile) = try backend.makeStore(profile: "voice")
        try makeGuests(["u1"], in: store, profile: profile)
        var engine = GuestMode(profile: profile, store: store)
        let left = Mutex(failures)
        engine.faults = EngineFaults { point in
            guard point == write else { return }
            let fails = left.withLock { left in
                defer { left -= 1 }
                return left > 0
            }
            if fails { throw InjectedFailure() }
        }
        return engine
    }

    @Test(arguments: StoreBackend.allCases)
    func aTrackRetriedAfterAFailureCountsOnce(backend: StoreBackend) throws {
        let engine = try failingEngine(backend, failing: .track, failures: 2)
        let event = TrackedEvent(user: "u1", action: "command_spoken", at: day(1), count: 3, idempotencyKey: "e1")
        for _ in 1...2 {
            #expect(throws: InjectedFailure.self) { _ = try engine.track(event, now: day(1)) }
            #expect(try engine.counters(user: "u1")["command_spoken"] == nil, "the failed write left nothing")
        }
        let retried = try engine.track(event, now: day(1))
        #expect(retried.isCounted && retried.total == 3)
        let again = try engine.track(event, now: day(1))
        #expect(!again.isCounted && again.total == 3, "the committed key makes a second retry a duplicate")
        #expect(try engine.counters(user: "u1")["command_spoken"] == 3)
        let reused = TrackedEvent(user: "u1", action: "command_spoken", at: day(1), count: 4, idempotencyKey: "e1")
        #expect(errorCode { _ = try engine.track(reused, now: day(1)) } == .idempotencyKeyReused)
        // A write without a key does not reach the point.
        #expect(try engine.track(TrackedEvent(user: "u1", action: "app_opened", at: day(1)), now: day(1)).isCounted)
    }

    @Test(arguments: StoreBackend.allCases)
    func aMeterUseRetriedAfterAFailureCountsOnce(backend: StoreBackend) throws {
        let engine = try failingEngine(backend, failing: .meterUse, failures: 2)
        for _ in 1...2 {
            #expect(throws: InjectedFailure.self) {
                _ = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 10, key: "call-1", now: day(1))
            }
            #expect(try engine.meterStatus(user: "u1", meter: "api_minutes", now: day(1)).used == 0)
        }
        let retried = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 10, key: "call-1", now: day(1))
        #expect(retried.isRecorded && !retried.isDuplicate && retried.status.used == 10)
        let again = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 10, key: "call-1", now: day(1))
        #expect(again.isDuplicate && !again.isRecorded && again.status.used == 10)
        #expect(try engine.meterStatus(user: "u1", meter: "api_minutes", now: day(1)).used == 10)
        #expect(
            errorCode {
                _ = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 30, key: "call-1", now: day(1))
            } == .idempotencyKeyReused)
    }
}
