import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

@Suite("MigrationJournalStore conformance")
struct MigrationStoreTests {
    /// The recipes profile's steps, as the engine builds them.
    func steps(_ engine: GuestMode) -> [TransferStep] { engine.transferSteps }

    @Test(arguments: StoreBackend.allCases)
    func startingAJournalRecordsPendingSteps(backend: StoreBackend) throws {
        let (store, engine, guest, account) = try seededTransfer(backend)
        #expect(try store.unfinishedMigration(of: guest, into: account) == nil)
        let names = steps(engine).map(\.name)
        #expect(names == ["profile", "recipes", "photos", "preferences", "cleanup"])
        let id = try store.startMigration(
            of: guest, into: account, steps: names, backupPath: "/backups/b.tar.zst", now: day(3))
        #expect(try store.unfinishedMigration(of: guest, into: account) == id)
        #expect(try store.unfinishedMigration(of: account, into: guest) == nil)
        let journal = try #require(try store.migrationJournal(id: id))
        #expect(journal.kind == "guest-to-account" && journal.status == "running")
        #expect(journal.source == guest && journal.target == account && journal.backupPath == "/backups/b.tar.zst")
        #expect(journal.startedAt == day(3) && journal.finishedAt == nil && journal.error == nil)
        #expect(journal.steps.map(\.position) == [1, 2, 3, 4, 5])
        #expect(journal.steps.map(\.name) == names)
        #expect(journal.steps.allSatisfy { $0.status == "pending" && $0.rows == 0 && $0.finishedAt == nil })
        #expect(try store.migrationJournal(id: id + 1000) == nil)
    }

    @Test(arguments: StoreBackend.allCases)
    func startRefusesAnUnfinishedPairAndUnmovableUsers(backend: StoreBackend) throws {
        let (store, engine, guest, account) = try seededTransfer(backend)
        let names = steps(engine).map(\.name)
        _ = try store.startMigration(of: guest, into: account, steps: names, backupPath: "b", now: day(3))
        let before = try observableState(engine)
        #expect(
            errorCode {
                _ = try store.startMigration(of: guest, into: account, steps: names, backupPath: "b", now: day(3))
            }
                == .migrationUnfinished)
        #expect(
            errorCode {
                _ = try store.startMigration(of: account, into: guest, steps: names, backupPath: "b", now: day(3))
            }
                == .notAGuest)
        #expect(
            errorCode {
                _ = try store.startMigration(of: guest, into: "nobody", steps: names, backupPath: "b", now: day(3))
            }
                == .userNotFound)
        #expect(try observableState(engine) == before)
    }

    @Test(arguments: StoreBackend.allCases)
    func stepsRunOnceEachAndTheLastFinishesTheJournal(backend: StoreBackend) throws {
        let (store, engine, guest, account) = try seededTransfer(backend)
        let plan = steps(engine)
        let id = try store.startMigration(
            of: guest, into: account, steps: plan.map(\.name), backupPath: "b", now: day(3))
        var conflicts: [RecordConflict] = []
        for (index, step) in plan.enumerated() {
            let result = try #require(
                try store.runMigrationStep(
                    step, position: index + 1, journalID: id, profile: engine.profile, now: day(4)))
            #expect(
                result.step
                    == JournalStep(
                        position: index + 1, name: step.name, status: "done", rows: result.step.rows, finishedAt: day(4)
                    ))
            conflicts += result.conflicts
            let journal = try #require(try store.migrationJournal(id: id))
            #expect(journal.steps[index] == result.step, "the journal entry commits with the step")
            #expect(journal.status == (index == plan.count - 1 ? "done" : "running"))
            // Running a done step again changes nothing.
            let before = try observableState(engine)
            #expect(
                try store.runMigrationStep(
                    step, position: index + 1, journalID: id, profile: engine.profile, now: day(5)) == nil)
            #expect(try observableState(engine) == before)
        }
        let journal = try #require(try store.migrationJournal(id: id))
        #expect(journal.finishedAt == day(4))
        #expect(journal.steps.first?.rows ?? 0 > 0)
        #expect(journal.steps.last?.rows == 1, "cleanup: no uncovered records, then the guest")
        #expect(try store.unfinishedMigration(of: guest, into: account) == nil)
        #expect(errorCode { _ = try engine.user(guest) } == .userNotFound)
        #expect(Set(conflicts.map(\.key)) == ["pasta", "diet"])
        let records = try recordLines(engine, account)
        #expect(records.contains(#"recipes/pasta~guest={"by":"guest"}"#))
        #expect(records.contains(#"preferences/diet={"diet":"vegan"}"#))
        #expect(try engine.counters(of: account)["app_opened"] == 5)
        #expect(try store.migrationJournals(involving: guest).map(\.id) == [id])
    }

    @Test("a failing step rolls back whole, its journal entry included", arguments: StoreBackend.allCases)
    func failingStepRollsBack(backend: StoreBackend) throws {
        let (store, engine, guest, account) = try seededTransfer(backend)
        let names = steps(engine).map(\.name)
        let id = try store.startMigration(of: guest, into: account, steps: names, backupPath: "b", now: day(3))
        let before = try observableState(engine)
        // Moving the activity succeeds, then removing a guest that still has records is refused.
        let failing = TransferStep(name: "profile", movesActivity: true, collections: [], removesGuest: true)
        #expect(
            errorCode {
                _ = try store.runMigrationStep(
                    failing, position: 1, journalID: id, profile: engine.profile, now: day(4))
            }
                == .recordsLeftBehind)
        #expect(try observableState(engine) == before)
        #expect(try engine.counters(of: guest)["recipe_created"] == 2, "the activity moved in the failed step is back")
        #expect(try store.migrationJournal(id: id)?.steps.first?.status == "pending")

        try store.failMigration(journalID: id, reason: "step 1 profile: records left behind")
        let failed = try #require(try store.migrationJournal(id: id))
        #expect(failed.status == "failed" && failed.error == "step 1 profile: records left behind")
        #expect(
            try store.unfinishedMigration(of: guest, into: account) == id,
            "a failed migration is resumed, not restarted")

        // Resuming with the right step runs it and clears the failure.
        let step = try #require(steps(engine).first)
        #expect(
            try store.runMigrationStep(step, position: 1, journalID: id, profile: engine.profile, now: day(5)) != nil)
        let resumed = try #require(try store.migrationJournal(id: id))
        #expect(resumed.status == "running" && resumed.error == nil)
    }

    @Test(arguments: StoreBackend.allCases)
    func stepRefusalsChangeNothing(backend: StoreBackend) throws {
        let (store, engine, guest, account) = try seededTransfer(backend)
        let plan = steps(engine)
        let id = try store.startMigration(
            of: guest, into: account, steps: plan.map(\.name), backupPath: "b", now: day(3))
        let before = try observableState(engine)
        #expect(
            errorCode {
                _ = try store.runMigrationStep(
                    plan[1], position: 1, journalID: id, profile: engine.profile, now: day(4))
            }
                == .journalMismatch)
        #expect(
            errorCode {
                _ = try store.runMigrationStep(
                    plan[0], position: 9, journalID: id, profile: engine.profile, now: day(4))
            }
                == .journalMismatch)
        #expect(
            errorCode {
                _ = try store.runMigrationStep(
                    plan[0], position: 1, journalID: id + 1000, profile: engine.profile, now: day(4))
            }
                == .journalNotFound)
        #expect(try observableState(engine) == before)
    }

    @Test(arguments: StoreBackend.allCases)
    func journalsAreListedOldestFirstAndByUser(backend: StoreBackend) throws {
        let (store, engine, guest, account) = try seededTransfer(backend)
        #expect(try store.migrationJournals(involving: nil).isEmpty)
        let other = try engine.createGuest(device: nil, now: day(2)).id
        let first = try store.startMigration(of: guest, into: account, steps: ["profile"], backupPath: "b", now: day(3))
        let merged = try store.mergeGuest(
            other, into: account, policy: .union, dryRun: false, profile: engine.profile, now: day(4))
        let second = try #require(merged.journalID)
        #expect(try store.migrationJournals(involving: nil).map(\.id) == [first, second])
        #expect(try store.migrationJournals(involving: account).map(\.id) == [first, second])
        #expect(try store.migrationJournals(involving: guest).map(\.id) == [first])
        #expect(try store.migrationJournals(involving: other).map(\.kind) == ["merge"])
        #expect(try store.migrationJournals(involving: "nobody").isEmpty)
    }
}
