import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit

/// The kept grant draws (meter_grant_draws) against the replay of the ledger
/// they keep, on every backend: after each change a kept row is the one the
/// replay gives, or none is used, and the meter reads as the replay has it.
/// The voice profile gives guests 60 api_minutes for life and premium
/// unlimited ones.
@Suite("Meter grant draws: kept with the ledger, equal to its replay")
struct MeterGrantDrawTests {
    private func engine(_ backend: StoreBackend) throws -> GuestMode {
        let (store, profile) = try backend.makeStore(profile: "voice")
        try makeGuests(["u1", "u2"], in: store, profile: profile)
        return GuestMode(profile: profile, store: store)
    }

    /// The row kept for the user's api_minutes, and the one the replay gives.
    private func draws(
        _ engine: GuestMode, _ userID: String
    ) throws -> (kept: MeterGrantDrawsRow?, replayed: MeterGrantDrawsRow) {
        try keptAndReplayedGrantDraws(engine, userID, meter: "api_minutes")
    }

    /// The meter as the replay of the ledger up to `now` has it, kept draws aside.
    private func replayedStatus(_ engine: GuestMode, _ userID: String, now: Date) throws -> MeterStatus {
        let meter = try #require(engine.profile.meter(named: "api_minutes"))
        let profile = engine.profile
        return try engine.store.read { transaction in
            let user = try transaction.requireUser(userID)
            let grants = try transaction.meterGrants(of: userID, meter: meter.name)
            let ledger = try transaction.replayGrantLedger(
                of: user, meter: meter, grants: grants, plans: try transaction.planGrants(of: userID),
                profile: profile, until: now, periodTime: { _ in now }
            ).ledger
            return profile.meterStatus(
                meter, tier: try transaction.tier(of: user, profile: profile, now: now),
                used: try transaction.meterUsage(of: userID, meter: meter, since: nil),
                grants: grants.sorted(by: MeterGrantRow.drawsBefore).map { ledger.standing(of: $0, now: now) },
                drawnInPeriod: ledger.drawnInPeriod, now: now)
        }
    }

    /// The kept row, when there is one and it counts, is the replay's; the
    /// meter and the grants read as the replay has them; db check agrees.
    private func expectReplayed(
        _ engine: GuestMode, _ userID: String, now: Date, kept isKept: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let (kept, replayed) = try draws(engine, userID)
        if isKept {
            #expect(kept == replayed, sourceLocation: sourceLocation)
        } else if let kept, kept.inputs == replayed.inputs {
            #expect(kept == replayed, sourceLocation: sourceLocation)
        }
        let status = try engine.meterStatus(user: userID, meter: "api_minutes", now: now)
        #expect(try status == replayedStatus(engine, userID, now: now), sourceLocation: sourceLocation)
        // A prompt decision reads the meter with the plans that may be in force, and the whole history only
        // for the grants' draws: it sees the meter as the status does.
        let profile = engine.profile
        let facts = try engine.store.read {
            try $0.promptSnapshot(of: userID, profile: profile, reads: engine.promptReads, now: now)
        }
        #expect(facts?.meters["api_minutes"] == status, sourceLocation: sourceLocation)
        #expect(try engine.grantDrawProblems() == [], sourceLocation: sourceLocation)
    }

    private func use(_ engine: GuestMode, _ amount: MeterAmount, _ user: String = "u1", at now: Date) throws {
        let used = try engine.useMeter(user: user, meter: "api_minutes", amount: amount, key: nil, now: now)
        #expect(used.isRecorded)
    }

    private func grant(
        _ engine: GuestMode, _ amount: MeterAmount, _ user: String = "u1", expiry: MeterGrantExpiry = .never,
        at now: Date
    ) throws -> Int64 {
        try engine.grantMeter(
            user: user, meter: "api_minutes", amount: amount, expiry: expiry, reason: nil, key: nil, now: now
        ).grant.id
    }

    @Test(arguments: StoreBackend.allCases)
    func usesInOrderKeepTheReplaysDraws(backend: StoreBackend) throws {
        let engine = try engine(backend)
        _ = try grant(engine, 10, at: day(1))
        _ = try grant(engine, 5, expiry: .at(day(5)), at: day(1))
        try expectReplayed(engine, "u1", now: day(1))
        for (amount, time) in [(3, day(2)), (4, day(3)), (0.5, day(3)), (9, day(4)), (2, day(6))]
            as [(MeterAmount, Date)]
        {
            try use(engine, amount, at: time)
            try expectReplayed(engine, "u1", now: time)
        }
        let (kept, _) = try draws(engine, "u1")
        #expect(kept?.through == Timestamp.format(day(6)))
        let grants = try engine.meterGrants(user: "u1", meter: "api_minutes", now: day(6))
        #expect(grants.map(\.used) == [10, 5], "the one expiring first was drawn first, then the other")
        // A read before the latest use replays: the kept row covers a use after it.
        try expectReplayed(engine, "u1", now: day(4))
    }

    @Test(arguments: StoreBackend.allCases)
    func aUseRecordedBeforeTheLatestRebuildsTheDraws(backend: StoreBackend) throws {
        let engine = try engine(backend)
        _ = try grant(engine, 6, expiry: .at(day(4)), at: day(1))
        _ = try grant(engine, 6, at: day(1))
        try use(engine, 5, at: day(5))
        try use(engine, 4, at: day(2))
        try expectReplayed(engine, "u1", now: day(5))
        let grants = try engine.meterGrants(user: "u1", meter: "api_minutes", now: day(5))
        #expect(grants.map(\.used) == [4, 5], "the earlier use drew on the grant that expired since")
    }

    @Test(arguments: StoreBackend.allCases)
    func aUseBeforeEveryGrantDrawsNothing(backend: StoreBackend) throws {
        let engine = try engine(backend)
        _ = try grant(engine, 5, at: day(3))
        try use(engine, 2, at: day(2))
        try expectReplayed(engine, "u1", now: day(3))
        #expect(try draws(engine, "u1").kept?.through == nil, "the replay starts at the first grant")
        try use(engine, 2, at: day(4))
        try expectReplayed(engine, "u1", now: day(4))
        #expect(try engine.meterGrants(user: "u1", meter: "api_minutes", now: day(4)).map(\.used) == [2])
    }

    @Test(arguments: StoreBackend.allCases)
    func aChangeOfTierInThePastIsReplayed(backend: StoreBackend) throws {
        let engine = try engine(backend)
        _ = try grant(engine, 10, at: day(1))
        try use(engine, 4, at: day(3))
        try expectReplayed(engine, "u1", now: day(3))
        // Premium from day 2 to day 4 makes the use of day 3 unlimited: it drew nothing. The kept row no
        // longer counts.
        _ = try engine.grantPlan(user: "u1", plan: "premium", trial: nil, until: day(4), now: day(2))
        try expectReplayed(engine, "u1", now: day(3), kept: false)
        #expect(try engine.meterGrants(user: "u1", meter: "api_minutes", now: day(3)).map(\.used) == [0])
        try use(engine, 3, at: day(5))
        try expectReplayed(engine, "u1", now: day(5))
        #expect(try engine.meterGrants(user: "u1", meter: "api_minutes", now: day(5)).map(\.used) == [3])
        _ = try engine.grantPlan(user: "u1", plan: "premium", trial: nil, until: nil, now: day(6))
        try use(engine, 2, at: day(6))
        try expectReplayed(engine, "u1", now: day(6))
        _ = try engine.revokePlan(user: "u1", plan: "premium", now: day(7))
        try expectReplayed(engine, "u1", now: day(7), kept: false)
        try use(engine, 1, at: day(8))
        try expectReplayed(engine, "u1", now: day(8))
        // Granting premium again on day 6 renewed the plan held since day 2 without an end: from then on
        // the uses of days 3, 5 and 6 were all under premium, and only day 8's drew on the grant.
        #expect(try engine.meterGrants(user: "u1", meter: "api_minutes", now: day(8)).map(\.used) == [1])
    }

    @Test(arguments: StoreBackend.allCases)
    func revokedAndExpiredGrantsKeepTheReplaysDraws(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let lasting = try grant(engine, 10, at: day(1))
        _ = try grant(engine, 10, expiry: .at(day(4)), at: day(1))
        try use(engine, 6, at: day(2))
        _ = try engine.revokeMeterGrant(id: lasting, now: day(3))
        try expectReplayed(engine, "u1", now: day(3))
        try use(engine, 6, at: day(3))
        try expectReplayed(engine, "u1", now: day(3))
        try use(engine, 6, at: day(5))
        try expectReplayed(engine, "u1", now: day(5))
        let states = try engine.meterGrants(user: "u1", meter: "api_minutes", now: day(5)).map(\.state)
        #expect(Set(states) == [.revoked, .expired])
    }

    @Test(arguments: StoreBackend.allCases)
    func aMergeOfTwoUsersWithGrantsKeepsTheReplaysDraws(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let account = try engine.createGuest(device: nil, now: day(1)).id
        _ = try engine.link(user: account, provider: "google", subject: "g-1", email: nil, now: day(1))
        _ = try grant(engine, 5, account, at: day(1))
        _ = try grant(engine, 8, expiry: .at(day(9)), at: day(1))
        try use(engine, 3, account, at: day(2))
        try use(engine, 6, at: day(3))
        try use(engine, 1, account, at: day(4))
        _ = try engine.merge(guest: "u1", into: account, policy: .union, dryRun: false, now: day(5))
        try expectReplayed(engine, account, now: day(5), kept: false)
        try use(engine, 4, account, at: day(6))
        try expectReplayed(engine, account, now: day(6))
    }

    @Test(arguments: StoreBackend.allCases)
    func anImportedUserIsReplayedUntilItsNextUse(backend: StoreBackend) throws {
        let source = try engine(backend)
        _ = try grant(source, 5, at: day(1))
        _ = try grant(source, 5, expiry: .at(day(3)), at: day(1))
        try use(source, 4, at: day(2))
        try use(source, 4, at: day(4))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("draws-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("u1.tar.gz").path
        _ = try source.exportBackup(.users(["u1"]), to: path, format: .tarGzip, now: day(5), toolVersion: "test")
        let (store, profile) = try backend.makeStore(profile: "voice")
        let target = GuestMode(profile: profile, store: store)
        _ = try target.importBackup(from: path, onConflict: .fail, dryRun: false, trustUnsigned: true, now: day(5))
        #expect(try draws(target, "u1").kept == nil, "a backup carries no kept draws")
        try expectReplayed(target, "u1", now: day(5), kept: false)
        #expect(
            try target.meterStatus(user: "u1", meter: "api_minutes", now: day(5))
                == source.meterStatus(user: "u1", meter: "api_minutes", now: day(5)))
        try use(target, 2, at: day(6))
        try expectReplayed(target, "u1", now: day(6))
    }

    @Test(arguments: StoreBackend.allCases)
    func checkNamesAKeptRowThatDisagreesWithItsLedger(backend: StoreBackend) throws {
        let engine = try engine(backend)
        let id = try grant(engine, 10, at: day(1))
        try use(engine, 4, at: day(2))
        var planted = try #require(try draws(engine, "u1").kept)
        planted.drawn = "\(id):3000000"
        try engine.store.write { try $0.keepMeterGrantDraws(planted) }
        #expect(
            try engine.grantDrawProblems() == [
                "the kept grant draws of meter api_minutes of user u1 say grant \(id) drew 3 but its ledger gives 4"
            ])
    }
}
