import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

@Suite("Migration journal conformance")
struct MigrationStoreTests {
    /// The recipes profile's steps, as the engine builds them.
    func steps(_ engine: GuestMode) -> [TransferStep] { engine.transferSteps }

    @Test(arguments: StoreBackend.allCases)
    func startingAJournalRecordsPendingSteps(backend: StoreBackend) throws {
        let (_, engine, guest, account) = try seededTransfer(backend)
        #expect(try engine.unfinishedMigration(of: guest, into: account) == nil)
        let names = steps(engine).map(\.name)
        #expect(names == ["profile", "recipes", "photos", "preferences", "cleanup"])
        let id = try engine.startMigration(
            of: guest, into: account, steps: names, backupPath: "/backups/b.tar.zst", now: day(3))
        #expect(try engine.unfinishedMigration(of: guest, into: account) == id)
        #expect(try engine.unfinishedMigration(of: account, into: guest) == nil)
        let journal = try engine.journal(id)
        #expect(journal.kind == .guestToAccount && journal.status == .running)
        #expect(journal.source == guest && journal.target == account && journal.backupPath == "/backups/b.tar.zst")
        #expect(journal.startedAt == day(3) && journal.finishedAt == nil && journal.error == nil)
        #expect(journal.steps.map(\.position) == [1, 2, 3, 4, 5])
        #expect(journal.steps.map(\.name) == names)
        #expect(journal.steps.allSatisfy { $0.status == .pending && $0.rows == 0 && $0.finishedAt == nil })
        #expect(errorCode { _ = try engine.journal(id + 1000) } == .journalNotFound)
    }

    @Test(arguments: StoreBackend.allCases)
    func startRefusesAnUnfinishedPairAndUnmovableUsers(backend: StoreBackend) throws {
        let (_, engine, guest, account) = try seededTransfer(backend)
        let names = steps(engine).map(\.name)
        _ = try engine.startMigration(of: guest, into: account, steps: names, backupPath: "b", now: day(3))
        let before = try observableState(engine)
        #expect(
            errorCode {
                _ = try engine.startMigration(of: guest, into: account, steps: names, backupPath: "b", now: day(3))
            }
                == .migrationUnfinished)
        #expect(
            errorCode {
                _ = try engine.startMigration(of: account, into: guest, steps: names, backupPath: "b", now: day(3))
            }
                == .notAGuest)
        #expect(
            errorCode {
                _ = try engine.startMigration(of: guest, into: "nobody", steps: names, backupPath: "b", now: day(3))
            }
                == .userNotFound)
        #expect(try observableState(engine) == before)
    }

    @Test(arguments: StoreBackend.allCases)
    func stepsRunOnceEachAndTheLastFinishesTheJournal(backend: StoreBackend) throws {
        let (_, engine, guest, account) = try seededTransfer(backend)
        let plan = steps(engine)
        let id = try engine.startMigration(
            of: guest, into: account, steps: plan.map(\.name), backupPath: "b", now: day(3))
        var conflicts: [RecordConflict] = []
        for (index, step) in plan.enumerated() {
            let result = try #require(
                try engine.runMigrationStep(step, position: index + 1, journalID: id, now: day(4)))
            #expect(
                result.step
                    == JournalStep(
                        position: index + 1, name: step.name, status: .done, rows: result.step.rows, finishedAt: day(4)
                    ))
            conflicts += result.conflicts
            let journal = try engine.journal(id)
            #expect(journal.steps[index] == result.step, "the journal entry commits with the step")
            #expect(journal.status == (index == plan.count - 1 ? .done : .running))
            // Running a done step again changes nothing.
            let before = try observableState(engine)
            #expect(
                try engine.runMigrationStep(step, position: index + 1, journalID: id, now: day(5)) == nil)
            #expect(try observableState(engine) == before)
        }
        let journal = try engine.journal(id)
        #expect(journal.finishedAt == day(4))
        #expect(journal.steps.first?.rows ?? 0 > 0)
        #expect(journal.steps.last?.rows == 1, "cleanup: no uncovered records, then the guest")
        #expect(try engine.unfinishedMigration(of: guest, into: account) == nil)
        #expect(errorCode { _ = try engine.user(guest) } == .userNotFound)
        #expect(Set(conflicts.map(\.key)) == ["pasta", "diet"])
        let records = try recordLines(engine, account)
        #expect(records.contains(#"recipes/pasta~guest={"by":"guest"}"#))
        #expect(records.contains(#"preferences/diet={"diet":"vegan"}"#))
        #expect(try engine.counters(user: account)["app_opened"] == 5)
        #expect(try engine.journals(involving: guest).map(\.id) == [id])
    }

    @Test("a failing step rolls back whole, its journal entry included", arguments: StoreBackend.allCases)
    func failingStepRollsBack(backend: StoreBackend) throws {
        let (_, engine, guest, account) = try seededTransfer(backend)
        let names = steps(engine).map(\.name)
        let id = try engine.startMigration(of: guest, into: account, steps: names, backupPath: "b", now: day(3))
        let before = try observableState(engine)
        // Moving the activity succeeds, then removing a guest that still has records is refused.
        let failing = TransferStep(name: "profile", movesActivity: true, collections: [], removesGuest: true)
        #expect(
            errorCode {
                _ = try engine.runMigrationStep(failing, position: 1, journalID: id, now: day(4))
            }
                == .recordsLeftBehind)
        #expect(try observableState(engine) == before)
        #expect(
            try engine.counters(user: guest)["recipe_created"] == 2, "the activity moved in the failed step is back")
        #expect(try engine.journal(id).steps.first?.status == .pending)

        try engine.failMigration(journalID: id, position: 1, reason: "step 1 profile: records left behind")
        let failed = try engine.journal(id)
        #expect(failed.status == .failed && failed.error == "step 1 profile: records left behind")
        #expect(
            try engine.unfinishedMigration(of: guest, into: account) == id,
            "a failed migration is resumed, not restarted")

        // Resuming with the right step runs it and clears the failure.
        let step = try #require(steps(engine).first)
        #expect(
            try engine.runMigrationStep(step, position: 1, journalID: id, now: day(5)) != nil)
        let resumed = try engine.journal(id)
        #expect(resumed.status == .running && resumed.error == nil)
    }

    @Test(arguments: StoreBackend.allCases)
    func stepRefusalsChangeNothing(backend: StoreBackend) throws {
        let (_, engine, guest, account) = try seededTransfer(backend)
        let plan = steps(engine)
        let id = try engine.startMigration(
            of: guest, into: account, steps: plan.map(\.name), backupPath: "b", now: day(3))
        let before = try observableState(engine)
        #expect(
            errorCode {
                _ = try engine.runMigrationStep(plan[1], position: 1, journalID: id, now: day(4))
            }
                == .journalMismatch)
        #expect(
            errorCode {
                _ = try engine.runMigrationStep(plan[0], position: 9, journalID: id, now: day(4))
            }
                == .journalMismatch)
        #expect(
            errorCode {
                _ = try engine.runMigrationStep(plan[0], position: 1, journalID: id + 1000, now: day(4))
            }
                == .journalNotFound)
        #expect(try observableState(engine) == before)
    }

    @Test(arguments: StoreBackend.allCases)
    func journalsAreListedOldestFirstAndByUser(backend: StoreBackend) throws {
        let (_, engine, guest, account) = try seededTransfer(backend)
        #expect(try engine.journals(involving: nil).isEmpty)
        let other = try engine.createGuest(device: nil, now: day(2)).id
        let first = try engine.startMigration(
            of: guest, into: account, steps: ["profile"], backupPath: "b", now: day(3))
        let merged = try engine.merge(guest: other, into: account, policy: .union, dryRun: false, now: day(4))
        let second = try #require(merged.journalID)
        #expect(try engine.journals(involving: nil).map(\.id) == [first, second])
        #expect(try engine.journals(involving: account).map(\.id) == [first, second])
        #expect(try engine.journals(involving: guest).map(\.id) == [first])
        #expect(try engine.journals(involving: other).map(\.kind) == [.merge])
        #expect(try engine.journals(involving: "nobody").isEmpty)
    }
}
