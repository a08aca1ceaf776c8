import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModePostgres

/// Many processes sharing one PostgreSQL store: eight connections race on
/// the same guest → account migration and on one user's outbox entry. The
/// fixtures are written through `BackupRowStore` and state is read back the
/// same way, so these tests need nothing but the areas they exercise.
@Suite("PostgreSQL transfer and outbox concurrency", .serialized)
struct PostgresTransferConcurrencyTests {
    static let racers = 8

    // MARK: Migration

    @Test("8 processes start the same migration: one runs it, the others get a conflict, the result is one clean run")
    func racingStartsRunTheMigrationOnce() throws {
        let (store, profile) = try seededMigrationStore()
        let (reference, _) = try seededMigrationStore()
        try uninterruptedMigration(reference, profile)
        let steps = GuestMode(profile: profile, store: store).transferSteps
        let engines = try (0..<Self.racers).map { _ in GuestMode(profile: profile, store: try reopen(store)) }

        let refusals = Collected<GuestModeError.Code?>()
        let runs = Collected<Int>()
        let started = Collected<Int64>()
        let settled = Countdown(Self.racers - 1)
        race(Self.racers) { index in
            let engine = engines[index]
            do {
                // What `GuestMode.migrate(resuming: false)` does before its backup.
                if let id = try engine.unfinishedMigration(of: "guest", into: "acct") {
                    throw GuestModeError(.migrationUnfinished, "migration #\(id) is unfinished")
                }
                try engine.checkTransfer(of: "guest", into: "acct")
                let id = try engine.startMigration(
                    of: "guest", into: "acct", steps: steps.map(\.name), backupPath: "b", now: day(3))
                started.append(id)
                // Every other racer has tried to start before the winner moves anything, so all of
                // them meet the running journal (and none a guest already gone).
                settled.wait()
                for entry in try engine.journal(id).steps where entry.status != .done {
                    if try engine.runMigrationStep(
                        steps[entry.position - 1], position: entry.position, journalID: id, now: day(4)) != nil
                    {
                        runs.append(entry.position)
                    }
                }
            } catch {
                refusals.append((error as? GuestModeError)?.code)
                settled.done()
            }
        }
        #expect(started.all.count == 1, "exactly one racer starts the journal")
        #expect(refusals.all.count == Self.racers - 1)
        #expect(refusals.all.allSatisfy { $0 == .migrationUnfinished }, "\(refusals.all)")
        #expect(runs.all == Array(1...steps.count))
        try expectSameOutcome(store, reference, profile)
    }

    @Test("8 processes resume one migration: each step runs exactly once, nothing fails, the result is one clean run")
    func racingResumesRunEachStepOnce() throws {
        let (store, profile) = try seededMigrationStore()
        let (reference, _) = try seededMigrationStore()
        try uninterruptedMigration(reference, profile)
        let steps = GuestMode(profile: profile, store: store).transferSteps
        let id = try GuestMode(profile: profile, store: store).startMigration(
            of: "guest", into: "acct", steps: steps.map(\.name), backupPath: "b", now: day(3))
        let engines = try (0..<Self.racers).map { _ in GuestMode(profile: profile, store: try reopen(store)) }

        let failures = Collected<String>()
        let runs = Collected<Int>()
        race(Self.racers) { index in
            let engine = engines[index]
            do {
                // What `GuestMode.migrate(resuming: true)` does.
                guard let resumed = try engine.unfinishedMigration(of: "guest", into: "acct") else { return }
                for entry in try engine.journal(resumed).steps where entry.status != .done {
                    if try engine.runMigrationStep(
                        steps[entry.position - 1], position: entry.position, journalID: resumed, now: day(4)) != nil
                    {
                        runs.append(entry.position)
                    }
                }
            } catch {
                try? engine.failMigration(journalID: id, position: 1, reason: "\(error)")
                failures.append("\(error)")
            }
        }
        #expect(failures.all.isEmpty)
        #expect(runs.all.sorted() == Array(1...steps.count), "each step ran once: \(runs.all)")
        try expectSameOutcome(store, reference, profile)
    }

    // MARK: Outbox

    @Test("8 processes enqueue and push one user's backups: every outcome matches the commit order, no change is lost")
    func racingEnqueuesAndPushesLoseNothing() throws {
        let (store, profile) = try StoreBackend.postgres.makeStore(profile: "habits")
        #expect(profile.backup.queuesOnChange)
        let postgres = try #require(store as? PostgresStore)
        try BackupRowFixture.load([(try #require(BackupTable.named("users")), BackupRowFixture.user("u"))], into: store)
        // A test-only witness of commit order: every racing transaction bumps it last, holding its
        // lock until commit, so `n` orders the transactions as the server serialised them.
        _ = try postgres.write { connection in
            try connection.execute("CREATE TABLE race_clock (n BIGINT NOT NULL); INSERT INTO race_clock VALUES (0)")
        }
        let connections = try (0..<Self.racers).map { _ in try reopen(postgres) }
        let operations = 50

        enum Operation { case enqueue(prior: String?, queued: String), push(read: String, OutboxPushOutcome) }
        let log = Collected<(Int64, Operation)>()
        let failures = Collected<String>()
        let skipped = Collected<Int>()
        race(Self.racers) { index in
            let connection = connections[index]
            func tick(_ db: PostgresConnection) throws -> Int64 {
                try db.execute("UPDATE race_clock SET n = n + 1 RETURNING n").first?.int64("n") ?? -1
            }
            do {
                // The pushers start once something is queued: on a loaded machine they once ran all their reads
                // before the first enqueue committed, and the race had nothing to push.
                if index % 2 == 1 {
                    let start = ContinuousClock.now
                    while try !connection.outboxEntries().contains(where: { $0.userID == "u" }),
                        ContinuousClock.now - start < .seconds(30)
                    {
                        usleep(1_000)
                    }
                }
                for step in 0..<operations {
                    if index % 2 == 0 {
                        // A data change as every use case makes it: the user's row locked, then queued.
                        let now = day(2).addingTimeInterval(Double(index * operations + step))
                        let (prior, queued, n) = try connection.write { db in
                            let transaction = PostgresTransaction(store: connection, connection: db)
                            _ = try transaction.requireUser("u", locking: true)
                            // What was queued before, read under the same row lock the enqueue takes.
                            let prior = try db.execute("SELECT queued_at FROM outbox WHERE user_id = 'u' FOR UPDATE")
                                .first?.string("queued_at")
                            try transaction.noteChange(of: "u", profile: profile, now: now)
                            let queued =
                                try db.execute("SELECT queued_at FROM outbox WHERE user_id = 'u'").first?
                                .string("queued_at") ?? ""
                            return (prior, queued, try tick(db))
                        }
                        log.append((n, .enqueue(prior: prior, queued: queued)))
                    } else {
                        guard let entry = try connection.outboxEntries().first(where: { $0.userID == "u" }) else {
                            skipped.append(index)
                            // Nothing to push yet: give the enqueuers a moment rather than spend every read at once.
                            usleep(500)
                            continue
                        }
                        let (outcome, n) = try connection.write { db in
                            (try connection.recordPushSuccess(userID: "u", queuedAt: entry.queuedAt), try tick(db))
                        }
                        log.append((n, .push(read: Timestamp.format(entry.queuedAt), outcome)))
                    }
                }
            } catch {
                failures.append("\(error)")
            }
        }
        #expect(failures.all.isEmpty)
        let history = log.all.sorted { $0.0 < $1.0 }
        #expect(history.map(\.0) == Array(1...Int64(history.count)), "every transaction committed once")
        #expect(
            history.filter { if case .enqueue = $0.1 { true } else { false } }.count == Self.racers / 2 * operations)

        // Replayed one at a time in commit order: a push removes the entry only when it still holds
        // what the push read, and every enqueue finds exactly what the history left queued, so no
        // change was ever deleted unpushed. (A push may also report `removed` without touching
        // anything when the entry it finds absent is being re-created by an enqueue not yet
        // committed; that entry then stays queued, which the next enqueue or the end checks.)
        var queued: String?
        var removed = 0
        var kept = 0
        for (n, operation) in history {
            switch operation {
            case .enqueue(let prior, let value):
                #expect(
                    prior == queued, "enqueue #\(n) found \(prior ?? "nothing"), history says \(queued ?? "nothing")")
                if let prior { #expect(value > prior, "queued_at moves forward (#\(n))") }
                queued = value
            case .push(let read, let outcome):
                if queued == read || queued == nil {
                    #expect(outcome == .removed, "push #\(n) of \(read) with \(queued ?? "nothing") queued")
                    queued = nil
                }
                if outcome == .removed { removed += 1 } else { kept += 1 }
            }
        }
        let final = try store.outboxEntries()
        #expect(
            final.map { Timestamp.format($0.queuedAt) } == (queued.map { [$0] } ?? []),
            "the last change is still queued unless pushed")
        #expect(final.allSatisfy { $0.attempts == 0 && $0.lastError == nil })
        #expect(removed > 0)
        print(
            "outbox race: \(history.count) transactions, \(removed) pushes removed the entry, \(kept) kept it queued, \(skipped.all.count) reads found nothing queued"
        )
    }

    // MARK: Fixtures

    /// A recipes store holding an account and a guest that share the keys
    /// `recipes/pasta` (keep-both) and `preferences/diet` (the guest's newer),
    /// an idempotency key both used, and activity on both.
    func seededMigrationStore() throws -> (store: PostgresStore, profile: Profile) {
        let (store, profile) = try StoreBackend.postgres.makeStore(profile: "recipes")
        let postgres = try #require(store as? PostgresStore)
        func table(_ name: String) throws -> BackupTable {
            guard let table = BackupTable.named(name) else { throw FixtureError.unsupported(.postgres) }
            return table
        }
        typealias F = BackupRowFixture
        func record(
            _ owner: String, _ collection: String, _ key: String, _ data: String, _ day: Int
        ) throws
            -> (BackupTable, F.Row)
        {
            (
                try table("records"),
                [
                    "owner_id": .text(owner), "collection": .text(collection), "key": .text(key), "data": .text(data),
                    "created_at": F.time(day), "updated_at": F.time(day),
                ]
            )
        }
        func event(
            _ id: Int64, _ user: String, _ action: String, count: Int64, key: String?, _ day: Int
        ) throws
            -> (BackupTable, F.Row)
        {
            (
                try table("events"),
                [
                    "id": .integer(id), "user_id": .text(user), "action": .text(action), "at": F.time(day),
                    "count": .integer(count), "idempotency_key": key.map { .text($0) } ?? .null, "properties": .null,
                ]
            )
        }
        func counter(_ user: String, _ action: String, _ total: Int64) throws -> (BackupTable, F.Row) {
            (try table("counters"), ["user_id": .text(user), "action": .text(action), "total": .integer(total)])
        }
        try F.load(
            [
                (try table("users"), F.user("acct", created: 1, state: "linked", linkedAt: F.time(1))),
                (try table("users"), F.user("guest", created: 2)),
                (
                    try table("identities"),
                    [
                        "provider": .text("google"), "subject": .text("g-1"), "user_id": .text("acct"), "email": .null,
                        "linked_at": F.time(1),
                    ]
                ),
                try record("acct", "recipes", "pasta", #"{"by":"account"}"#, 1),
                try record("acct", "preferences", "diet", #"{"diet":"omnivore"}"#, 1),
                try record("guest", "profile", "me", #"{"name":"Ana"}"#, 2),
                try record("guest", "recipes", "pasta", #"{"by":"guest"}"#, 2),
                try record("guest", "recipes", "soup", #"{"by":"guest"}"#, 2),
                try record("guest", "photos", "p1", #"{"url":"p1"}"#, 2),
                try record("guest", "preferences", "diet", #"{"diet":"vegan"}"#, 2),
                try event(1, "acct", "app_opened", count: 3, key: "launch-1", 1),
                try event(2, "guest", "app_opened", count: 2, key: "launch-1", 2),
                try event(3, "guest", "recipe_created", count: 2, key: nil, 2),
                try counter("acct", "app_opened", 3),
                try counter("guest", "app_opened", 2),
                try counter("guest", "recipe_created", 2),
            ], into: store)
        return (postgres, profile)
    }

    /// The migration as one process runs it when nobody interferes.
    func uninterruptedMigration(_ store: PostgresStore, _ profile: Profile) throws {
        let engine = GuestMode(profile: profile, store: store)
        let steps = engine.transferSteps
        let id = try engine.startMigration(
            of: "guest", into: "acct", steps: steps.map(\.name), backupPath: "b", now: day(3))
        for (index, step) in steps.enumerated() {
            _ = try engine.runMigrationStep(step, position: index + 1, journalID: id, now: day(4))
        }
    }

    /// Same rows in every backup table, and one finished journal with the same steps, no failed one.
    func expectSameOutcome(_ store: PostgresStore, _ reference: PostgresStore, _ profile: Profile) throws {
        let exported = try BackupRowFixture.export(store, guestOwner: profile.guestOwner)
        #expect(exported == (try BackupRowFixture.export(reference, guestOwner: profile.guestOwner)))
        #expect(exported["users"]?.count == 1, "the guest is gone")
        #expect(
            exported["counters"]?.contains { $0["action"] == .text("app_opened") && $0["total"] == .integer(5) } == true
        )
        func summary(_ store: PostgresStore) throws -> [String] {
            try GuestMode(profile: profile, store: store).journals(involving: nil).map { journal in
                "\(journal.kind) \(journal.status) \(journal.error ?? "-") \(journal.steps.map { "\($0.name):\($0.status):\($0.rows)" })"
            }
        }
        let journals = try summary(store)
        #expect(journals == (try summary(reference)))
        #expect(journals.count == 1 && journals.allSatisfy { $0.hasPrefix("guest-to-account done - ") })
    }

    /// Another connection to the same store, as another process would open it.
    func reopen(_ store: PostgresStore) throws -> PostgresStore {
        let uri = ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"] ?? ""
        return try PostgresStore.open(uri: uri, schema: store.schema)
    }
}

/// Runs `body` on `count` threads of their own (blocking database calls
/// would starve a pool sized to the cores), released together.
private func race(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let ready = Countdown(count)
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            ready.done()
            ready.wait()
            body(index)
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    group.wait()
}

/// Values appended from many threads.
private final class Collected<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var values: [Value] = []

    func append(_ value: Value) {
        lock.lock()
        values.append(value)
        lock.unlock()
    }

    var all: [Value] {
        lock.lock()
        defer { lock.unlock() }
        return values
    }
}

/// Waits until `done()` was called `count` times.
private final class Countdown: @unchecked Sendable {
    private let condition = NSCondition()
    private var remaining: Int

    init(_ count: Int) { remaining = count }

    func done() {
        condition.lock()
        remaining -= 1
        condition.broadcast()
        condition.unlock()
    }

    /// Gives up after a minute, so a test that goes wrong fails rather than hangs.
    func wait() {
        let deadline = Date().addingTimeInterval(60)
        condition.lock()
        while remaining > 0, condition.wait(until: deadline) {}
        condition.unlock()
    }
}

/// Exports that span many cursor batches, and ids imported explicitly.
@Suite struct PostgresBackupStreamingTests {
    @Test(
        "an export streams more rows than one cursor batch, oldest id first; imported ids never collide with new ones")
    func exportsStreamInBatchesAndImportedIDsAreSkipped() throws {
        let (store, profile) = try StoreBackend.postgres.makeStore(profile: "recipes")
        let postgres = try #require(store as? PostgresStore)
        let events = try #require(BackupTable.named("events"))
        let count = 2_500
        try store.importBackupRows(dryRun: false) { writes throws in
            _ = try writes.insert(BackupRowFixture.user("u"), into: try #require(BackupTable.named("users")))
            // Ids in descending order, so the export's order is the store's, not the import's.
            for id in stride(from: Int64(count), through: 1, by: -1) {
                #expect(
                    try writes.insert(
                        [
                            "id": .integer(id * 2), "user_id": .text("u"), "action": .text("app_opened"),
                            "at": BackupRowFixture.time(1), "count": .integer(1), "idempotency_key": .null,
                            "properties": .null,
                        ], into: events) == .inserted)
            }
        }
        var ids: [Int64] = []
        try store.readBackupRows(.users(["u"]), guestOwner: profile.guestOwner) { snapshot throws in
            #expect(try snapshot.rowCount(in: events) == count)
            try snapshot.forEachRow(in: events) { columns, values in
                if let index = columns.firstIndex(of: "id"), case .integer(let id) = values[index] { ids.append(id) }
            }
        }
        #expect(ids == (1...Int64(count)).map { $0 * 2 })
        // A row the store numbers itself (as every use case writes them) comes after the imported ids.
        try postgres.write { transaction in
            try transaction.appendSystemEvent(user: "u", action: "app_opened", properties: [:], at: day(2))
        }
        let top = try postgres.read { connection in
            try connection.execute("SELECT max(id) AS top FROM events").first?.int64("top")
        }
        #expect(top == Int64(count) * 2 + 1)
    }
}
