import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

@Suite("Transfer conformance")
struct TransferStoreTests {
    @Test(arguments: StoreBackend.allCases)
    func checkTransferAllowsAGuestIntoAnotherUser(backend: StoreBackend) throws {
        let (_, engine, guest, account) = try seededTransfer(backend)
        let before = try observableState(engine)
        try engine.checkTransfer(of: guest, into: account)
        #expect(errorCode { try engine.checkTransfer(of: "nobody", into: account) } == .userNotFound)
        #expect(errorCode { try engine.checkTransfer(of: guest, into: "nobody") } == .userNotFound)
        #expect(errorCode { try engine.checkTransfer(of: guest, into: guest) } == .sameUser)
        #expect(errorCode { try engine.checkTransfer(of: account, into: guest) } == .notAGuest)
        #expect(try observableState(engine) == before)
    }

    @Test(arguments: StoreBackend.allCases)
    func previewCountsEachStepAndChangesNothing(backend: StoreBackend) throws {
        let (_, engine, guest, account) = try seededTransfer(backend)
        let before = try observableState(engine)
        let steps = [
            TransferStep(name: "profile", movesActivity: true, collections: [], removesGuest: false),
            TransferStep(
                name: "recipes", movesActivity: false, collections: ["recipes", "photos"], removesGuest: false),
            TransferStep(name: "none", movesActivity: false, collections: [], removesGuest: false),
            TransferStep(
                name: "cleanup", movesActivity: false, collections: ["profile", "preferences"], removesGuest: true),
        ]
        let previews = try engine.previewTransfer(of: guest, into: account, steps: steps)
        #expect(previews.count == 4)
        #expect(previews[0].rows > 0 && previews[0].conflicts.isEmpty)
        #expect(previews[1].rows == 3)
        #expect(previews[1].conflicts.map(\.key) == ["pasta"])
        #expect(previews[1].conflicts.first?.resolution == .keptBoth)
        #expect(previews[1].conflicts.first?.guestKeyAfter == "pasta~guest")
        #expect(previews[2] == TransferStepPreview(rows: 0, conflicts: []))
        #expect(previews[3].rows == 3, "two records and the guest itself")
        #expect(previews[3].conflicts.map(\.resolution) == [.keptGuest], "the guest's diet is newer")
        #expect(try observableState(engine) == before)
        #expect(
            errorCode { _ = try engine.previewTransfer(of: account, into: guest, steps: steps) }
                == .notAGuest)
    }

    @Test(arguments: StoreBackend.allCases)
    func dryRunMergeReportsThePlanAndChangesNothing(backend: StoreBackend) throws {
        for policy in MergePolicy.allCases {
            let (_, engine, guest, account) = try seededTransfer(backend)
            let before = try observableState(engine)
            let plan = try engine.merge(
                guest: guest, into: account, policy: policy, dryRun: true, now: day(3))
            #expect(try observableState(engine) == before)
            #expect(plan.isDryRun && plan.journalID == nil)
            // Five guest records; one that loses to the account's record is archived, not moved.
            #expect(plan.recordsMoved == 5 - plan.conflicts.filter { $0.resolution == .keptAccount }.count)
            #expect(Set(plan.conflicts.map(\.key)) == ["pasta", "diet"])
            let merged = try engine.merge(
                guest: guest, into: account, policy: policy, dryRun: false, now: day(3))
            #expect(merged.conflicts == plan.conflicts, "the dry run predicts the merge (\(policy))")
            #expect(merged.recordsMoved == plan.recordsMoved, "the dry run reports the merge's counts (\(policy))")
            #expect(merged.activityMoved == plan.activityMoved)
        }
    }

    @Test(arguments: StoreBackend.allCases, MergePolicy.allCases)
    func mergeSettlesConflictsByPolicyAndRemovesTheGuest(backend: StoreBackend, policy: MergePolicy) throws {
        let (store, engine, guest, account) = try seededTransfer(backend)
        let report = try engine.merge(
            guest: guest, into: account, policy: policy, dryRun: false, now: day(3))
        #expect(!report.isDryRun)
        let journalID = try #require(report.journalID)
        let journal = try engine.journal(journalID)
        #expect(
            journal.kind == .merge && journal.status == .done && journal.source == guest && journal.target == account)
        #expect(errorCode { _ = try engine.user(guest) } == .userNotFound)
        #expect(try engine.counters(user: account)["app_opened"] == 5)
        #expect(try engine.counters(user: account)["recipe_created"] == 2)
        let records = try recordLines(engine, account)
        for line in [#"profile/me={"name":"Ana"}"#, #"recipes/soup={"by":"guest"}"#, #"photos/p1={"url":"p1"}"#] {
            #expect(records.contains(line))
        }
        let archived = report.conflicts.compactMap(\.archivedData).sorted()
        switch policy {
        case .keepGuest:
            #expect(
                records.contains(#"recipes/pasta={"by":"guest"}"#)
                    && records.contains(#"preferences/diet={"diet":"vegan"}"#))
            #expect(archived == [#"{"by":"account"}"#, #"{"diet":"omnivore"}"#])
        case .keepAccount:
            #expect(
                records.contains(#"recipes/pasta={"by":"account"}"#)
                    && records.contains(#"preferences/diet={"diet":"omnivore"}"#))
            #expect(archived == [#"{"by":"guest"}"#, #"{"diet":"vegan"}"#])
        case .union:
            #expect(
                records.contains(#"recipes/pasta={"by":"account"}"#)
                    && records.contains(#"recipes/pasta~guest={"by":"guest"}"#))
            #expect(records.contains(#"preferences/diet={"diet":"vegan"}"#))
            #expect(archived == [#"{"diet":"omnivore"}"#])
        }
        #expect(try store.tableCounts()["conflict_archive"] == archived.count)
    }

    @Test(arguments: StoreBackend.allCases)
    func refusedMergeChangesNothing(backend: StoreBackend) throws {
        let (_, engine, guest, account) = try seededTransfer(backend)
        let before = try observableState(engine)
        for dryRun in [false, true] {
            #expect(
                errorCode {
                    _ = try engine.merge(
                        guest: account, into: guest, policy: .union, dryRun: dryRun, now: day(3))
                } == .notAGuest)
            #expect(
                errorCode {
                    _ = try engine.merge(
                        guest: guest, into: "nobody", policy: .union, dryRun: dryRun, now: day(3))
                } == .userNotFound)
            #expect(
                errorCode {
                    _ = try engine.merge(
                        guest: guest, into: guest, policy: .union, dryRun: dryRun, now: day(3))
                } == .sameUser)
        }
        #expect(try observableState(engine) == before)
    }

    @Test(arguments: StoreBackend.allCases)
    func mergeReportsAnAccountPushedOverItsCap(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = try backend.engine(store, profile)
        let account = try engine.createGuest(device: nil, now: day(1)).id
        _ = try engine.link(user: account, provider: "apple", subject: "a", email: nil, now: day(1))
        let guest = try engine.createGuest(device: nil, now: day(1)).id
        for index in 1...4 {
            _ = try engine.putRecord(
                user: account, collection: "subscriptions", key: "a\(index)", json: "{}", now: day(1))
            _ = try engine.putRecord(
                user: guest, collection: "subscriptions", key: "g\(index)", json: "{}", now: day(1))
        }
        let plan = try engine.merge(
            guest: guest, into: account, policy: .union, dryRun: true, now: day(2))
        let merged = try engine.merge(
            guest: guest, into: account, policy: .union, dryRun: false, now: day(2))
        for report in [plan, merged] {
            #expect(report.overCap.map(\.collection) == ["subscriptions"])
            #expect(report.overCap.first?.used == 8)
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func adoptMovesOwnerlessRecordsOnceAndReportsCollisions(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "habits")
        let engine = try backend.engine(store, profile)
        let user = try engine.createGuest(device: nil, now: day(1)).id
        try backend.seedOwnerlessRecords(
            store, owner: profile.guestOwner,
            [
                ("habits", "h1", #"{"name":"Run"}"#),
                ("completions", "/h1/2026-10-01", #"{"day":"2026-10-01","habit":"h1"}"#),
                ("completions", "/h1/2026-10-02", #"{"day":"2026-10-02","habit":"h1"}"#),
                ("awards", "/2026-10-01", #"{"day":"2026-10-01"}"#),
            ], at: day(1))
        _ = try engine.putRecord(
            user: user, collection: "completions", key: "\(user)/h1/2026-10-02", json: #"{"mine":true}"#, now: day(1))
        let queuedBefore = try store.outboxEntries().filter { $0.userID == user }.map(\.queuedAt)

        let first = try engine.adopt(user: user, now: day(2))
        #expect(!first.wasAlreadyAdopted)
        #expect(first.moved == ["habits": 1, "completions": 1, "awards": 1])
        #expect(
            first.collisions == [
                .init(collection: "completions", key: "/h1/2026-10-02", keyAfter: "\(user)/h1/2026-10-02")
            ])
        let records = try recordLines(engine, user)
        #expect(records.contains(#"habits/h1={"name":"Run"}"#))
        #expect(records.contains(#"completions/\#(user)/h1/2026-10-01={"day":"2026-10-01","habit":"h1"}"#))
        #expect(
            records.contains(#"completions/\#(user)/h1/2026-10-02={"mine":true}"#), "a colliding key is not overwritten"
        )
        #expect(records.contains(#"awards/\#(user)/2026-10-01={"day":"2026-10-01"}"#))
        #expect(
            try store.outboxEntries().filter { $0.userID == user }.map(\.queuedAt) != queuedBefore, "a backup is queued"
        )

        let stable = try observableState(engine)
        let second = try engine.adopt(user: user, now: day(3))
        #expect(second.wasAlreadyAdopted && second.moved.isEmpty)
        #expect(second.collisions == first.collisions, "the colliding record is still left with the guest owner")
        #expect(try observableState(engine) == stable, "adopting twice is a no-op")
        #expect(
            errorCode { _ = try engine.adopt(user: "nobody", now: day(3)) }
                == .userNotFound)
        #expect(try observableState(engine) == stable)
    }

    /// An adoption that found nothing used to set the flag and
    /// block every later adoption.
    @Test(arguments: StoreBackend.allCases)
    func adoptWithNothingOwnerlessDoesNotBlockALaterAdoption(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "habits")
        let engine = try backend.engine(store, profile)
        let user = try engine.createGuest(device: nil, now: day(1)).id
        let stable = try observableState(engine)
        let first = try engine.adopt(user: user, now: day(2))
        #expect(!first.wasAlreadyAdopted && first.moved.isEmpty)
        #expect(try observableState(engine) == stable, "an adoption that finds nothing writes nothing")
        try backend.seedOwnerlessRecords(store, owner: profile.guestOwner, [("habits", "late", "{}")], at: day(3))
        let second = try engine.adopt(user: user, now: day(4))
        #expect(!second.wasAlreadyAdopted)
        #expect(second.moved == ["habits": 1])
        #expect(try recordLines(engine, user) == ["habits/late={}"])
    }

    /// Ownerless data that appears after a first adoption (the app fell back
    /// to guest mode offline) is adopted by the next run, nothing twice.
    @Test(arguments: StoreBackend.allCases)
    func adoptionIsIdempotentPerRecord(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "habits")
        let engine = try backend.engine(store, profile)
        let user = try engine.createGuest(device: nil, now: day(1)).id
        _ = try engine.putOwnerlessRecord(collection: "habits", key: "h1", json: #"{"name":"Run"}"#, now: day(1))
        _ = try engine.putOwnerlessRecord(
            collection: "completions", key: "/h1/2026-10-01", json: #"{"day":"2026-10-01"}"#, now: day(1))
        let first = try engine.adopt(user: user, now: day(2))
        #expect(first.moved == ["habits": 1, "completions": 1])
        _ = try engine.putOwnerlessRecord(
            collection: "completions", key: "/h1/2026-10-02", json: #"{"day":"2026-10-02"}"#, now: day(3))
        let second = try engine.adopt(user: user, now: day(4))
        #expect(second.wasAlreadyAdopted)
        #expect(second.moved == ["completions": 1])
        #expect(
            try recordLines(engine, user).sorted() == [
                #"completions/\#(user)/h1/2026-10-01={"day":"2026-10-01"}"#,
                #"completions/\#(user)/h1/2026-10-02={"day":"2026-10-02"}"#, #"habits/h1={"name":"Run"}"#,
            ])
        let stable = try observableState(engine)
        #expect(try engine.adopt(user: user, now: day(5)).moved.isEmpty)
        #expect(try observableState(engine) == stable)
        #expect(
            errorCode {
                _ = try engine.putOwnerlessRecord(collection: "completions", key: "h1/x", json: "{}", now: day(5))
            }
                == .ownerlessKeyWithoutOwner)
    }

    /// The loser of a keep-account merge is listed and restored under a new
    /// key, the winner untouched.
    @Test(arguments: StoreBackend.allCases)
    func conflictArchiveListAndRestore(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "habits")
        let engine = try backend.engine(store, profile)
        let guest = try engine.createGuest(device: nil, now: day(1)).id
        let account = try engine.createGuest(device: nil, now: day(1)).id
        _ = try engine.putRecord(user: guest, collection: "habits", key: "h1", json: #"{"by":"guest"}"#, now: day(1))
        _ = try engine.putRecord(
            user: account, collection: "habits", key: "h1", json: #"{"by":"account"}"#, now: day(2))
        _ = try engine.merge(guest: guest, into: account, policy: .keepAccount, dryRun: false, now: day(3))

        let archived = try engine.archivedConflicts(user: account)
        #expect(archived.count == 1)
        let entry = try #require(archived.first)
        #expect(entry.userID == account && entry.collection == "habits" && entry.key == "h1")
        #expect(entry.data == #"{"by":"guest"}"#)
        #expect(try engine.archivedConflicts(user: nil) == archived)
        #expect(errorCode { _ = try engine.archivedConflicts(user: "nobody") } == .userNotFound)

        let stable = try observableState(engine)
        #expect(errorCode { _ = try engine.restoreConflict(id: entry.id, key: "h1", now: day(4)) } == .recordKeyTaken)
        #expect(
            errorCode { _ = try engine.restoreConflict(id: entry.id + 1000, key: nil, now: day(4)) }
                == .conflictNotFound)
        #expect(try observableState(engine) == stable, "a refused restore changes nothing")

        let restored = try engine.restoreConflict(id: entry.id, key: nil, now: day(4))
        #expect(restored.restoredKey == "h1~restored")
        #expect(try engine.record(user: account, collection: "habits", key: "h1").data == #"{"by":"account"}"#)
        #expect(try engine.record(user: account, collection: "habits", key: "h1~restored").data == #"{"by":"guest"}"#)
        #expect(try engine.archivedConflicts(user: account).isEmpty)
    }
}
