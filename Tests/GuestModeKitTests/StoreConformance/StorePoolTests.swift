import Dispatch
import Foundation
import GRDB
import Synchronization
import Testing

@testable import GuestModeKit
@testable import GuestModePostgres
@testable import GuestModeSQLite

/// PostgresStore's pool of connections: one connection per transaction,
/// never two threads on one, waiting for a free one within a deadline, and
/// a connection the server closed replaced.
@Suite("PostgreSQL: a pool of connections shared by many callers")
struct PostgresPoolTests {
    /// A store on a fresh schema of the test server, with its own pool.
    func makeStore(poolSize: Int, connectionWait: Duration = .seconds(30)) throws -> PostgresStore {
        let first = try StoreBackend.makePostgresStore()
        let uri = try #require(ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"])
        return try PostgresStore.open(
            uri: uri, schema: first.schema, poolSize: poolSize, connectionWait: connectionWait)
    }

    func backend(of store: PostgresStore) throws -> Int64 {
        try store.read { connection in try connection.execute("SELECT pg_backend_pid() AS pid").first!.int64("pid") }
    }

    @Test("64 threads at once share 4 connections, each transaction on one of its own")
    func sixtyFourThreadsShareFourConnections() throws {
        let store = try makeStore(poolSize: 4)
        let outcomes = Outcomes<Int64>()
        let threads = (0..<64).map { index in
            Thread {
                outcomes.add(
                    Result {
                        try store.write { connection in
                            try connection.execute(
                                "INSERT INTO meta (key, value) VALUES ($1, 'x')", [PostgresValue("k\(index)")])
                            // Long enough that the threads really overlap.
                            try connection.execute("SELECT pg_sleep(0.02)")
                            return try connection.execute("SELECT pg_backend_pid() AS pid").first!.int64("pid")
                        }
                    })
            }
        }
        let started = ContinuousClock.now
        threads.forEach { $0.start() }
        let results = outcomes.wait(for: 64)
        let elapsed = ContinuousClock.now - started
        let backends = try results.map { try $0.get() }
        #expect(Set(backends).count == 4, "connections used: \(Set(backends).count)")
        #expect(try store.read { try $0.execute("SELECT 1 FROM meta WHERE key LIKE 'k%'").count } == 64)
        #expect(elapsed >= .milliseconds(16 * 20), "four at a time: 16 rounds of 20 ms")
    }

    @Test("64 tasks at once on one store end exactly at the cap, with the default pool")
    func sixtyFourTasksKeepTheCap() async throws {
        let (store, profile) = try StoreBackend.postgres.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        let guest = try engine.createGuest(device: nil, now: day(1)).id
        let allowed = try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<64 {
                group.addTask {
                    try engine.putRecord(
                        user: guest, collection: "subscriptions", key: "s\(index)", json: "{}", now: day(2)
                    ).outcome == .allowed
                }
            }
            return try await group.reduce(into: 0) { $0 += $1 ? 1 : 0 }
        }
        #expect(allowed == 5)
    }

    @Test("with the one connection held, a transaction fails with try-again-later after the wait")
    func aFullPoolFailsAfterTheWait() throws {
        let store = try makeStore(poolSize: 1, connectionWait: .milliseconds(300))
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let holder = Outcomes<Void>()
        Thread {
            holder.add(
                Result {
                    try store.write { _ in
                        held.signal()
                        _ = release.wait(timeout: .now() + 30)
                    }
                })
        }.start()
        #expect(held.wait(timeout: .now() + 30) == .success)
        let started = ContinuousClock.now
        let refusal = #expect(throws: GuestModeError.self) { try store.read { (_: PostgresConnection) in } }
        let waited = ContinuousClock.now - started
        #expect(refusal?.code == .poolExhausted)
        #expect(refusal?.kind == .tryAgainLater)
        #expect(waited >= .milliseconds(300), "it waited \(waited) for the connection")
        release.signal()
        #expect(throws: Never.self) { try holder.first() }
        #expect(throws: Never.self) { try store.read { (_: PostgresConnection) in } }
    }

    @Test("a connection the server closed while idle is replaced, and nothing fails")
    func aTerminatedIdleConnectionIsReplaced() throws {
        let store = try makeStore(poolSize: 1, connectionWait: .seconds(5))
        let administrator = try makeStore(poolSize: 1)
        let first = try backend(of: store)
        try terminate(first, using: administrator)
        let second = try backend(of: store)
        #expect(second != first)
    }

    @Test("a connection lost inside a transaction fails that one with try-again-later; the next gets a new connection")
    func aConnectionLostMidTransactionIsDropped() throws {
        let store = try makeStore(poolSize: 1, connectionWait: .seconds(5))
        let administrator = try makeStore(poolSize: 1)
        let failure = #expect(throws: GuestModeError.self) {
            try store.write { connection in
                try connection.execute("INSERT INTO meta (key, value) VALUES ('lost', 'x')")
                let backend = try connection.execute("SELECT pg_backend_pid() AS pid").first!.int64("pid")
                try terminate(backend, using: administrator)
                try connection.execute("SELECT 1")
            }
        }
        #expect(failure?.kind == .tryAgainLater)
        #expect(try store.read { try $0.execute("SELECT 1 FROM meta WHERE key = 'lost'").count } == 0)
    }

    @Test("a read of one row is one round trip: BEGIN goes with the SELECT, COMMIT is not waited for")
    func aReadOfOneRowIsOneRoundTrip() throws {
        let store = try makeStore(poolSize: 1)
        let administrator = try makeStore(poolSize: 1)
        let statement = "SELECT current_setting($1) AS level, current_setting('transaction_read_only') AS reading"
        let isolation = [PostgresValue("transaction_isolation")]
        _ = try store.read { try $0.execute(statement, isolation) }
        var before = 0
        let (connection, row) = try store.read { connection in
            before = connection.roundTrips.load(ordering: .relaxed)
            return (connection, try connection.execute(statement, isolation).first!)
        }
        #expect(connection.roundTrips.load(ordering: .relaxed) - before == 1)
        #expect(try row.string("level") == "repeatable read")
        #expect(try row.string("reading") == "on")
        // The COMMIT went out: the server ends the transaction without waiting for the connection's next use.
        let backend = try backend(of: store)
        var state = ""
        for _ in 0..<500 {
            state = try administrator.read { connection in
                try connection.execute("SELECT state FROM pg_stat_activity WHERE pid = $1", [PostgresValue(backend)])
                    .first?.string("state") ?? ""
            }
            if state == "idle" { break }
            Thread.sleep(forTimeInterval: 0.01)
        }
        #expect(state == "idle", "the connection sits outside any transaction")
        before = connection.roundTrips.load(ordering: .relaxed)
        let written = try store.write { try $0.execute(statement, isolation).first! }
        #expect(
            connection.roundTrips.load(ordering: .relaxed) - before == 3, "a write waits for BEGIN, then for COMMIT")
        #expect(try written.string("level") == "read committed")
        #expect(try written.string("reading") == "off")
        let idle = connection.roundTrips.load(ordering: .relaxed)
        try store.read { (_: PostgresConnection) in }
        #expect(connection.roundTrips.load(ordering: .relaxed) == idle, "a transaction that runs nothing sends nothing")
    }

    @Test("an import's identities go in batches by COPY, not a question and an insert each")
    func importedIdentitiesGoInBatches() throws {
        let store = try makeStore(poolSize: 1)
        let identities = try #require(BackupTable.named("identities"))
        let users = (0..<2_000).map { "u\($0)" }
        let rows =
            users.map { (BackupTable.all[0], BackupRowFixture.user($0)) }
            + users.map { user -> (BackupTable, BackupRowFixture.Row) in
                (
                    identities,
                    [
                        "provider": .text("apple"), "subject": .text("sub-\(user)"), "user_id": .text(user),
                        "email": .null, "linked_at": BackupRowFixture.time(2),
                    ]
                )
            }
        // One thread: the pool lends its one connection.
        let connection = try store.read { (connection: PostgresConnection) in connection }
        let before = connection.roundTrips.load(ordering: .relaxed)
        try BackupRowFixture.load(rows, into: store)
        let trips = connection.roundTrips.load(ordering: .relaxed) - before
        // About 100: the import's own statements and a batch's. Each identity asked about and inserted on its
        // own was two round trips, 4,000 more.
        #expect(trips < 1_000, "\(trips) round trips for 4,000 rows")
        #expect(try store.read { try $0.execute("SELECT count(*) AS n FROM identities").first!.int64("n") } == 2_000)
    }

    @Test("a user import reads and writes its accounts a chunk at a time, not three round trips an account")
    func aUserImportGoesInChunks() throws {
        let (store, profile) = try StoreBackend.postgres.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        let accounts = (0..<2_000).map { index in
            let identity =
                index % 2 == 0 ? #","providerUserInfo":[{"providerId":"google.com","rawId":"g\#(index)"}]"# : ""
            return #"{"localId":"u\#(index)","createdAt":"1000"\#(identity)}"#
        }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("import-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data(("{\"users\": [\n" + accounts.joined(separator: ",\n") + "\n]}\n").utf8).write(to: url)
        // One thread: the pool lends the connection it was given back last.
        let postgres = try #require(store as? PostgresStore)
        let connection = try postgres.read { (connection: PostgresConnection) in connection }
        let before = connection.roundTrips.load(ordering: .relaxed)
        let report = try engine.importUsers(from: url, format: .firebase, now: day(2))
        let trips = connection.roundTrips.load(ordering: .relaxed) - before
        #expect(report.usersCreated == 2_000 && report.identities == 1_000)
        // Five a chunk of 500 (the users, their identities, the identities' owners, the inserts of each), and
        // the transaction's own; the account's user asked for and inserted, and each identity asked for and
        // inserted, were 6,000.
        #expect(trips < 40, "\(trips) round trips for 2,000 accounts")
        #expect(try postgres.read { try $0.execute("SELECT count(*) AS n FROM identities").first!.int64("n") } == 1_000)
    }

    @Test("a prompt decision reads the user and everything else it needs in one round trip")
    func aPromptDecisionReadsItsFactsAndInputsTogether() throws {
        // voice: two collections and a meter, each judged under the tier the plans give.
        let (store, profile) = try StoreBackend.postgres.makeStore(profile: "voice")
        let engine = GuestMode(profile: profile, store: store)
        let guest = try engine.createGuest(device: nil, now: day(1))
        _ = try engine.nextPrompt(user: guest.id, trigger: nil, now: day(2))
        // One thread: the pool lends the connection it was given back last.
        let postgres = try #require(store as? PostgresStore)
        let connection = try postgres.read { (connection: PostgresConnection) in connection }
        let before = connection.roundTrips.load(ordering: .relaxed)
        _ = try engine.nextPrompt(user: guest.id, trigger: nil, now: day(2))
        // BEGIN with the user's row, counters and outcomes, the plans, each collection's records, the meter's
        // kept total and its grants, raised triggers and the last reset, all together. COMMIT unawaited.
        #expect(connection.roundTrips.load(ordering: .relaxed) - before == 1)
        // A user not found is refused as before, though its inputs were read with it.
        #expect(throws: GuestModeError.self) { try engine.nextPrompt(user: "nobody", trigger: nil, now: day(2)) }
    }

    @Test("a meter check reads the user, the plans, the period's totals and the grants in one round trip")
    func aMeterCheckReadsItsFactsTogether() throws {
        let (store, profile) = try StoreBackend.postgres.makeStore(profile: "voice")
        let engine = GuestMode(profile: profile, store: store)
        let guest = try engine.createGuest(device: nil, now: day(1))
        _ = try engine.useMeter(user: guest.id, meter: "api_minutes", amount: 5, key: nil, now: day(2))
        let postgres = try #require(store as? PostgresStore)
        let connection = try postgres.read { (connection: PostgresConnection) in connection }
        func roundTrips(_ check: () throws -> MeterDecision) throws -> (Int, MeterDecision) {
            _ = try check()  // A statement new to the connection is prepared first, in a round trip of its own.
            let before = connection.roundTrips.load(ordering: .relaxed)
            let decision = try check()
            return (connection.roundTrips.load(ordering: .relaxed) - before, decision)
        }
        // BEGIN with the user, the plans, the totals and the grants. COMMIT unawaited.
        let (plain, allowed) = try roundTrips {
            try engine.checkMeter(user: guest.id, meter: "api_minutes", amount: 1, now: day(2))
        }
        #expect(plain == 1)
        #expect(allowed.isAllowed && allowed.status.used == 5)
        _ = try engine.grantMeter(
            user: guest.id, meter: "api_minutes", amount: 30, expiry: .never, reason: nil, key: nil, now: day(2))
        // And the kept draws of the grant; the plans read with the facts serve its ledger too.
        let (granted, decision) = try roundTrips {
            try engine.checkMeter(user: guest.id, meter: "api_minutes", amount: 80, now: day(2))
        }
        #expect(granted == 2)
        #expect(decision.status.allowance == allowed.status.allowance?.adding(30))
        // A user not found is refused as before, though its facts were read with it.
        #expect(throws: GuestModeError.self) {
            try engine.checkMeter(user: "nobody", meter: "api_minutes", amount: 1, now: day(2))
        }
    }

    @Test("a record get reads the user and its record in one statement")
    func aRecordGetReadsTheUserWithItsRecord() throws {
        let (store, profile) = try StoreBackend.postgres.makeStore(profile: "voice")
        let engine = GuestMode(profile: profile, store: store)
        let guest = try engine.createGuest(device: nil, now: day(1))
        _ = try engine.putRecord(
            user: guest.id, collection: "commands", key: "seed", json: #"{"phrase":"lights on"}"#, now: day(1))
        let postgres = try #require(store as? PostgresStore)
        let connection = try postgres.read { (connection: PostgresConnection) in connection }
        _ = try engine.record(user: guest.id, collection: "commands", key: "seed")
        let before = connection.roundTrips.load(ordering: .relaxed)
        let record = try engine.record(user: guest.id, collection: "commands", key: "seed")
        // BEGIN with the user joined to its record. COMMIT unawaited.
        #expect(connection.roundTrips.load(ordering: .relaxed) - before == 1)
        #expect(record.data == #"{"phrase":"lights on"}"#)
    }

    @Test("a meter use locks the user and reads its facts in one round trip, and reads its grants once")
    func aMeterUseReadsItsFactsWithTheLock() throws {
        let (store, profile) = try StoreBackend.postgres.makeStore(profile: "voice")
        let engine = GuestMode(profile: profile, store: store)
        let guest = try engine.createGuest(device: nil, now: day(1))
        let postgres = try #require(store as? PostgresStore)
        let connection = try postgres.read { (connection: PostgresConnection) in connection }
        var uses = 0
        func roundTrips() throws -> (Int, MeterUseResult) {
            uses += 1  // A statement new to the connection is prepared first, in a round trip of its own.
            _ = try engine.useMeter(user: guest.id, meter: "api_minutes", amount: 1, key: "w\(uses)", now: day(2))
            let before = connection.roundTrips.load(ordering: .relaxed)
            uses += 1
            let used = try engine.useMeter(
                user: guest.id, meter: "api_minutes", amount: 1, key: "use-\(uses)", now: day(2))
            return (connection.roundTrips.load(ordering: .relaxed) - before, used)
        }
        // BEGIN (a write's, alone: its first statement may wait for the lock); the locked user with its facts;
        // the key; the use; the user's activity; COMMIT.
        let (plain, recorded) = try roundTrips()
        #expect(plain == 6)
        #expect(recorded.isRecorded && recorded.status.used == 2)
        _ = try engine.useMeter(user: guest.id, meter: "api_minutes", amount: 1, key: "use-2", now: day(2))
        #expect(
            try engine.meterStatus(user: guest.id, meter: "api_minutes", now: day(2)).used == 2, "a key counts once")
        #expect(throws: GuestModeError.self) {
            try engine.useMeter(user: "nobody", meter: "api_minutes", amount: 1, key: nil, now: day(2))
        }
    }

    @Test("statements that need nothing of each other go in one round trip, their rows in order")
    func independentStatementsGoInOneRoundTrip() throws {
        let store = try makeStore(poolSize: 1)
        let insert = "INSERT INTO meta (key, value) VALUES ($1, $2)"
        let select = "SELECT value FROM meta WHERE key = $1"
        try store.write { connection in
            _ = try connection.execute([
                (insert, [PostgresValue("a"), PostgresValue("1")]), (insert, [PostgresValue("b"), PostgresValue("2")]),
            ])
        }
        let batch: [(sql: String, parameters: [PostgresValue?])] = [
            (select, [PostgresValue("b")]), ("SELECT $1::int + 1 AS n", [PostgresValue("41")]),
            (select, [PostgresValue("missing")]), (select, [PostgresValue("a")]),
        ]
        _ = try store.read { try $0.execute(batch) }
        var before = 0
        let (connection, answers) = try store.read { connection in
            before = connection.roundTrips.load(ordering: .relaxed)
            return (connection, try connection.execute(batch))
        }
        #expect(connection.roundTrips.load(ordering: .relaxed) - before == 1, "BEGIN and the four statements")
        #expect(try answers[0].first?.string("value") == "2")
        #expect(try answers[1].first?.int("n") == 42)
        #expect(answers[2].count == 0)
        #expect(try answers[3].first?.string("value") == "1")
        let first = try backend(of: store)
        #expect(throws: GuestModeError.self) {
            try store.read { connection in
                try connection.execute([
                    (select, [PostgresValue("a")]), ("SELECT 1 / $1::int AS quotient", [PostgresValue("0")]),
                    (select, [PostgresValue("b")]),
                ])
            }
        }
        #expect(try store.read { try $0.execute(batch) }.count == 4, "the connection serves the next read")
        #expect(try backend(of: store) == first, "the same connection, not a new one")
    }

    @Test("a first statement the server refuses fails its transaction alone; the connection serves the next")
    func aRefusedFirstStatementLeavesTheConnectionUsable() throws {
        let store = try makeStore(poolSize: 1)
        let insert = "INSERT INTO meta (key, value) VALUES ($1, $2)"
        _ = try store.write { try $0.execute(insert, [PostgresValue("twice"), PostgresValue("1")]) }
        let first = try backend(of: store)
        #expect(throws: GuestModeError.self) {
            try store.write { try $0.execute(insert, [PostgresValue("twice"), PostgresValue("2")]) }
        }
        #expect(throws: GuestModeError.self) {
            try store.read { try $0.execute("SELECT 1 / $1::int AS quotient", [PostgresValue("0")]) }
        }
        let value = try store.read { connection in
            try connection.execute("SELECT value FROM meta WHERE key = $1", [PostgresValue("twice")]).first!
                .string("value")
        }
        #expect(value == "1")
        #expect(try backend(of: store) == first, "the same connection, not a new one")
    }

    @Test("a connection closed while idle is replaced when the first statement goes with BEGIN")
    func aTerminatedIdleConnectionIsReplacedUnderAPipelinedBegin() throws {
        let store = try makeStore(poolSize: 1, connectionWait: .seconds(5))
        let administrator = try makeStore(poolSize: 1)
        let pid = "SELECT pg_backend_pid() AS pid, $1::text AS tag"
        let first = try store.read { try $0.execute(pid, [PostgresValue("a")]).first!.int64("pid") }
        try terminate(first, using: administrator)
        let second = try store.read { try $0.execute(pid, [PostgresValue("b")]).first!.int64("pid") }
        #expect(second != first)
    }

    @Test("a transaction inside another on the same thread joins it, even with a pool of one")
    func aNestedTransactionJoinsTheOuterOne() throws {
        let store = try makeStore(poolSize: 1, connectionWait: .milliseconds(500))
        let (outer, inner) = try store.write { connection in
            try connection.execute("INSERT INTO meta (key, value) VALUES ('nested', 'x')")
            let outer = try connection.execute("SELECT pg_backend_pid() AS pid").first!.int64("pid")
            let inner = try store.read { connection in
                #expect(try connection.execute("SELECT 1 FROM meta WHERE key = 'nested'").count == 1)
                return try connection.execute("SELECT pg_backend_pid() AS pid").first!.int64("pid")
            }
            return (outer, inner)
        }
        #expect(outer == inner)
    }

    @Test("a task started inside a transaction takes a connection of its own")
    func aTaskStartedInsideATransactionDoesNotShareIt() throws {
        let store = try makeStore(poolSize: 2)
        let (outer, inner) = try store.write { connection in
            let outer = try connection.execute("SELECT pg_backend_pid() AS pid").first!.int64("pid")
            // The task inherits the transaction's task-local lease, but runs on another
            // thread: one of its own, so that it never waits for the cooperative pool
            // this blocked test and all the others share.
            let seen = Outcomes<Int64>()
            Task(executorPreference: ThreadPerJobExecutor()) { seen.add(Result { try backend(of: store) }) }
            return (outer, try seen.first())
        }
        #expect(outer != inner)
    }

    @Test("a pool of no connections is refused as a usage error")
    func aPoolOfNothingIsRefused() throws {
        let uri = try #require(ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"])
        let refusal = #expect(throws: GuestModeError.self) { try PostgresStore.open(uri: uri, poolSize: 0) }
        #expect(refusal?.code == .invalidPoolSize)
    }

    /// Ends `backend` from another session, as an administrator would, and
    /// waits until the server has let it go.
    func terminate(_ backend: Int64, using administrator: PostgresStore) throws {
        _ = try administrator.write { connection in
            try connection.execute("SELECT pg_terminate_backend($1)", [PostgresValue(backend)])
        }
        for _ in 0..<500 {
            let alive = try administrator.read { connection in
                try connection.execute("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [PostgresValue(backend)]).count
            }
            if alive == 0 { return }
            Thread.sleep(forTimeInterval: 0.01)
        }
        Issue.record("backend \(backend) outlived pg_terminate_backend")
    }
}

/// SQLiteStore on a GRDB DatabasePool: reads in parallel with the write in
/// progress, and stores from earlier releases open and migrate on it.
@Suite("SQLite: a pool of readers beside one writer")
struct SQLitePoolTests {
    @Test("reads run and finish while a write is in progress, each on the last committed state")
    func readsRunDuringAWrite() throws {
        let store = try StoreBackend.makePooledSQLiteStore()
        let writing = DispatchSemaphore(value: 0)
        let readersDone = DispatchSemaphore(value: 0)
        let writer = Outcomes<Bool>()
        Thread {
            writer.add(
                Result {
                    try store.write { db in
                        try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('pending', 'x')")
                        writing.signal()
                        // Only readers that do not wait for this write can end this wait.
                        return readersDone.wait(timeout: .now() + 10) == .success
                    }
                })
        }.start()
        #expect(writing.wait(timeout: .now() + 30) == .success)
        let readers = Outcomes<Int>()
        for _ in 0..<8 {
            Thread {
                readers.add(
                    Result {
                        try store.read { db in
                            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM meta WHERE key = 'pending'") ?? -1
                        }
                    })
            }.start()
        }
        let seen = readers.wait(for: 8)
        readersDone.signal()
        #expect(try writer.first(), "the readers finished while the write was in progress")
        #expect(try seen.map { try $0.get() } == Array(repeating: 0, count: 8), "nothing uncommitted is seen")
        #expect(
            try store.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM meta WHERE key = 'pending'") } == 1)
    }

    @Test(
        "reads go through the store's own read-only connections, at most its readers; more at once through GRDB's pool"
    )
    func readsTakeTheStoresOwnConnections() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).sqlite").path
        try SQLiteStore.create(path: path, replacing: false) { _ in }
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let store = try SQLiteStore.open(path: path, connections: .pool(maximumReaders: 2))
        let readers = try #require(store.readers)
        #expect(try store.read { db in try Int.fetchOne(db, sql: "SELECT 1") } == 1)
        #expect(try store.read { db in try Int.fetchOne(db, sql: "SELECT 2") } == 2)
        #expect(readers.openCount == 1, "one read at a time takes the one idle connection again")
        #expect(throws: (any Error).self, "a read cannot write") {
            try store.read { db in try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('r', 'x')") }
        }

        // Six reads at once: two on the store's connections, two on GRDB's readers, two waiting for one.
        let inside = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let reads = Outcomes<Int>()
        for number in 0..<6 {
            Thread {
                reads.add(
                    Result {
                        try store.read { db in
                            inside.signal()
                            release.wait()
                            return try Int.fetchOne(db, sql: "SELECT ?", arguments: [number]) ?? -1
                        }
                    })
            }.start()
        }
        for _ in 0..<4 { #expect(inside.wait(timeout: .now() + 30) == .success) }
        #expect(readers.openCount == 2, "never more than the store's readers")
        for _ in 0..<6 { release.signal() }
        for _ in 0..<2 { #expect(inside.wait(timeout: .now() + 30) == .success) }
        #expect(try reads.wait(for: 6).map { try $0.get() }.sorted() == Array(0..<6))
        #expect(readers.openCount == 2)
        try store.close()
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"), "closed, the store is one file again")
    }

    static let sharedSQL = SQLText("SELECT \(2) AS two")

    @Test(
        "a read on the store's own connections keeps each statement prepared by its SQL's address; none outlives the store"
    )
    func readsKeepTheirStatementsPrepared() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).sqlite").path
        try SQLiteStore.create(path: path, replacing: false) { _ in }
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let store = try SQLiteStore.open(path: path, connections: .pool(maximumReaders: 1))
        func statements() throws -> [ObjectIdentifier] {
            try store.read { db in
                #expect(try Int.fetchOne(db.statement("SELECT 1 AS one")) == 1)
                #expect(try Int.fetchOne(db.statement(Self.sharedSQL)) == 2)
                return [
                    ObjectIdentifier(try db.statement("SELECT 1 AS one")),
                    ObjectIdentifier(try db.statement("SELECT 3 AS three")),
                    ObjectIdentifier(try db.statement(Self.sharedSQL)),
                    ObjectIdentifier(try db.cachedStatement(sql: "SELECT 1 AS one")),
                ]
            }
        }
        let first = try statements()
        #expect(Set(first).count == 4, "each SQL its own statement, not GRDB's cached one")
        #expect(try statements() == first, "the next read on the connection finds them prepared")

        // GRDB's cache where the read is not on one of the store's connections: the writer's.
        let onTheWriter = try store.write { db in
            (
                ObjectIdentifier(try db.statement("SELECT 1 AS one")),
                ObjectIdentifier(try db.cachedStatement(sql: "SELECT 1 AS one"))
            )
        }
        #expect(onTheWriter.0 == onTheWriter.1)

        try store.close()
        #expect(
            !FileManager.default.fileExists(atPath: path + "-wal"),
            "no statement keeps a connection open: closed, the store is one file again")
    }

    @Test(
        "what the store's reads remember is read again once anyone commits: a key revoked by another process is refused at once"
    )
    func rememberedReadsFollowEveryCommit() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).sqlite").path
        try SQLiteStore.create(path: path, replacing: false) { _ in }
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let store = try SQLiteStore.open(path: path, connections: .pool(maximumReaders: 1))
        try store.bindProfile(text: try template("voice"), origin: "voice.yaml", now: day(1))
        let readers = try #require(store.readers)
        let engine = try GuestMode(store: store, location: path)
        let first = try engine.createServerKey(named: "first", scope: .userData, now: day(1))
        #expect(try engine.serverKey(authenticating: first.secret)?.name == "first")
        #expect(readers.rememberedCount == 1, "the key's read is remembered")
        #expect(try engine.serverKey(authenticating: first.secret)?.name == "first")

        // Another process: a store of its own on the file, with connections of its own.
        let other = try SQLiteStore.open(path: path, connections: .single)
        _ = try GuestMode(store: other, location: path).revokeServerKey(named: "first", now: day(2))
        try other.closeConnections()
        #expect(
            try engine.serverKey(authenticating: first.secret) == nil, "revoked elsewhere: refused at the next read")

        // This process's own writer.
        let second = try engine.createServerKey(named: "second", scope: .userData, now: day(3))
        #expect(try engine.serverKey(authenticating: second.secret)?.name == "second")
        #expect(try engine.serverKey(authenticating: second.secret)?.name == "second")
        _ = try engine.revokeServerKey(named: "second", now: day(4))
        #expect(try engine.serverKey(authenticating: second.secret) == nil, "revoked here: refused at the next read")
        try store.close()
    }

    @Test(
        "the plan grants in force, remembered from one time, answer a later time only until one of them ends"
    )
    func rememberedGrantsInForceAnswerTheirSpanOnly() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).sqlite").path
        try SQLiteStore.create(path: path, replacing: false) { _ in }
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let store = try SQLiteStore.open(path: path, connections: .pool(maximumReaders: 1))
        let text = Timestamp.format
        try store.write { db in
            try db.execute(
                sql:
                    "INSERT INTO users (id, state, prompt_state, created_at, last_seen_at) VALUES ('u', 'anonymous', 'anonymous', ?, ?)",
                arguments: [text(day(1)), text(day(1))])
            for (plan, trialEnds, ends, revoked) in [
                ("ends", nil, day(10), nil), ("trial", day(5), day(20), nil), ("revoked", nil, nil, day(7)),
                ("forever", nil, nil, nil), ("trial-then-revoked", day(15), day(25), day(12)),
            ] as [(String, Date?, Date?, Date?)] {
                try db.execute(
                    sql:
                        "INSERT INTO plans (user_id, plan, granted_at, trial_ends_at, ends_at, revoked_at) VALUES ('u', ?, ?, ?, ?, ?)",
                    arguments: [plan, text(day(1)), trialEnds.map(text), ends.map(text), revoked.map(text)])
            }
        }
        // Every half day in an order that goes back and forth, on the one reader, with nothing written between:
        // each answer as the writer's connection, which remembers nothing, reads it.
        var times = (0..<52).map { day(1).addingTimeInterval(Double($0) * 43_200) }
        times += [day(6), day(2), day(12, hour: 11), day(12, hour: 13), day(12), day(9), day(30)]
        var generator = SystemRandomNumberGenerator()
        times.shuffle(using: &generator)
        for time in times {
            let read = try store.read { (transaction: any StoreTransaction) in
                try transaction.planGrants(of: "u", mayBeInForceAt: time).map(\.plan)
            }
            let written = try store.write { (transaction: any StoreTransaction) in
                try transaction.planGrants(of: "u", mayBeInForceAt: time).map(\.plan)
            }
            #expect(read == written, "at \(text(time))")
        }
        #expect(try #require(store.readers).rememberedCount == 1)
        try store.close()
    }

    @Test("a store of the first released schema opens on a pool, migrated, with its data")
    func aFirstReleaseStoreOpensOnAPool() throws {
        let fixture = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/store-v1-habits.sqlite")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("guestmode.sqlite").path
        try FileManager.default.copyItem(atPath: fixture.path, toPath: path)

        let store = try SQLiteStore.open(path: path, connections: .pool(maximumReaders: 2))
        #expect(try store.schemaStatus().pending == [])
        #expect(try store.integrityProblems() == [])
        let engine = try GuestMode(store: store, location: path)
        #expect(try engine.users(matching: UserFilter(), now: day(1)).count == 2)
        try store.close()
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"), "closed, the store is one file again")
    }

    @Test(
        "closeConnections does not wait for another process's reader as close's checkpoint does; the last to close removes the WAL",
        arguments: [SQLiteStore.Connections.single, .pool(maximumReaders: 2)])
    func closeConnectionsLeavesTheCheckpointToTheLastConnection(connections: SQLiteStore.Connections) throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).sqlite").path
        try SQLiteStore.create(path: path, replacing: false) { _ in }
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        // Another process's reader, in the middle of a read transaction over a WAL with frames in it.
        let other = try DatabaseQueue(path: path)
        try other.writeWithoutTransaction { db in try db.execute(sql: "INSERT INTO meta (key, value) VALUES ('w', 'x')")
        }
        let reading = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        Thread {
            try? other.read { db in
                _ = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM meta")
                reading.signal()
                release.wait()
            }
        }.start()
        reading.wait()
        defer { release.signal() }

        let waiting = try SQLiteStore.open(path: path, connections: connections, busyTimeout: .milliseconds(50))
        #expect(throws: GuestModeError.self, "close() checkpoints, which waits for the reader") { try waiting.close() }
        try waiting.closeConnections()
        let store = try SQLiteStore.open(path: path, connections: connections, busyTimeout: .milliseconds(50))
        #expect(try store.schemaStatus().pending == [])
        try store.closeConnections()
        #expect(FileManager.default.fileExists(atPath: path + "-wal"), "the reader's connection still holds the WAL")

        release.signal()
        try other.close()
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"), "the last connection folded the WAL back")
        let reopened = try SQLiteStore.open(path: path)
        #expect(
            try reopened.read { db in try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'w'") } == "x")
        try reopened.close()
    }

    @Test("a pool of no readers is refused as a usage error")
    func aPoolOfNoReadersIsRefused() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("\(UUID().uuidString).sqlite").path
        try SQLiteStore.create(path: path, replacing: false) { _ in }
        defer { try? FileManager.default.removeItem(atPath: path) }
        let refusal = #expect(throws: GuestModeError.self) {
            try SQLiteStore.open(path: path, connections: .pool(maximumReaders: 0))
        }
        #expect(refusal?.code == .invalidPoolSize)
    }
}

/// Results handed from threads to the test, waited for with a deadline.
private final class Outcomes<Value: Sendable>: Sendable {
    private let results = Mutex<[Result<Value, any Error>]>([])
    private let arrived = DispatchSemaphore(value: 0)

    func add(_ result: Result<Value, any Error>) {
        results.withLock { $0.append(result) }
        arrived.signal()
    }

    /// The first `count` results; a deadline passed is recorded, never a hang.
    func wait(for count: Int) -> [Result<Value, any Error>] {
        for _ in 0..<count where arrived.wait(timeout: .now() + 60) == .timedOut {
            Issue.record("a thread did not finish within 60 s")
            break
        }
        return results.withLock { $0 }
    }

    /// The first result's value, or its error.
    func first() throws -> Value {
        try #require(wait(for: 1).first).get()
    }
}

/// Runs each job of a task on a new thread of its own.
private final class ThreadPerJobExecutor: TaskExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        Thread { job.runSynchronously(on: executor) }.start()
    }
}
