import Foundation
import GuestModeCommandLine
import Testing

/// A small seeded generator (SplitMix64), so a failing crash round can be
/// replayed with GUESTMODE_CRASH_SEED.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// kill -9 at random points (the crash suite). `make test` runs a few
/// rounds of each; `make crash` sets GUESTMODE_CRASH_ROUNDS for many more.
enum Crash {
    static let environment = ProcessInfo.processInfo.environment
    static let rounds = max(1, Int(environment["GUESTMODE_CRASH_ROUNDS"] ?? "") ?? 2)
    static let seed = UInt64(environment["GUESTMODE_CRASH_SEED"] ?? "") ?? 14

    /// Starts the command in the sandbox, kills it with SIGKILL after
    /// `delay` seconds (if it is still running) and returns its exit status.
    /// (Processes are started from Swift, not from `sh -c '… &'`: the shell
    /// inherits a signal mask from the test process under which its `wait`
    /// never returns.)
    static func killAfter(_ delay: Double, _ sandbox: Sandbox, _ arguments: [String]) async throws -> Int32 {
        let process = try sandbox.start(arguments)
        try await Task.sleep(nanoseconds: UInt64(delay * 1_000_000_000))
        if process.isRunning { process.send(SIGKILL) }
        return await Sandbox.exitStatus(of: process).status
    }

    /// How long an uninterrupted run takes, to draw kill points inside it.
    static func timed(_ body: () async throws -> Void) async throws -> Double {
        let start = Date()
        try await body()
        return Date().timeIntervalSince(start)
    }

    static func leftovers(_ sandbox: Sandbox) -> [String] {
        let backups = sandbox.directory.appendingPathComponent("guestmode-backups").path
        let names = (try? FileManager.default.contentsOfDirectory(atPath: backups)) ?? []
        return names.filter { $0.contains(".tmp-") }
    }

    /// The account's data with user ids replaced, comparable across sandboxes.
    static func accountState(_ sandbox: Sandbox, account: String, guest: String) async throws -> String {
        try await sqlite(
            sandbox,
            """
            SELECT group_concat(line, char(10)) FROM (
              SELECT 'r ' || collection || '/' || replace(key, '\(guest)', 'G') || '=' || data AS line FROM records WHERE owner_id = '\(account)'
              UNION ALL SELECT 'c ' || action || '=' || total FROM counters WHERE user_id = '\(account)'
              UNION ALL SELECT 'e ' || action || ' ' || count || ' ' || replace(coalesce(idempotency_key, ''), '\(guest)', 'G') FROM events WHERE user_id = '\(account)'
              UNION ALL SELECT 'm ' || meter || ' ' || amount FROM meter_usage WHERE user_id = '\(account)'
              UNION ALL SELECT 'p ' || plan FROM plans WHERE user_id = '\(account)'
              UNION ALL SELECT 'a ' || collection || '/' || key || '=' || data FROM conflict_archive
              UNION ALL SELECT 'u ' || COUNT(*) FROM users
              ORDER BY line)
            """)
    }
}

extension Sandbox {
    /// Starts the binary in the sandbox without waiting for it; standard
    /// error goes to a pipe read by `exitStatus(of:)`.
    func start(_ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(
            Sandbox.binary.path, arguments: arguments, environment: environment, directory: directory.path,
            input: .null, output: .null, errors: .pipe)
    }

    /// Waits on a thread of its own for a started process; its status (-1 if it cannot be waited
    /// for) and standard error.
    static func exitStatus(of process: ChildProcess) async -> (status: Int32, stderr: String) {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let errors = process.errors?.readDataToEndOfFile() ?? Data()
                let status = (try? process.wait())?.status ?? -1
                continuation.resume(returning: (status, String(decoding: errors, as: UTF8.self)))
            }
        }
    }
}

@Suite("Crash suite: kill -9 at random points, then db check, all-or-nothing, and the same final state")
struct CrashTests {
    @Test(
        "track --from of a large log, with and without ids, killed at random points: nothing or everything, then repeated",
        arguments: [true, false])
    func trackFrom(withIDs: Bool) async throws {
        var generator = SeededGenerator(seed: Crash.seed &+ (withIDs ? 0 : 7))
        let lines = 20_000
        func prepare() async throws -> Sandbox {
            let sandbox = try await Sandbox.withStore("recipes")
            sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
            let guests = [try await sandbox.newGuest(), try await sandbox.newGuest()]
            let log = (0..<lines).map { index in
                withIDs
                    ? #"{"user":"\#(guests[index % 2])","action":"app_opened","id":"e\#(index)","props":{"n":\#(index)}}"#
                    : #"{"user":"\#(guests[index % 2])","action":"app_opened"}"#
            }
            try sandbox.write("events.ndjson", log.joined(separator: "\n") + "\n")
            return sandbox
        }
        let reference = try await prepare()
        let duration = try await Crash.timed { () async throws in
            #expect(try await reference.run("track", "--from", "events.ndjson").status == 0)
        }
        for round in 0..<Crash.rounds {
            let sandbox = try await prepare()
            let delay = Double.random(in: (duration * 0.1)...(duration * 1.1), using: &generator)
            let status = try await Crash.killAfter(delay, sandbox, ["track", "--from", "events.ndjson"])
            let check = try await sandbox.run("db", "check")
            #expect(check.status == 0, "round \(round) (killed after \(delay)s, status \(status)): \(check.stderr)")
            let events = try await sqlite(sandbox, "SELECT COUNT(*) FROM events")
            let counted = try await sqlite(sandbox, "SELECT coalesce(SUM(total), 0) FROM counters")
            #expect(events == counted, "round \(round): events \(events), counters \(counted)")
            // The log is one transaction: all of it or none.
            #expect(events == "0" || events == "\(lines)", "round \(round): \(events) of \(lines) events applied")
            // Without ids a finished run must not be repeated; with ids a repeat counts nothing more.
            if withIDs || events == "0" {
                let again = try await sandbox.run("track", "--from", "events.ndjson")
                #expect(again.status == 0, "round \(round): \(again.stderr)")
            }
            #expect(try await sqlite(sandbox, "SELECT SUM(total) FROM counters") == "\(lines)", "round \(round)")
            #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM events") == "\(lines)", "round \(round)")
        }
    }

    @Test("migrate, killed at random points, resumes or repeats to the uninterrupted run's state")
    func migrate() async throws {
        var generator = SeededGenerator(seed: Crash.seed &+ 1)
        let (reference, referenceGuest, referenceAccount) = try await seededRecipes()
        let duration = try await Crash.timed { () async throws in
            #expect(try await reference.run("migrate", referenceGuest, "--to", referenceAccount).status == 0)
        }
        let expected = try await Crash.accountState(reference, account: referenceAccount, guest: referenceGuest)
        for round in 0..<Crash.rounds {
            let (sandbox, guest, account) = try await seededRecipes()
            let delay = Double.random(in: 0...(duration * 1.1), using: &generator)
            let status = try await Crash.killAfter(delay, sandbox, ["migrate", guest, "--to", account])
            let check = try await sandbox.run("db", "check")
            #expect(check.status == 0, "round \(round) (killed after \(delay)s, status \(status)): \(check.stderr)")
            let resumed = try await sandbox.run("migrate", guest, "--to", account, "--resume")
            if resumed.status == 66 {
                // Nothing to resume: it never started (the guest is still there) or it had finished.
                if try await sqlite(sandbox, "SELECT COUNT(*) FROM users WHERE id = '\(guest)'") == "1" {
                    let again = try await sandbox.run("migrate", guest, "--to", account)
                    #expect(again.status == 0, "round \(round): \(again.stderr)")
                }
            } else {
                #expect(resumed.status == 0, "round \(round): \(resumed.stderr)")
            }
            #expect(try await sandbox.run("db", "check").status == 0)
            #expect(try await Crash.accountState(sandbox, account: account, guest: guest) == expected, "round \(round)")
            #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM migration_journals WHERE status != 'done'") == "0")
            #expect(Crash.leftovers(sandbox).isEmpty, "round \(round): \(Crash.leftovers(sandbox))")
        }
    }

    @Test("merge, killed at random points, is all or nothing and a repeat reaches the same state")
    func merge() async throws {
        var generator = SeededGenerator(seed: Crash.seed &+ 2)
        let (reference, referenceGuest, referenceAccount) = try await seededRecipes()
        let duration = try await Crash.timed { () async throws in
            let merged = try await reference.run(
                "merge", referenceGuest, "--into", referenceAccount, "--policy", "union")
            #expect(merged.status == 0, "\(merged.stderr)")
        }
        let expected = try await Crash.accountState(reference, account: referenceAccount, guest: referenceGuest)
        for round in 0..<Crash.rounds {
            let (sandbox, guest, account) = try await seededRecipes()
            let before = try await Crash.accountState(sandbox, account: account, guest: guest)
            let delay = Double.random(in: 0...(duration * 1.1), using: &generator)
            let status = try await Crash.killAfter(
                delay, sandbox, ["merge", guest, "--into", account, "--policy", "union"])
            #expect(
                try await sandbox.run("db", "check").status == 0, "round \(round) (after \(delay)s, status \(status))")
            let guestLeft = try await sqlite(sandbox, "SELECT COUNT(*) FROM users WHERE id = '\(guest)'") == "1"
            let state = try await Crash.accountState(sandbox, account: account, guest: guest)
            #expect(state == (guestLeft ? before : expected), "round \(round): a merge is all or nothing")
            if guestLeft {
                let again = try await sandbox.run("merge", guest, "--into", account, "--policy", "union")
                #expect(again.status == 0, "round \(round): \(again.stderr)")
            }
            #expect(try await Crash.accountState(sandbox, account: account, guest: guest) == expected, "round \(round)")
        }
    }

    @Test("profile apply, killed at random points, leaves version 1 or version 2 whole")
    func profileApply() async throws {
        var generator = SeededGenerator(seed: Crash.seed &+ 3)
        func prepare() async throws -> Sandbox {
            let sandbox = try await Sandbox.withStore("subscriptions")
            sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
            let guest = try await sandbox.newGuest()
            for index in 0..<5 {
                let put = try await sandbox.run(
                    "record", "put", guest, "subscriptions", "s\(index)", "--data",
                    #"{"name":"s\#(index)","cost":\#(index)}"#)
                #expect(put.status == 0)
            }
            #expect(
                try await sandbox.run("record", "put", guest, "settings", "theme", "--data", #"{"dark":true}"#).status
                    == 0)
            var text = try String(
                contentsOf: Sandbox.packageRoot.appendingPathComponent("Templates/subscriptions.yaml"), encoding: .utf8)
            text = text.replacingOccurrences(of: "version: 1", with: "version: 2")
                .replacingOccurrences(of: "  settings:\n", with: "  preferences:\n")
                .replacingOccurrences(of: "collections: [settings]", with: "collections: [preferences]")
            try sandbox.write(
                "v2.yaml",
                text + """
                    upgrade:
                      from: 1
                      steps:
                        - rename_collection: { from: settings, to: preferences }
                        - rename_field: { collection: subscriptions, from: cost, to: price }
                    """)
            return sandbox
        }
        func dump(_ sandbox: Sandbox) async throws -> String {
            try await sqlite(
                sandbox,
                "SELECT group_concat(collection || '/' || key || '=' || data, ' ') FROM (SELECT * FROM records ORDER BY collection, key)"
            )
        }
        let reference = try await prepare()
        let original = try await dump(reference)
        let duration = try await Crash.timed { () async throws in
            #expect(try await reference.run("profile", "apply", "v2.yaml").status == 0)
        }
        let expected = try await dump(reference)
        for round in 0..<Crash.rounds {
            let sandbox = try await prepare()
            let delay = Double.random(in: 0...(duration * 1.1), using: &generator)
            let status = try await Crash.killAfter(delay, sandbox, ["profile", "apply", "v2.yaml"])
            #expect(
                try await sandbox.run("db", "check").status == 0, "round \(round) (after \(delay)s, status \(status))")
            let version = try await sandbox.run("profile", "show", "--json").object["version"] as? Int
            let state = try await dump(sandbox)
            #expect(state == (version == 2 ? expected : original), "round \(round): version \(version ?? 0), \(state)")
            if version != 2 { #expect(try await sandbox.run("profile", "apply", "v2.yaml").status == 0) }
            #expect(try await dump(sandbox) == expected)
        }
    }
}

@Suite("Races and leftovers")
struct RaceAndLeftoverTests {
    @Test("several migrate G --to A at once: one succeeds, the others exit 14, no failed journal")
    func concurrentMigrate() async throws {
        for _ in 0..<3 {
            let (sandbox, guest, account) = try await seededRecipes()
            let processes = try (0..<6).map { _ in try sandbox.start(["migrate", guest, "--to", account]) }
            var results: [(status: Int32, stderr: String)] = []
            for process in processes { results.append(await Sandbox.exitStatus(of: process)) }
            let statuses = results.map { String($0.status) }
            let errors = results.map(\.stderr).joined(separator: "\n")
            #expect(statuses.filter { $0 == "0" }.count == 1, "\(statuses): \(errors)")
            #expect(statuses.filter { $0 == "14" }.count == 5, "\(statuses): \(errors)")
            #expect(!errors.contains("NOT NULL"))
            #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM migration_journals WHERE status != 'done'") == "0")
            #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM users WHERE id = '\(guest)'") == "0")
            #expect(try await sandbox.run("db", "check").status == 0)
        }
    }

    /// The pid of a process that has exited.
    private func deadPID(_ sandbox: Sandbox) async throws -> String {
        try await sandbox.shell("sh -c 'echo $$'").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("a backup temp file left by a killed migrate is removed by the next migrate; a live one is kept")
    func staleBackupTemporary() async throws {
        let (sandbox, guest, account) = try await seededRecipes()
        let folder = sandbox.directory.appendingPathComponent("guestmode-backups")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let dead = try await deadPID(sandbox)
        let stale = ".migrate-2026-11-01T100000.000Z-abcdefgh.gmbackup.tmp-\(dead)-12345"
        let live = ".migrate-2026-11-01T100000.000Z-abcdefgh.gmbackup.tmp-1-12345"
        let unrelated = "notes.tmp-\(dead)-1"
        for name in [stale, live, unrelated] {
            try Data("partial".utf8).write(to: folder.appendingPathComponent(name))
        }
        let migrated = try await sandbox.run("migrate", guest, "--to", account)
        #expect(migrated.status == 0, "\(migrated.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(!names.contains(stale), "the abandoned temp file is removed")
        #expect(names.contains(live), "pid 1 is alive: its file is not ours to remove")
        #expect(names.contains(unrelated))
    }

    @Test("a track --from - spool left by a killed run is removed by the next one")
    func staleSpool() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        sandbox.environment["TMPDIR"] = sandbox.directory.path
        let guest = try await sandbox.newGuest()
        let dead = try await deadPID(sandbox)
        let stale = "guestmode-track-\(dead)-\(UUID().uuidString).ndjson"
        try sandbox.write(stale, "{}\n")
        let tracked = try await sandbox.run(
            "track", "--from", "-", input: #"{"user":"\#(guest)","action":"app_opened"}"# + "\n")
        #expect(tracked.status == 0, "\(tracked.stderr)")
        let names = try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path)
        #expect(!names.contains(stale))
        #expect(!names.contains { $0.hasPrefix("guestmode-track-") }, "\(names)")
    }

    /// A store of 400 guests with 1,600 events, exported whole to `all.gmbackup`, and an empty
    /// store `fresh.sqlite` beside it to import into.
    private func wholeStoreArchive() async throws -> Sandbox {
        let sandbox = try await Sandbox.withStore("recipes")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let log = (0..<1_600).map { #"{"user":"g\#($0 % 400)","action":"app_opened","id":"e\#($0)"}"# }
        try sandbox.write("events.ndjson", log.joined(separator: "\n") + "\n")
        #expect(try await sandbox.run("track", "--from", "events.ndjson", "--create-users").status == 0)
        #expect(try await sandbox.run("backup", "export", "--all", "--out", "all.gmbackup").status == 0)
        #expect(try await sandbox.run("init", "--profile", "recipes", "--store", "fresh.sqlite").status == 0)
        return sandbox
    }

    private static let importIntoFresh = [
        "--store", "fresh.sqlite", "backup", "import", "all.gmbackup", "--trust-unsigned", "--quiet",
    ]

    @Test(
        "backup import alone on a store writes through a rollback journal: killed part way, nothing is in, and the next import ends in WAL mode"
    )
    func importKilledWithRollbackJournal() async throws {
        let sandbox = try await wholeStoreArchive()
        let killed = try await sandbox.run(
            arguments: Self.importIntoFresh, environment: ["GUESTMODE_TEST_STOP_AFTER": "backup-import-rows"])
        #expect(killed.signalled, "the import was to be killed part way: \(killed.status) \(killed.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path)
        // Each page went to the store file once, the old ones saved in the journal: no WAL.
        #expect(files.contains("fresh.sqlite-journal"), "\(files)")
        #expect(!files.contains("fresh.sqlite-wal"), "\(files)")
        let check = try await sandbox.run("--store", "fresh.sqlite", "db", "check")
        #expect(check.status == 0, "\(check.stderr)")
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM users", store: "fresh.sqlite") == "0")
        let schema = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"
        let freshSchema = try await sqlite(sandbox, schema, store: "fresh.sqlite")
        let imported = try await sandbox.run(arguments: Self.importIntoFresh)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try await sqlite(sandbox, "PRAGMA journal_mode", store: "fresh.sqlite") == "wal")
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM events", store: "fresh.sqlite") == "1600")
        // The plain indexes it dropped while the rows went in are built again, the same, and used.
        #expect(try await sqlite(sandbox, schema, store: "fresh.sqlite") == freshSchema)
        #expect(try await sqlite(sandbox, "PRAGMA integrity_check", store: "fresh.sqlite") == "ok")
        let plan = try await sqlite(
            sandbox, "EXPLAIN QUERY PLAN SELECT * FROM events WHERE user_id = 'g1' ORDER BY at", store: "fresh.sqlite")
        #expect(plan.contains("events_user_at"), "\(plan)")
    }

    @Test("backup import of a store another process holds open runs in WAL mode, as before")
    func importBesideAnotherConnection() async throws {
        let sandbox = try await wholeStoreArchive()
        // sqlite3 keeps its connection open while its standard input is.
        let holder = try ChildProcess(
            "/usr/bin/sqlite3", arguments: [sandbox.path("fresh.sqlite")], input: .pipe, output: .null)
        let input = try #require(holder.input)
        defer {
            try? input.close()
            _ = try? holder.wait()
        }
        try input.write(contentsOf: Data("SELECT COUNT(*) FROM users;\n".utf8))
        let killed = try await sandbox.run(
            arguments: Self.importIntoFresh, environment: ["GUESTMODE_TEST_STOP_AFTER": "backup-import-rows"])
        #expect(killed.signalled, "\(killed.status) \(killed.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path)
        #expect(files.contains("fresh.sqlite-wal") && !files.contains("fresh.sqlite-journal"), "\(files)")
        let imported = try await sandbox.run(arguments: Self.importIntoFresh)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM events", store: "fresh.sqlite") == "1600")
        #expect(try await sqlite(sandbox, "PRAGMA journal_mode", store: "fresh.sqlite") == "wal")
    }
}
