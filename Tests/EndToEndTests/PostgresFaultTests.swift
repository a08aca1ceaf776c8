import Foundation
import GuestModeCommandLine
import Testing

/// A PostgreSQL server of the test's own (scripts/postgres-server.sh), so it
/// can be stopped under a running command without touching the server every
/// other test shares. Removed when the value goes away.
final class PrivatePostgres {
    let directory: URL
    let uri: String

    init() async throws {
        directory = URL(fileURLWithPath: "/tmp/guestmode-pg-fault-\(UUID().uuidString.prefix(8))")
        let started = try await PrivatePostgres.script("init")(directory)
        try #require(started.status == 0, "cannot start a PostgreSQL server: \(started.stderr)")
        uri = started.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    deinit {
        _ = try? ChildProcess(
            "/bin/bash", arguments: [PrivatePostgres.scriptPath, "remove", directory.path]
        ).wait()
    }

    static let scriptPath = Sandbox.packageRoot.appendingPathComponent("scripts/postgres-server.sh").path

    func stop() async throws {
        let result = try await PrivatePostgres.script("stop")(directory)
        try #require(result.status == 0, "cannot stop the server: \(result.stderr)")
    }

    func start() async throws {
        let result = try await PrivatePostgres.script("start")(directory)
        try #require(result.status == 0, "cannot restart the server: \(result.stderr)")
    }

    /// A sandbox whose store is a new schema on this server, bound to the
    /// recipes profile, its clock set.
    func recipesStore() async throws -> (Sandbox, schema: String) {
        let sandbox = try Sandbox()
        let schema = "fault_" + UUID().uuidString.prefix(8).lowercased()
        sandbox.environment["GUESTMODE_STORE"] = uri
        sandbox.environment["GUESTMODE_SCHEMA"] = schema
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let created = try await sandbox.run("init", "--profile", "recipes")
        try #require(created.status == 0, "init: \(created.stderr)")
        return (sandbox, schema)
    }

    /// One value from the server, as psql prints it.
    func value(_ sql: String, schema: String) async throws -> String {
        let sandbox = try Sandbox()
        let result = try await sandbox.shell(
            "psql '\(uri)' -tAq -v ON_ERROR_STOP=1 -c \"SET search_path TO \(schema)\" -c \"\(sql)\"")
        try #require(result.status == 0, "psql: \(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func script(_ action: String) -> (URL) async throws -> Sandbox.Result {
        { directory in
            let sandbox = try Sandbox()
            return try await sandbox.shell("bash '\(scriptPath)' \(action) '\(directory.path)'")
        }
    }
}

extension Sandbox {
    /// Starts the binary and returns once a line of its standard error
    /// satisfies `isReady` (or it ended); the rest of standard error is
    /// collected for `finish`.
    func start(
        _ arguments: [String], waitingFor isReady: @escaping @Sendable (String) -> Bool
    ) async throws
        -> RunningCommand
    {
        let command = RunningCommand()
        let process = try start(arguments)
        guard let errors = process.errors else { throw CocoaError(.fileReadUnknown) }
        command.process = process
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                var resumed = false
                var pending = Data()
                while true {
                    let chunk = errors.availableData
                    if chunk.isEmpty { break }
                    command.append(chunk)
                    pending.append(chunk)
                    while let newline = pending.firstIndex(of: 0x0A) {
                        let line = String(decoding: pending[..<newline], as: UTF8.self)
                        pending.removeSubrange(...newline)
                        if !resumed && isReady(line) {
                            resumed = true
                            continuation.resume()
                        }
                    }
                }
                _ = try? process.wait()
                command.finished.signal()
                if !resumed { continuation.resume() }
            }
        }
        return command
    }
}

/// A command started by `Sandbox.start(_:waitingFor:)`.
final class RunningCommand: @unchecked Sendable {
    var process: ChildProcess?
    let finished = DispatchSemaphore(value: 0)
    private let lock = NSLock()
    private var errors = Data()

    func append(_ data: Data) {
        lock.withLock { errors.append(data) }
    }

    private func collected() -> Data { lock.withLock { errors } }

    /// Waits for the end; its exit status and standard error.
    func finish() async -> (status: Int32, stderr: String) {
        let finished = finished
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                finished.wait()
                continuation.resume()
            }
        }
        // Reaped already (`finished`): the status it ended with, or -1 if it could not be waited for.
        let status = (try? process?.wait())?.status ?? -1
        return (status, String(decoding: collected(), as: UTF8.self))
    }
}

@Suite("PostgreSQL faults: the server stopped under a running command")
struct PostgresFaultTests {
    /// Standard error without the progress lines of --json: the error document alone.
    static func errorDocument(_ stderr: String) -> [String: Any] {
        let text = stderr.split(separator: "\n").filter { !$0.contains("\"message_type\"") }.joined(separator: "\n")
        let document = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
        return document?["error"] as? [String: Any] ?? ["unparsed": text]
    }

    @Test("track --from of a log without ids, server stopped midway: exit 75, nothing applied, the rerun is exact")
    func trackFromStopped() async throws {
        let server = try await PrivatePostgres()
        let (sandbox, schema) = try await server.recipesStore()
        let guests = [try await sandbox.newGuest(), try await sandbox.newGuest(), try await sandbox.newGuest()]
        let lines = 100_000
        let log = (0..<lines).map { #"{"user":"\#(guests[$0 % 3])","action":"app_opened"}"# }
        try sandbox.write("events.ndjson", log.joined(separator: "\n") + "\n")

        // The first progress line comes after the first batch of 5,000 was
        // applied: the log is then half-way through its one transaction.
        let running = try await sandbox.start(
            ["track", "--from", "events.ndjson", "--json"],
            waitingFor: { $0.contains("\"message_type\":\"status\"") })
        try await server.stop()
        let (status, stderr) = await running.finish()
        #expect(status == 75, "stopped too late or failed otherwise: \(stderr)")
        // Nothing but the error document: no notice of the server's in between.
        let error = Self.errorDocument(stderr)
        #expect(error["code"] as? String == "store_busy", "\(error)")
        let message = error["message"] as? String ?? ""
        #expect(message.contains("rolled back") && !message.contains("\n"), "\(message)")

        try await server.start()
        #expect(try await server.value("SELECT count(*) FROM events", schema: schema) == "0")
        #expect(try await server.value("SELECT coalesce(sum(total), 0) FROM counters", schema: schema) == "0")
        let again = try await sandbox.run("track", "--from", "events.ndjson")
        #expect(again.status == 0, "\(again.stderr)")
        #expect(try await server.value("SELECT count(*) FROM events", schema: schema) == "\(lines)")
        #expect(try await server.value("SELECT sum(total) FROM counters", schema: schema) == "\(lines)")
        #expect(try await sandbox.run("db", "check").status == 0)
    }

    @Test("migrate with the server stopped inside a step: exit 75 that says what is kept, then --resume finishes it")
    func migrateStopped() async throws {
        let server = try await PrivatePostgres()
        let (sandbox, schema) = try await server.recipesStore()
        let guest = try await sandbox.newGuest()
        let account = try await sandbox.newGuest()
        #expect(try await sandbox.run("link", account, "--provider", "apple", "--subject", "fault-1").status == 0)
        #expect(try await sandbox.run("track", guest, "app_opened").status == 0)
        #expect(try await sandbox.run("record", "put", guest, "recipes", "r1", "--data", #"{"n":1}"#).status == 0)

        // Step 1 (profile) moves activity and the profile collection; step 2
        // (recipes) moves the guest's recipe, whose row another session holds
        // locked: the migration waits inside step 2 until the server stops
        // (the holder sleeps far longer than a slow machine takes to get
        // there; stopping the server ends it).
        let holder = try ChildProcess(
            "/usr/bin/psql",
            arguments: [
                server.uri, "-q", "-c",
                "BEGIN; SELECT 1 FROM \(schema).records WHERE key = 'r1' FOR UPDATE; SELECT pg_sleep(900); COMMIT;",
            ],
            output: .null, errors: .null)
        defer {
            if holder.isRunning { holder.send(SIGTERM) }
            // Reaped on a thread of its own: the test does not wait for psql to go.
            Thread.detachNewThread { _ = try? holder.wait() }
        }
        /// Polls (at most a minute) until `sql` gives a count above zero.
        func awaitCount(_ sql: String) async throws -> Bool {
            for _ in 0..<240 {
                if try await server.value(sql, schema: schema) != "0" { return true }
                try await Task.sleep(nanoseconds: 250_000_000)
            }
            return false
        }
        let locked = try await awaitCount(
            "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%FOR UPDATE; SELECT pg_sleep%' AND wait_event = 'PgSleep'"
        )
        try #require(locked, "the lock holder never took its lock")
        let running = try await sandbox.start(
            ["migrate", guest, "--to", account, "--backup-directory", "backups"],
            waitingFor: { $0.contains("step 1/5") })
        let waiting = try await awaitCount(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()")
        #expect(waiting, "the migration never waited on the lock")
        #expect(
            try await server.value("SELECT status FROM migration_steps WHERE position = 1", schema: schema) == "done")
        try await server.stop()
        let (status, stderr) = await running.finish()
        #expect(status == 75, "\(stderr)")
        // The notes of the backup and of step 1, then the error alone.
        let lines = stderr.split(separator: "\n")
        #expect(lines.count == 3 && lines.last?.hasPrefix("guestmode: migration #") == true, "\(stderr)")
        #expect(stderr.contains("step 1 is done and kept"), "\(stderr)")
        #expect(stderr.contains("--resume"), "\(stderr)")

        try await server.start()
        let again = try await sandbox.run("migrate", guest, "--to", account, "--backup-directory", "backups")
        #expect(again.status == 14, "\(again.stderr)")
        let resumed = try await sandbox.run(
            "migrate", guest, "--to", account, "--resume", "--backup-directory", "backups")
        #expect(resumed.status == 0, "\(resumed.stderr)")
        #expect(
            try await server.value("SELECT count(*) FROM records WHERE owner_id = '\(account)'", schema: schema) == "1")
        #expect(
            try await server.value(
                "SELECT total FROM counters WHERE user_id = '\(account)' AND action = 'app_opened'", schema: schema)
                == "1")
        #expect(try await sandbox.run("db", "check").status == 0)
    }

    @Test("a lost connection is one line that names the store without its password")
    func oneLineMessage() async throws {
        let server = try await PrivatePostgres()
        let sandbox = try Sandbox()
        let uri = server.uri.replacingOccurrences(of: "guestmode@", with: "guestmode:s3cretpw@")
        sandbox.environment["GUESTMODE_STORE"] = uri
        sandbox.environment["GUESTMODE_SCHEMA"] = "fault_one"
        #expect(try await sandbox.run("init", "--profile", "recipes").status == 0)
        try await server.stop()
        let guest = try await sandbox.run("guest", "new")
        #expect(guest.status == 75, "\(guest.stderr)")
        #expect(guest.stderr.split(separator: "\n").count == 1, "\(guest.stderr)")
        #expect(!guest.stderr.contains("s3cretpw"))
        #expect(!guest.stdout.contains("s3cretpw"))
    }
}
