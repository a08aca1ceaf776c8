import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

@Suite struct LinkEngineTests {
    struct Killed: Error {}

    @Test func aLinkStoppedAfterTheLockBlocksAnotherUntilTheLockIsStale() throws {
        let engine = try engine("recipes")
        let guest = try engine.createGuest(device: nil, now: day(1, hour: 10))
        #expect(throws: Killed.self) {
            _ = try engine.link(user: guest.id, provider: "apple", subject: "a", email: nil, now: day(1, hour: 10)) {
                if $0 == .afterLock { throw Killed() }
            }
        }
        #expect(try engine.user(guest.id).state == .anonymous)
        let tooSoon = day(1, hour: 10).addingTimeInterval(GuestMode.upgradeLockLifetime - 1)
        #expect(throws: GuestModeError.self) {
            _ = try engine.link(user: guest.id, provider: "apple", subject: "a", email: nil, now: tooSoon)
        }
        let later = day(1, hour: 10).addingTimeInterval(GuestMode.upgradeLockLifetime)
        #expect(try engine.link(user: guest.id, provider: "apple", subject: "a", email: nil, now: later).isNewlyLinked)
        #expect(try engine.user(guest.id).state == .linked)
    }

    @Test func aFailedCompletionReleasesTheLockAndRecordsWhy() throws {
        let engine = try engine("subscriptions")
        let owner = try engine.createGuest(device: nil, now: day(1))
        _ = try engine.link(user: owner.id, provider: "apple", subject: "taken", email: nil, now: day(1))
        let guest = try engine.createGuest(device: nil, now: day(1))
        do {
            _ = try engine.link(user: guest.id, provider: "apple", subject: "taken", email: nil, now: day(2))
            Issue.record("the link of a taken identity succeeded")
        } catch let error as GuestModeError {
            #expect(error.code == .identityAlreadyExists)
        }
        #expect(try engine.details(user: guest.id, now: day(2)).counters["account_upgrade_failed"] == 1)
        // No lock is left behind: the next attempt is judged on its own.
        #expect(
            try engine.link(user: guest.id, provider: "google", subject: "mine", email: nil, now: day(2)).isNewlyLinked)
    }
}
