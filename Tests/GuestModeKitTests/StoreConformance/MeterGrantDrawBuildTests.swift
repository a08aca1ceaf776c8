import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModePostgres
@testable import GuestModeSQLite

/// The migration that marks the kept grant draws owed (SQLite v15,
/// PostgreSQL pg14, after v14 and pg13 shipped adding their table empty)
/// builds them for a store that already holds grants: every holder's row is
/// the replay's, later reads use it, and a build stopped after a batch is
/// finished by the next migration. The store is made at the current schema,
/// then taken back to the one before the kept draws, or to the one the
/// previous release left (v14, pg13: the table there, its rows not built).
@Suite("Meter grant draws: built by the migration that adds them")
struct MeterGrantDrawBuildTests {
    /// The voice profile with a second meter, monthly, of 5 pages for guests.
    private static let profileText: String = {
        var text = (try? template("voice")) ?? ""
        text = text.replacingOccurrences(
            of: "meters:\n  api_minutes:",
            with: "meters:\n  pages:\n    unit: pages\n    reset: monthly\n  api_minutes:")
        text = text.replacingOccurrences(
            of: "      api_minutes: 60", with: "      api_minutes: 60\n      pages: 5")
        text = text.replacingOccurrences(
            of: "      api_minutes: unlimited", with: "      api_minutes: unlimited\n      pages: unlimited")
        return text
    }()

    /// A store at the current schema with users holding grants of both meters, and uses.
    private func seeded(_ backend: StoreBackend) throws -> GuestMode {
        let (store, _) = try backend.makeStore(profile: "voice")
        try store.bindProfile(text: Self.profileText, origin: "voice-pages.yaml", now: day(1))
        let engine = try GuestMode(store: store, location: "test")
        #expect(engine.profile.meter(named: "pages") != nil)
        try makeGuests(["u1", "u2", "u3", "u4", "u5"], in: store, profile: engine.profile)
        func grant(
            _ user: String, _ meter: String, _ amount: MeterAmount, expiry: MeterGrantExpiry = .never, at time: Date
        )
            throws -> Int64
        {
            try engine.grantMeter(
                user: user, meter: meter, amount: amount, expiry: expiry, reason: nil, key: nil, now: time
            ).grant.id
        }
        func use(_ user: String, _ meter: String, _ amount: MeterAmount, at time: Date) throws {
            let used = try engine.useMeter(user: user, meter: meter, amount: amount, key: nil, now: time)
            #expect(used.isRecorded, "\(user) \(meter) \(amount)")
        }
        // u1: both meters, a grant revoked and one expired.
        let revoked = try grant("u1", "api_minutes", 10, at: day(1))
        _ = try grant("u1", "api_minutes", 10, expiry: .at(day(4)), at: day(1))
        _ = try grant("u1", "api_minutes", 20, at: day(1))
        _ = try grant("u1", "pages", 3, at: day(1))
        try use("u1", "api_minutes", 55, at: day(2))
        try use("u1", "pages", 7, at: day(2))
        try use("u1", "api_minutes", 10, at: day(3))
        _ = try engine.revokeMeterGrant(id: revoked, now: day(3))
        try use("u1", "api_minutes", 6, at: day(5))
        // u2: uses before every grant, then one after.
        try use("u2", "api_minutes", 30, at: day(1))
        try use("u2", "api_minutes", 20, at: day(2))
        _ = try grant("u2", "api_minutes", 15, at: day(3))
        try use("u2", "api_minutes", 14, at: day(4))
        // u3: a grant and no use; u4: a premium plan in the middle; u5: no grant at all.
        _ = try grant("u3", "pages", 2, at: day(2))
        _ = try grant("u4", "api_minutes", 5, at: day(1))
        _ = try engine.grantPlan(user: "u4", plan: "premium", trial: nil, until: day(4), now: day(2))
        try use("u4", "api_minutes", 58, at: day(1))
        try use("u4", "api_minutes", 30, at: day(3))
        try use("u5", "api_minutes", 4, at: day(2))
        return engine
    }

    /// The (user, meter) pairs that hold a grant in `seeded`.
    private static let holders = [
        ("u1", "api_minutes"), ("u1", "pages"), ("u2", "api_minutes"), ("u3", "pages"), ("u4", "api_minutes"),
    ]

    /// Where `rollBack` takes a store.
    private enum Before {
        /// Before the kept grant draws: their table, its triggers and both steps' records gone.
        case draws
        /// As the previous release left it, at v14 (pg13): the table, no row in it, v15 (pg14) not applied.
        case owed
    }

    /// Takes the store back to the schema `before`, with its steps pending.
    private func rollBack(_ store: any GuestStore, _ backend: StoreBackend, before: Before = .draws) throws {
        let sqlite =
            before == .draws
            ? """
            DROP TABLE meter_grant_draws; DROP TRIGGER meter_grant_draws_add;
            DROP TRIGGER meter_grant_draws_remove; DROP TRIGGER meter_grant_draws_move;
            DELETE FROM grdb_migrations WHERE identifier IN ('v14-meter-grant-draws', 'v15-meter-grant-draws-owed');
            """
            : """
            DELETE FROM meter_grant_draws; DELETE FROM grdb_migrations WHERE identifier = 'v15-meter-grant-draws-owed';
            """
        let postgres =
            before == .draws
            ? """
            DROP TABLE meter_grant_draws; DROP FUNCTION meter_grant_draws_forget_added() CASCADE;
            DROP FUNCTION meter_grant_draws_forget_removed() CASCADE;
            DELETE FROM schema_migrations WHERE identifier IN ('pg13-meter-grant-draws', 'pg14-meter-grant-draws-owed');
            """
            : """
            DELETE FROM meter_grant_draws; DELETE FROM schema_migrations WHERE identifier = 'pg14-meter-grant-draws-owed';
            """
        switch backend {
        case .sqlite, .sqlitePool:
            try #require(store as? SQLiteStore).write { db in try db.execute(sql: sqlite) }
        case .postgres:
            try #require(store as? PostgresStore).write { connection in _ = try connection.execute(postgres) }
        }
        let pending =
            backend == .postgres
            ? ["pg13-meter-grant-draws", "pg14-meter-grant-draws-owed"]
            : ["v14-meter-grant-draws", "v15-meter-grant-draws-owed"]
        #expect(try store.schemaStatus().pending == (before == .draws ? pending : [pending[1]]))
        #expect(try store.read { try $0.owedGrantDraws() } == nil, "nothing marks the build owed yet")
    }

    /// The kept row of each holder, and the one the replay of its whole ledger gives.
    private func draws(
        _ engine: GuestMode, _ userID: String, _ meterName: String
    ) throws -> (kept: MeterGrantDrawsRow?, replayed: MeterGrantDrawsRow) {
        try keptAndReplayedGrantDraws(engine, userID, meter: meterName)
    }

    private func statuses(_ engine: GuestMode) throws -> [MeterStatus] {
        try Self.holders.map { try engine.meterStatus(user: $0.0, meter: $0.1, now: day(6)) }
    }

    /// After the build: nothing owed, every holder's kept row the replay's, none for a user without grants, no
    /// problem for `db check`, the meters read as before, and a second migration with nothing to do. Returns the
    /// engine over the store.
    private func expectEveryHolderBuilt(
        _ store: any GuestStore, statusesBefore before: [MeterStatus]
    ) throws
        -> GuestMode
    {
        let engine = try GuestMode(store: store, location: "test")
        #expect(!engine.owedGrantDraws, "the build is done: nothing is owed")
        for (user, meter) in Self.holders {
            let (kept, replayed) = try draws(engine, user, meter)
            #expect(kept == replayed, "\(user) \(meter)")
        }
        #expect(try draws(engine, "u5", "api_minutes").kept == nil, "a user without grants has nothing to keep")
        #expect(try engine.grantDrawProblems() == [])
        #expect(try statuses(engine) == before)
        #expect(
            try GuestMode.migrate(store: store, location: "test") == StoreMigration(applied: [], grantDrawsBuilt: 0))
        return engine
    }

    @Test(arguments: StoreBackend.allCases)
    func theMigrationBuildsEveryHoldersDraws(backend: StoreBackend) throws {
        let seeded = try seeded(backend)
        let before = try statuses(seeded)
        try rollBack(seeded.store, backend)
        let migration = try GuestMode.migrate(store: seeded.store, location: "test")
        #expect(migration.applied.count == 2)
        #expect(migration.grantDrawsBuilt == Self.holders.count)
        let engine = try expectEveryHolderBuilt(seeded.store, statusesBefore: before)

        // A read uses the kept row: one planted in it shows in what the grant reads as having given.
        var planted = try #require(try draws(engine, "u3", "pages").kept)
        let grant = try #require(try engine.meterGrants(user: "u3", meter: "pages", now: day(6)).first)
        #expect(grant.used == 0)
        planted.drawn = "\(grant.id):1000000"
        try engine.store.write { try $0.keepMeterGrantDraws(planted) }
        #expect(try engine.meterGrants(user: "u3", meter: "pages", now: day(6)).first?.used == 1)
    }

    /// The store the previous release left: v14 (pg13) had added the table
    /// empty, and only the holders who used a meter since have a row (here
    /// u1's api_minutes). v15 (pg14) marks the build owed, which builds the
    /// rest and leaves the one kept as it was.
    @Test(arguments: StoreBackend.allCases)
    func aStoreThePreviousReleaseLeftAtV14GetsEveryHoldersDrawsBuilt(backend: StoreBackend) throws {
        let seeded = try seeded(backend)
        let before = try statuses(seeded)
        let used = try #require(try draws(seeded, "u1", "api_minutes").kept)
        try rollBack(seeded.store, backend, before: .owed)
        try seeded.store.write { try $0.keepMeterGrantDraws(used) }
        for (user, meter) in Self.holders where (user, meter) != ("u1", "api_minutes") {
            #expect(try draws(seeded, user, meter).kept == nil, "\(user) \(meter): not built yet")
        }
        let migration = try GuestMode.migrate(store: seeded.store, location: "test")
        #expect(
            migration
                == StoreMigration(
                    applied: [backend == .postgres ? "pg14-meter-grant-draws-owed" : "v15-meter-grant-draws-owed"],
                    grantDrawsBuilt: Self.holders.count - 1))
        _ = try expectEveryHolderBuilt(seeded.store, statusesBefore: before)
    }

    @Test(arguments: StoreBackend.allCases)
    func aBuildStoppedAfterABatchIsFinishedByTheNextMigration(backend: StoreBackend) throws {
        let seeded = try seeded(backend)
        let before = try statuses(seeded)
        try rollBack(seeded.store, backend)
        #expect(try seeded.store.applyPendingMigrations { _ in }.count == 2)
        struct Stop: Error {}
        var engine = try GuestMode(store: seeded.store, location: "test")
        #expect(engine.owedGrantDraws, "the step left the build owed")
        engine.faults = EngineFaults(afterGrantDrawsBatch: { throw Stop() })
        #expect(throws: Stop.self) { try engine.buildOwedGrantDraws(batchSize: 2) }
        let built = try Self.holders.filter { try draws(engine, $0.0, $0.1).kept != nil }
        #expect(built.count == 2, "one batch committed")
        // A part-built store reads exactly: what is not built replays.
        #expect(try engine.grantDrawProblems() == [])
        #expect(try statuses(engine) == before)
        #expect(try GuestMode(store: seeded.store, location: "test").owedGrantDraws, "the rest is still owed")
        let finished = try GuestMode.migrate(store: seeded.store, location: "test")
        #expect(finished == StoreMigration(applied: [], grantDrawsBuilt: Self.holders.count - 2))
        for (user, meter) in Self.holders {
            let (kept, replayed) = try draws(engine, user, meter)
            #expect(kept == replayed, "\(user) \(meter)")
        }
        #expect(try engine.grantDrawProblems() == [])
        #expect(try !GuestMode(store: seeded.store, location: "test").owedGrantDraws)
    }

    @Test(arguments: StoreBackend.allCases)
    func aStoreWithoutGrantsOwesNothing(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "voice")
        try makeGuests(["u1"], in: store, profile: profile)
        let engine = GuestMode(profile: profile, store: store)
        _ = try engine.useMeter(user: "u1", meter: "api_minutes", amount: 3, key: nil, now: day(2))
        try rollBack(store, backend)
        #expect(try GuestMode.migrate(store: store, location: "test").grantDrawsBuilt == 0)
        #expect(try !GuestMode(store: store, location: "test").owedGrantDraws)
        #expect(try store.read { try $0.owedGrantDraws() } == nil)
    }

    @Test func aMarkReadsBackWhateverTheUserID() {
        for holder in [
            MeterGrantHolder(userID: "u1", meter: "api_minutes"), MeterGrantHolder(userID: "a:b\nc", meter: "m:1"),
            MeterGrantHolder(userID: "", meter: "pages"), MeterGrantHolder(userID: "é€", meter: "x"),
        ] {
            #expect(OwedGrantDraws.holder(at: OwedGrantDraws.position(after: holder)) == holder)
        }
        #expect(OwedGrantDraws.holder(at: "") == nil)
        #expect(OwedGrantDraws.holder(at: "9:ab") == nil)
    }
}
