import Foundation
import Testing

extension Sandbox {
    /// A sandbox whose store is a fresh schema on the server `make test`
    /// starts (scripts/with-postgres.sh). A missing server fails the test.
    static func withPostgresStore(_ profile: String) async throws -> Sandbox {
        let sandbox = try onPostgres()
        let created = try await sandbox.run("init", "--profile", profile)
        #expect(created.status == 0, "init failed: \(created.stderr)")
        return sandbox
    }

    /// A sandbox whose commands use a schema of its own in the test server's database, not yet initialised.
    static func onPostgres() throws -> Sandbox {
        let uri = try #require(
            ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 },
            "GUESTMODE_TEST_POSTGRES is not set: run the tests through 'make test'")
        let sandbox = try Sandbox()
        sandbox.environment["GUESTMODE_STORE"] = uri
        sandbox.environment["GUESTMODE_SCHEMA"] =
            "e2e_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        return sandbox
    }

    var postgresURI: String { environment["GUESTMODE_STORE"] ?? "" }
    var postgresSchema: String { environment["GUESTMODE_SCHEMA"] ?? "" }
}

@Suite("PostgreSQL: the same commands against a real server")
struct PostgresTests {
    @Test("subscriptions: the guest cap, the account cap and premium, as with SQLite")
    func capsJourney() async throws {
        let sandbox = try await Sandbox.withPostgresStore("subscriptions")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let guest = try await sandbox.newGuest()
        for index in 1...5 {
            let put = try await sandbox.run("record", "put", guest, "subscriptions", "s\(index)", "--data", "{}")
            #expect(put.status == 0, "\(put.stderr)")
        }
        #expect(try await sandbox.run("record", "put", guest, "subscriptions", "s6", "--data", "{}").status == 10)
        #expect(try await sandbox.run("link", guest, "--provider", "apple", "--subject", "a-1").status == 0)
        #expect(try await sandbox.run("record", "put", guest, "subscriptions", "s6", "--data", "{}").status == 11)
        #expect(try await sandbox.run("plan", "grant", guest, "premium").status == 0)
        #expect(try await sandbox.run("record", "put", guest, "subscriptions", "s6", "--data", "{}").status == 0)
        let other = try await sandbox.newGuest()
        let conflict = try await sandbox.run("link", other, "--provider", "apple", "--subject", "a-1", "--json")
        #expect(conflict.status == 14)
        #expect(conflict.errorJSON["code"] as? String == "identity_already_exists")
        #expect(try await sandbox.run("db", "check").status == 0)
    }

    @Test("voice: exact amounts, the gate, and eight concurrent meter uses that lose nothing")
    func meters() async throws {
        let sandbox = try await Sandbox.withPostgresStore("voice")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let guest = try await sandbox.newGuest()
        for amount in ["12.2", "19.9", "12.9"] {
            #expect(try await sandbox.run("meter", "use", guest, "api_minutes", amount).status == 0)
        }
        // Fifteen single minutes from eight processes at once: every one that fits is recorded, none past the allowance.
        let uses = try (1...15).map { _ in try sandbox.start(["meter", "use", guest, "api_minutes", "1"]) }
        for use in uses { _ = await Sandbox.exitStatus(of: use) }
        let status = try await sandbox.run("meter", "status", guest, "api_minutes", "--json")
        #expect(status.stdout.contains("\"used\" : 60"), "\(status.stdout)")
        #expect(status.stdout.contains("\"remaining\" : 0"), "\(status.stdout)")
        #expect(try await sandbox.run("meter", "check", guest, "api_minutes").status == 12)
    }

    @Test("eight concurrent track processes lose no increment; a repeated key counts once")
    func concurrentTrack() async throws {
        let sandbox = try await Sandbox.withPostgresStore("recipes")
        let guest = try await sandbox.newGuest()
        let tracks = try (1...8).flatMap { _ in
            [
                try sandbox.start(["track", guest, "app_opened", "--count", "5"]),
                try sandbox.start(["track", guest, "recipe_viewed", "--id", "same"]),
            ]
        }
        for track in tracks {
            let (status, errors) = await Sandbox.exitStatus(of: track)
            #expect(status == 0, "\(errors)")
        }
        let counters = try await sandbox.run("counters", guest, "--json")
        #expect((counters.object["counters"] as? [String: Any])?["app_opened"] as? Int == 40, "\(counters.stdout)")
        #expect((counters.object["counters"] as? [String: Any])?["recipe_viewed"] as? Int == 1, "\(counters.stdout)")
    }

    @Test("a SQLite backup imports into PostgreSQL and comes back out the same")
    func backupAcrossBackends() async throws {
        let sandbox = try await Sandbox.withPostgresStore("habits")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let local = ["--store", "local.sqlite"]
        #expect(try await sandbox.run(arguments: ["init", "--profile", "habits"] + local).status == 0)
        let guest = try await sandbox.run(arguments: ["guest", "new"] + local).stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(
            try await sandbox.run(
                arguments: ["record", "put", guest, "habits", "read", "--data", #"{"goal":"10 pages"}"#] + local
            ).status == 0)
        #expect(try await sandbox.run(arguments: ["track", guest, "habit_created"] + local).status == 0)
        #expect(
            try await sandbox.run(arguments: ["backup", "export", guest, "--out", "g.gmbackup"] + local).status == 0)
        let imported = try await sandbox.run("backup", "import", "g.gmbackup")
        #expect(imported.status == 0, "\(imported.stderr)")
        let record = try await sandbox.run("record", "get", guest, "habits", "read")
        #expect(record.stdout.contains("10 pages"), "\(record.stdout)\(record.stderr)")
        #expect(
            try await (sandbox.run("counters", guest, "--json").object["counters"] as? [String: Any])?["habit_created"]
                as? Int == 1)
    }

    @Test("a password is never printed, and an unreachable server exits 75")
    func secretsAndReachability() async throws {
        let sandbox = try Sandbox()
        let store = "postgresql://someone:hunter2-secret@127.0.0.1:1/nowhere"
        for arguments in [["db", "status"], ["--json", "user", "list"], ["--verbose", "counters", "u"]] {
            let result = try await sandbox.run(arguments: arguments + ["--store", store])
            #expect(result.status == 75, "\(arguments): \(result.stderr)")
            #expect(!result.stdout.contains("hunter2") && !result.stderr.contains("hunter2"), "\(result.stderr)")
        }
    }

    @Test("a store written by a newer guestmode is refused and left untouched")
    func newerSchemaRefused() async throws {
        let sandbox = try await Sandbox.withPostgresStore("voice")
        let schema = sandbox.postgresSchema
        let planted = try await sandbox.shell(
            "psql -q -d '\(sandbox.postgresURI)' -c \"INSERT INTO \(schema).schema_migrations (identifier, applied_at) VALUES ('pg99-future', 'x')\""
        )
        #expect(planted.status == 0, "\(planted.stderr)")
        let count = "psql -tA -d '\(sandbox.postgresURI)' -c 'SELECT count(*) FROM \(schema).users'"
        let before = try await sandbox.shell(count).stdout
        let refused = try await sandbox.run("guest", "new", "--json")
        #expect(refused.status == 65)
        #expect(refused.errorJSON["code"] as? String == "store_too_new")
        #expect(try await sandbox.shell(count).stdout == before)
    }

    @Test("db check finds what constraints cannot: orphaned rows and counters that disagree with their events")
    func check() async throws {
        let sandbox = try await Sandbox.withPostgresStore("habits")
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("track", guest, "habit_created").status == 0)
        #expect(try await sandbox.run("db", "check").status == 0)
        let schema = sandbox.postgresSchema
        let planted = try await sandbox.shell(
            """
            psql -q -d '\(sandbox.postgresURI)' -c "INSERT INTO \(schema).outbox (user_id, queued_at) VALUES ('ghost', 'x')" \
                -c "UPDATE \(schema).counters SET total = 7"
            """)
        #expect(planted.status == 0, "\(planted.stderr)")
        let checked = try await sandbox.run("db", "check", "--json")
        #expect(checked.status == 65)
        let problems = (checked.object["problems"] as? [String]) ?? []
        #expect(problems.contains { $0.contains("outbox has rows of user ghost") }, "\(problems)")
        #expect(problems.contains { $0.contains("habit_created") && $0.contains("is 7") }, "\(problems)")
    }

    /// What guestmode's tables hold, read with psql: the "nothing written" check.
    private func tables(_ sandbox: Sandbox) async throws -> String {
        let schema = sandbox.postgresSchema
        return try await sandbox.shell(
            """
            psql -tA -d '\(sandbox.postgresURI)' -c "SELECT (SELECT count(*) FROM \(schema).users), \
                (SELECT count(*) FROM \(schema).events), (SELECT count(*) FROM \(schema).records), \
                (SELECT string_agg(user_id || ':' || action || '=' || total, ',' ORDER BY user_id, action) FROM \(schema).counters)"
            """
        ).stdout
    }

    @Test("a counter at the edge refuses the next track with 65 count_overflow, not exit 1, and db check names it")
    func counterOverflow() async throws {
        let sandbox = try await Sandbox.withPostgresStore("recipes")
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("track", guest, "app_opened", "--count", "5").status == 0)
        let schema = sandbox.postgresSchema
        let planted = try await sandbox.shell(
            "psql -q -d '\(sandbox.postgresURI)' -c \"UPDATE \(schema).counters SET total = 9223372036854775800\"")
        #expect(planted.status == 0, "\(planted.stderr)")
        let before = try await tables(sandbox)
        let track = try await sandbox.run("track", guest, "app_opened", "--count", "10")
        #expect(!track.signalled)
        #expect(track.status == 65, "\(track.stderr)")
        #expect(track.stderr.split(separator: "\n").count == 1, "\(track.stderr)")
        #expect(track.stderr.contains("would pass 9223372036854775807"), "\(track.stderr)")
        let json = try await sandbox.run("--json", "track", guest, "app_opened", "--count", "8")
        #expect(json.status == 65)
        #expect(json.errorJSON["code"] as? String == "count_overflow", "\(json.stderr)")
        try sandbox.write("log.ndjson", #"{"user":"\#(guest)","action":"app_opened","count":1000000000}"# + "\n")
        let log = try await sandbox.run("track", "--from", "log.ndjson")
        #expect(log.status == 65, "\(log.stderr)")
        #expect(try await tables(sandbox) == before)
        let checked = try await sandbox.run("db", "check", "--json")
        #expect(checked.status == 65)
        let problems = (checked.object["problems"] as? [String]) ?? []
        #expect(problems.contains { $0.contains("is 9223372036854775800 but its events add up to 5") }, "\(problems)")
    }

    @Test("U+0000 in a log's user or a bulk record's key is refused, not cut short, and nothing is written")
    func nulIsRefused() async throws {
        let sandbox = try await Sandbox.withPostgresStore("recipes")
        let guest = try await sandbox.newGuest()
        let before = try await tables(sandbox)
        try sandbox.write("e.ndjson", #"{"user":"u\u0000v","action":"app_opened"}"# + "\n")
        let track = try await sandbox.run("track", "--from", "e.ndjson", "--create-users")
        #expect(track.status == 65, "\(track.stderr)")
        #expect(track.stderr.contains("e.ndjson:1: the user id contains U+0000"), "\(track.stderr)")
        try sandbox.write(
            "r.ndjson", #"{"user_id":"\#(guest)","collection":"recipes","key":"k\u0000evil","data":{}}"# + "\n")
        let records = try await sandbox.run("--json", "record", "load", "r.ndjson")
        #expect(records.status == 65, "\(records.stderr)")
        #expect(records.errorJSON["code"] as? String == "nul_in_text", "\(records.stderr)")
        let data = try await sandbox.run("record", "put", guest, "recipes", "k", "--data", #"{"a":"\u0000"}"#)
        #expect(data.status == 65, "\(data.stderr)")
        #expect(data.stderr.split(separator: "\n").count == 1, "\(data.stderr)")
        #expect(try await tables(sandbox) == before)
    }
}
