import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModePostgres
@testable import GuestModeSQLite

/// Places where the two backends once decided differently, each pinned on
/// both: the guest-existence check before activity moves, a kept-both
/// conflict without a key, what racing adoptions count, and the prompt
/// steps of a replay.
@Suite("Backends agree where their copies drifted")
struct BackendAgreementTests {
    @Test(
        "a migration step that moves activity refuses a guest already gone, changing nothing",
        arguments: StoreBackend.allCases)
    func aStepRefusesAGuestAlreadyGone(backend: StoreBackend) throws {
        let (store, engine, guest, account) = try seededTransfer(backend)
        let steps = engine.transferSteps
        let id = try engine.startMigration(
            of: guest, into: account, steps: steps.map(\.name), backupPath: "b", now: day(3))
        try store.deleteUser(id: guest)
        let before = try observableState(engine)
        let activity = try #require(steps.firstIndex { $0.movesActivity })
        #expect(
            errorCode {
                _ = try engine.runMigrationStep(steps[activity], position: activity + 1, journalID: id, now: day(4))
            } == .guestAlreadyMoved)
        #expect(try observableState(engine) == before)
        let kept = try store.user(id: account)
        #expect(kept.createdAt == day(1) && kept.lastSeenAt >= day(1), "the account's times are its own")
    }

    @Test(
        "a conflict kept on both sides without a key for the guest's record is refused as no_free_key, writing nothing",
        arguments: StoreBackend.allCases)
    func keptBothWithoutAKeyIsRefused(backend: StoreBackend) throws {
        let (store, engine, guest, account) = try seededTransfer(backend)
        let before = try observableState(engine)
        let conflicts = [
            RecordConflict(
                collection: "preferences", key: "diet", guestUpdatedAt: day(2), accountUpdatedAt: day(1),
                resolution: .keptGuest, guestKeyAfter: nil, archivedData: #"{"diet":"omnivore"}"#),
            RecordConflict(
                collection: "recipes", key: "pasta", guestUpdatedAt: day(2), accountUpdatedAt: day(1),
                resolution: .keptBoth, guestKeyAfter: nil, archivedData: nil),
        ]
        #expect(
            errorCode {
                try store.write(durable: true) { transaction in
                    try Transfer(
                        transaction: transaction, profile: engine.profile, guest: guest, account: account, now: day(3)
                    ).settle(conflicts)
                }
            } == .noFreeKey)
        #expect(try observableState(engine) == before)
    }

    @Test(
        "adoptions racing for the same ownerless records count each record once, for the user who moved it",
        arguments: StoreBackend.allCases)
    func racingAdoptionsCountEachRecordOnce(backend: StoreBackend) async throws {
        let (store, profile) = try backend.makeStore(profile: "habits")
        let engine = GuestMode(profile: profile, store: store)
        let users = try (0..<4).map { _ in try engine.createGuest(device: nil, now: day(1)).id }
        let ownerless = 40
        for index in 0..<ownerless {
            _ = try engine.putOwnerlessRecord(collection: "habits", key: "h\(index)", json: "{}", now: day(1))
        }
        // Each adoption on a connection of its own, as separate processes run them.
        let engines = try users.map { _ in GuestMode(profile: profile, store: try backend.reopen(store)) }
        let reports = try await withThrowingTaskGroup(of: AdoptReport.self) { group in
            for (index, user) in users.enumerated() {
                group.addTask { try engines[index].adopt(user: user, now: day(2)) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(reports.map { $0.moved["habits", default: 0] }.reduce(0, +) == ownerless)
        for report in reports {
            #expect(report.collisions.isEmpty)
            #expect(
                report.moved["habits", default: 0]
                    == (try engine.records(user: report.user, collection: "habits").count),
                "\(report.user) reports what it holds")
        }
    }

    @Test(
        "a replay reads and moves prompt state exactly as recording an outcome does", arguments: StoreBackend.allCases)
    func replayPromptStepsAreTheStoresOwn(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        let engine = GuestMode(profile: profile, store: store)
        let (replayed, _) = try backend.makeStore(profile: "recipes")
        let user = newUser("u")
        try store.createUser(user, credentials: nil)
        // Outcomes at one instant keep the order they were recorded in.
        let entries = [
            PromptHistoryEntry(context: "first_recipe_success", outcome: .dismissed, at: day(2)),
            PromptHistoryEntry(context: "feature_discovery", outcome: .later, at: day(3)),
            PromptHistoryEntry(context: "first_recipe_success", outcome: .shown, at: day(3)),
            PromptHistoryEntry(context: "reengagement", outcome: .never, at: day(3)),
        ]
        var states: [PromptState?] = []
        for entry in entries {
            states.append(
                try engine.recordPrompt(entry.outcome, context: entry.context, user: "u", now: entry.at).promptState)
        }
        let replayedStates = try replayed.write { transaction in
            _ = try transaction.createMissingGuests(
                [(user.id, user.createdAt, user.createdAt)], state: .anonymous, promptState: User.newGuestPromptState)
            return try entries.map { try transaction.recordPromptOutcome($0, of: "u") }
        }
        #expect(replayedStates == states)
        let facts = try #require(try storedPromptFacts(store, of: "u"))
        #expect(facts.history.map(\.context) == entries.map(\.context))
        #expect(try storedPromptFacts(replayed, of: "u") == facts)
        #expect(try store.read { try $0.promptFacts(of: "u")?.facts } == facts)
    }
}

extension StoreBackend {
    /// Another connection to `store`, as another process would open it; an
    /// in-memory SQLite store has no other connection, and is shared.
    func reopen(_ store: any GuestStore) throws -> any GuestStore {
        switch self {
        case .sqlite, .sqlitePool: return store
        case .postgres:
            guard let postgres = store as? PostgresStore else { throw FixtureError.unsupported(self) }
            return try PostgresStore.open(
                uri: ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"] ?? "", schema: postgres.schema)
        }
    }
}

/// Many callers sharing one store in one process: every task goes through
/// the same `GuestStore`, and the store alone keeps the cap, the allowance
/// and the idempotency key.
@Suite("One store, 64 tasks at once")
struct SharedStoreConcurrencyTests {
    static let tasks = 64

    @Test(
        "a capped guest ends exactly at the cap and one idempotency key counts once", arguments: StoreBackend.allCases)
    func capAndKeyHoldUnderConcurrency(backend: StoreBackend) async throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        let guest = try engine.createGuest(device: nil, now: day(1)).id
        let outcomes = try await withThrowingTaskGroup(of: (CapOutcome, Bool).self) { group in
            for index in 0..<Self.tasks {
                group.addTask {
                    let put = try engine.putRecord(
                        user: guest, collection: "subscriptions", key: "s\(index)", json: #"{"n":\#(index)}"#,
                        now: day(2))
                    let tracked = try engine.track(
                        TrackedEvent(user: guest, action: "app_opened", at: day(2), count: 1, idempotencyKey: "launch"),
                        now: day(2))
                    return (put.outcome, tracked.isCounted)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(outcomes.filter { $0.0 == .allowed }.count == 5)
        #expect(outcomes.filter { $0.0 == .needsAccount }.count == Self.tasks - 5)
        #expect(try engine.records(user: guest, collection: "subscriptions").count == 5)
        #expect(outcomes.filter(\.1).count == 1, "the key is counted once")
        #expect(try engine.counters(user: guest)["app_opened"] == 1)
    }

    @Test("a metered guest ends exactly at the allowance", arguments: StoreBackend.allCases)
    func allowanceHoldsUnderConcurrency(backend: StoreBackend) async throws {
        let (store, profile) = try backend.makeStore(profile: "voice")
        let engine = GuestMode(profile: profile, store: store)
        let guest = try engine.createGuest(device: nil, now: day(1)).id
        let minute = MeterAmount(millionths: 1_000_000)
        let recorded = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<Self.tasks {
                group.addTask {
                    try engine.useMeter(
                        user: guest, meter: "api_minutes", amount: minute, key: "call-\(index)", now: day(2)
                    ).isRecorded
                }
            }
            return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        let status = try engine.meterStatus(user: guest, meter: "api_minutes", now: day(2))
        #expect(recorded == 60, "the guest allowance is 60 minutes")
        #expect(status.used == status.allowance && status.remaining == MeterAmount.zero)
    }
}
