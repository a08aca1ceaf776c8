import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModePostgres
@testable import GuestModeSQLite

/// Places where the two backends once decided differently, each pinned on
/// both: the guest-existence check before activity moves, a kept-both
/// conflict without a key, and the prompt steps of a replay.
@Suite("Backends agree where their copies drifted")
struct BackendAgreementTests {
    @Test(
        "a migration step that moves activity refuses a guest already gone, changing nothing",
        arguments: StoreBackend.allCases)
    func aStepRefusesAGuestAlreadyGone(backend: StoreBackend) throws {
        let (store, engine, guest, account) = try seededTransfer(backend)
        let steps = engine.transferSteps
        let id = try store.startMigration(
            of: guest, into: account, steps: steps.map(\.name), backupPath: "b", now: day(3))
        try store.deleteUser(id: guest)
        let before = try observableState(engine)
        let activity = try #require(steps.firstIndex { $0.movesActivity })
        #expect(
            errorCode {
                _ = try store.runMigrationStep(
                    steps[activity], position: activity + 1, journalID: id, profile: engine.profile, now: day(4))
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
                switch backend {
                case .sqlite:
                    let sqlite = try #require(store as? SQLiteStore)
                    try sqlite.write { db in
                        try SQLiteTransfer(
                            store: sqlite, profile: engine.profile, source: guest, target: account, now: day(3)
                        ).settle(conflicts, db)
                    }
                case .postgres:
                    let postgres = try #require(store as? PostgresStore)
                    try postgres.write { connection in
                        try PostgresTransfer(
                            store: postgres, profile: engine.profile, source: guest, target: account, now: day(3)
                        ).settle(conflicts, connection)
                    }
                }
            } == .noFreeKey)
        #expect(try observableState(engine) == before)
    }

    @Test("a replay reads and moves prompt state exactly as the prompt store does", arguments: StoreBackend.allCases)
    func replayPromptStepsAreTheStoresOwn(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "recipes")
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
            states.append(try store.recordPromptOutcome(entry, userID: "u", queuesBackup: false))
        }
        let replayedStates = try replayed.write { transaction in
            _ = try transaction.createMissingGuests([(user.id, user.createdAt)])
            return try entries.map { try transaction.recordPromptOutcome($0, of: "u") }
        }
        #expect(replayedStates == states)
        let facts = try #require(try store.promptFacts(userID: "u"))
        #expect(facts.history.map(\.context) == entries.map(\.context))
        #expect(try replayed.promptFacts(userID: "u") == facts)
        #expect(try store.read { try $0.promptFacts(of: "u") } == facts)
    }
}

/// Many callers sharing one store in one process: every task goes through
/// the same `GuestStore`, and the store alone keeps the cap, the allowance
/// and the idempotency key.
@Suite("One store, 64 tasks at once")
struct SharedStoreConcurrencyTests {
    static let tasks = 64

    @Test("a capped guest ends exactly at the cap and one idempotency key counts once", arguments: StoreBackend.allCases)
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
        #expect(try engine.counters(of: guest)["app_opened"] == 1)
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
