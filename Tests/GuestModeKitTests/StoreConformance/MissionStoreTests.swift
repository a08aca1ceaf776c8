import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// The mission store methods: overage, devices that survive a reinstall,
/// the event log, on every backend.
@Suite("Overage, device idempotency and the event log: conformance")
struct MissionStoreTests {
    @Test(arguments: StoreBackend.allCases)
    func overageRecordsInFullAndFiresEveryWarningOnce(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "voice")
        try makeGuests(["u1"], in: store, profile: profile)
        let engine = GuestMode(profile: profile, store: store)
        _ = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 40, key: nil, now: day(1))

        let refused = try engine.useMeter(
            user: "u1", meter: "api_minutes", amount: 30, key: nil, overage: .refuse, now: day(1))
        #expect(!refused.isRecorded && !refused.isAllowed && !refused.isOverage)
        #expect(refused.status.used == 40)

        let over = try engine.useMeter(
            user: "u1", meter: "api_minutes", amount: 30, key: "late-session", overage: .allow, now: day(1))
        #expect(over.isRecorded && !over.isAllowed && over.isOverage)
        #expect(over.status.used == 70)
        #expect(over.status.remaining == 0)
        #expect(over.status.level == .exhausted)
        #expect(over.warnings.map(\.level) == [.warning, .critical])

        let repeated = try engine.useMeter(
            user: "u1", meter: "api_minutes", amount: 30, key: "late-session", overage: .allow, now: day(1))
        #expect(repeated.isDuplicate && !repeated.isRecorded)
        #expect(repeated.status.used == 70)

        let more = try engine.useMeter(
            user: "u1", meter: "api_minutes", amount: 1, key: nil, overage: .allow, now: day(1))
        #expect(more.isRecorded && more.isOverage && more.warnings.isEmpty, "each warning fires once")
        #expect(more.status.used == 71)
        #expect(!(try engine.checkMeter(user: "u1", meter: "api_minutes", amount: 1, now: day(1)).isAllowed))
    }

    @Test(arguments: StoreBackend.allCases)
    func overageThatFitsIsAPlainUse(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "voice")
        try makeGuests(["u1"], in: store, profile: profile)
        let engine = GuestMode(profile: profile, store: store)
        let fits = try engine.useMeter(
            user: "u1", meter: "api_minutes", amount: 60, key: nil, overage: .allow, now: day(1))
        #expect(fits.isRecorded && fits.isAllowed && !fits.isOverage)
    }

    @Test(arguments: StoreBackend.allCases)
    func eventsAreListedOldestFirstAndFiltered(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "voice")
        let engine = GuestMode(profile: profile, store: store)
        try makeGuests(["u1", "u2"], in: store, profile: profile)
        for (index, action) in ["app_opened", "command_spoken", "app_opened"].enumerated() {
            _ = try engine.track(
                TrackedEvent(user: "u1", action: action, at: day(index + 2), properties: ["n": .number("\(index)")]),
                now: day(index + 2))
        }
        let all = try engine.events(user: "u1", matching: EventQuery())
        #expect(all.map(\.action) == [profile.actions[0], "app_opened", "command_spoken", "app_opened"])
        #expect(all.allSatisfy { $0.userID == "u1" })
        #expect(all.last?.properties == ["n": .number("2")])
        #expect(
            try engine.events(user: "u1", matching: EventQuery(action: "app_opened", since: day(3))).map(\.at) == [
                day(4)
            ]
        )
        #expect(
            try engine.events(user: "u1", matching: EventQuery(limit: 2)).map(\.action) == [
                "command_spoken", "app_opened",
            ])
        #expect(try engine.events(user: "u2", matching: EventQuery(action: "command_spoken")).isEmpty)
        expectFailure(.notFound, code: .userNotFound) {
            _ = try engine.events(user: "nobody", matching: EventQuery())
        }
    }
}
