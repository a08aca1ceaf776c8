import Foundation
import GuestModeCommandLine
import Testing

/// Runs sqlite3 against a sandbox store, for checks from outside guestmode.
func sqlite(_ sandbox: Sandbox, _ sql: String, store: String = "guestmode.sqlite") async throws -> String {
    let process = try ChildProcess(
        "/usr/bin/sqlite3", arguments: [sandbox.path(store), sql], output: .pipe)
    let data = try #require(process.output).readDataToEndOfFile()
    try process.wait()
    return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

extension Sandbox {
    func newGuest(_ extra: String...) async throws -> String {
        let result = try await run(arguments: ["guest", "new"] + extra)
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

@Suite("Lifecycle: caps, meters, plans, identity, events")
struct LifecycleTests {
    @Test("every command closes the store as it exits: no WAL or shared-memory file is left, a refusal's neither")
    func storeClosedAtExit() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        let guest = try await sandbox.newGuest()
        let commands: [(arguments: [String], status: Int32)] = [
            (["track", guest, "app_opened"], 0),
            (["counters", guest], 0),
            (["counters", guest, "--json"], 0),
            (["user", "show", guest], 0),
            (["user", "show", "no-such-user"], 66),
            (["track", "no-such-user", "app_opened"], 66),
        ]
        for command in commands {
            let result = try await sandbox.run(arguments: command.arguments)
            #expect(result.status == command.status, "\(command.arguments): \(result.stderr)")
            let left = try FileManager.default.contentsOfDirectory(atPath: sandbox.path("."))
                .filter { $0.hasPrefix("guestmode.sqlite") }.sorted()
            #expect(left == ["guestmode.sqlite", "guestmode.sqlite.key"], "\(command.arguments) left \(left)")
        }
        #expect(try await sqlite(sandbox, "SELECT total FROM counters WHERE user_id = '\(guest)'") == "1")
    }

    @Test("subscriptions: 5 for a guest, the 6th needs an account, then premium lifts the cap")
    func subscriptionsCap() async throws {
        let sandbox = try await Sandbox.withStore("subscriptions")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let guest = try await sandbox.newGuest()
        for index in 1...5 {
            let put = try await sandbox.run(
                "record", "put", guest, "subscriptions", "s\(index)", "--data",
                #"{"name":"s\#(index)","price":\#(index)}"#)
            #expect(put.status == 0, "\(put.stderr)")
        }
        let sixth = try await sandbox.run("record", "put", guest, "subscriptions", "s6", "--data", "{}")
        #expect(sixth.status == 10)
        #expect(sixth.stderr.contains("needs-account"))
        #expect(try await sandbox.run("record", "get", guest, "subscriptions", "s6").status == 66)
        let sixthJSON = try await sandbox.run("record", "put", guest, "subscriptions", "s6", "--data", "{}", "--json")
        #expect(sixthJSON.status == 10)
        #expect(sixthJSON.object["outcome"] as? String == "needs-account")
        // Replacing an existing key never counts against the cap.
        #expect(
            try await sandbox.run("record", "put", guest, "subscriptions", "s5", "--data", #"{"name":"renamed"}"#)
                .status == 0)
        #expect(try await sandbox.run("limit", guest, "subscriptions").status == 10)

        #expect(try await sandbox.run("link", guest, "--provider", "apple", "--subject", "apple-1").status == 0)
        let list = try await sandbox.run("record", "list", guest, "subscriptions", "--json")
        #expect((list.json as? [[String: Any]])?.compactMap { $0["key"] as? String } == ["s1", "s2", "s3", "s4", "s5"])
        let afterLink = try await sandbox.run("record", "put", guest, "subscriptions", "s6", "--data", "{}")
        #expect(afterLink.status == 11)
        #expect(afterLink.stderr.contains("needs-premium"))
        #expect(try await sandbox.run("limit", guest, "subscriptions").status == 11)

        #expect(try await sandbox.run("plan", "grant", guest, "premium").status == 0)
        let premium = try await sandbox.run("record", "put", guest, "subscriptions", "s6", "--data", #"{"name":"s6"}"#)
        #expect(premium.status == 0, "\(premium.stderr)")
        #expect(try await sandbox.run("record", "get", guest, "subscriptions", "s6").stdout.contains("s6"))
        #expect(try await sandbox.run("limit", guest, "subscriptions").status == 0)
    }

    @Test(
        "voice: 60 free minutes, warnings once at 75 % and 90 %, the gate, a trial and its expiry, carry-over on link")
    func voiceMeter() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let day1 = "2026-11-01T10:00:00Z"
        sandbox.environment["GUESTMODE_NOW"] = day1
        let guest = try await sandbox.newGuest()
        func use(_ amount: String, _ extra: String...) async throws -> Sandbox.Result {
            try await sandbox.run(arguments: ["meter", "use", guest, "api_minutes", amount, "--json"] + extra)
        }
        func warnings(_ result: Sandbox.Result) -> [Double] {
            (result.object["warnings"] as? [[String: Any]])?.compactMap { $0["percent"] as? Double } ?? []
        }
        let first = try await use("45")
        #expect(first.status == 0)
        #expect(warnings(first) == [75])
        #expect(warnings(try await use("5")) == [])
        let ninety = try await use("4")
        #expect(warnings(ninety) == [90])
        #expect((ninety.object["status"] as? [String: Any])?["level"] as? String == "critical")
        #expect(try await sandbox.run("meter", "check", guest, "api_minutes", "6").status == 0)
        #expect(try await sandbox.run("meter", "check", guest, "api_minutes", "7").status == 12)
        let last = try await use("6")
        #expect(warnings(last) == [])
        #expect(try await sandbox.run("meter", "check", guest, "api_minutes").status == 12)
        let refused = try await use("1")
        #expect(refused.status == 12)
        #expect(refused.object["recorded"] as? Bool == false)
        let status = try await sandbox.run("meter", "status", guest, "api_minutes", "--json")
        let meter = (status.json as? [[String: Any]])?.first
        #expect(meter?["used"] as? Double == 60)
        #expect(meter?["level"] as? String == "exhausted")
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM meter_usage") == "4")
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM events WHERE action = 'meter_warning'") == "2")

        // A one-month trial lifts the limit; its expiry (by --now) restores it.
        #expect(try await sandbox.run("plan", "grant", guest, "premium", "--trial", "1 month").status == 0)
        #expect(try await sandbox.run("meter", "check", guest, "api_minutes", "30").status == 0)
        #expect(try await use("30", "--id", "call-1").status == 0)
        #expect(try await use("30", "--id", "call-1").object["duplicate"] as? Bool == true)
        // The same key with another amount is a client bug: refused, naming the key, writing nothing.
        let ledger = try await sandbox.dump("guestmode.sqlite", "meter_usage")
        let events = try await sandbox.dump("guestmode.sqlite", "events")
        let reused = try await use("31", "--id", "call-1")
        #expect(reused.status == 14)
        #expect(reused.errorJSON["code"] as? String == "idempotency_key_reused")
        #expect((reused.errorJSON["message"] as? String)?.contains("'call-1'") == true, "\(reused.stdout)")
        #expect(try await sandbox.dump("guestmode.sqlite", "meter_usage") == ledger)
        #expect(try await sandbox.dump("guestmode.sqlite", "events") == events)
        let inTrial = try await sandbox.run("--now", "2026-11-30T10:00:00Z", "plan", "status", guest, "--json")
        #expect(inTrial.object["tier"] as? String == "premium")
        let expired = try await sandbox.run("--now", "2026-12-02T10:00:00Z", "plan", "status", guest, "--json")
        #expect(expired.object["tier"] as? String == "guest")
        #expect(((expired.object["plans"] as? [[String: Any]])?.first?["state"]) as? String == "expired")
        #expect(
            try await sandbox.run("--now", "2026-12-02T10:00:00Z", "meter", "check", guest, "api_minutes").status == 12)

        // A trial is granted once.
        let secondTrial = try await sandbox.run("plan", "grant", guest, "premium", "--trial", "1 month", "--json")
        #expect(secondTrial.status == 14)
        #expect(secondTrial.errorJSON["code"] as? String == "trial_already_used")
        #expect(try await sandbox.run("plan", "grant", guest, "gold").status == 64)

        // A plan granted as a guest survives link.
        #expect(try await sandbox.run("plan", "grant", guest, "premium").status == 0)
        #expect(try await sandbox.run("link", guest, "--provider", "google", "--subject", "g-1").status == 0)
        let linked = try await sandbox.run("--now", "2026-12-05T10:00:00Z", "plan", "status", guest, "--json")
        #expect(linked.object["tier"] as? String == "premium")
        #expect(
            try await sandbox.run("--now", "2026-12-05T10:00:00Z", "meter", "check", guest, "api_minutes", "100").status
                == 0)
        // An account without a plan keeps the free allowance.
        #expect(try await sandbox.run("plan", "revoke", guest, "premium").status == 0)
        let account = try await sandbox.run("meter", "status", guest, "--json")
        #expect(((account.json as? [[String: Any]])?.first?["tier"]) as? String == "account")
        #expect(((account.json as? [[String: Any]])?.first?["allowance"]) as? Double == 60)
    }

    @Test(
        "identity: a conflicting link exits 14 and leaves the guest exactly as before; a good one keeps the id and drops credentials"
    )
    func identityUpgrade() async throws {
        let sandbox = try await Sandbox.withStore("subscriptions")
        let owner = try await sandbox.newGuest()
        #expect(try await sandbox.run("link", owner, "--provider", "apple", "--subject", "taken").status == 0)
        let guest = try await sandbox.run(
            arguments: ["guest", "new", "--username", "anon-42", "--secret-stdin"], input: Data("s3cret\n".utf8))
        #expect(guest.status == 0)
        let guestID = guest.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(
            try await sandbox.run("record", "put", guestID, "subscriptions", "netflix", "--data", #"{"price":9.99}"#)
                .status == 0)
        #expect(!(try await sqlite(sandbox, "SELECT secret_hash FROM credentials")).contains("s3cret"))

        func state() async throws -> String {
            try await sqlite(
                sandbox,
                """
                SELECT coalesce((SELECT group_concat(state || prompt_state || coalesce(linked_at, '-')) FROM users WHERE id = '\(guestID)'), '')
                || '|' || coalesce((SELECT group_concat(provider || subject) FROM identities WHERE user_id = '\(guestID)'), '')
                || '|' || coalesce((SELECT group_concat(collection || key || data) FROM records WHERE owner_id = '\(guestID)'), '')
                || '|' || coalesce((SELECT group_concat(username || secret_hash) FROM credentials WHERE user_id = '\(guestID)'), '')
                """)
        }
        let before = try await state()
        let conflict = try await sandbox.run("link", guestID, "--provider", "apple", "--subject", "taken", "--json")
        #expect(conflict.status == 14)
        #expect(conflict.errorJSON["code"] as? String == "identity_already_exists")
        #expect(try await state() == before)
        #expect(before.contains("anon-42"))
        #expect(
            try await sqlite(
                sandbox,
                "SELECT properties FROM events WHERE user_id = '\(guestID)' AND action = 'account_upgrade_failed'")
                == #"{"code":"identity_already_exists","provider":"apple"}"#)
        #expect(!(try await sqlite(sandbox, "SELECT group_concat(properties) FROM events")).contains("s3cret"))

        let linked = try await sandbox.run("link", guestID, "--provider", "google", "--subject", "mine", "--json")
        #expect(linked.status == 0)
        #expect(linked.object["user_id"] as? String == guestID)
        #expect(linked.object["removed_anonymous_credentials"] as? Bool == true)
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM credentials") == "0")
        #expect(try await sandbox.run("record", "get", guestID, "subscriptions", "netflix").status == 0)
        let shown = try await sandbox.run("user", "show", guestID, "--json")
        #expect((shown.object["user"] as? [String: Any])?["state"] as? String == "linked")

        // Linking the same identity again changes nothing and records no attempt.
        let events = try await sqlite(sandbox, "SELECT COUNT(*) FROM events WHERE user_id = '\(guestID)'")
        let again = try await sandbox.run("link", guestID, "--provider", "google", "--subject", "mine", "--json")
        #expect(again.status == 0)
        #expect(again.object["changed"] as? Bool == false)
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM events WHERE user_id = '\(guestID)'") == events)

        // One provider per user in this profile.
        let second = try await sandbox.run("link", guestID, "--provider", "email", "--subject", "x@example.com")
        #expect(second.status == 14)
        // Unlinking the only identity returns the user to anonymous.
        #expect(try await sandbox.run("unlink", guestID, "--provider", "google").status == 0)
        #expect(try await sqlite(sandbox, "SELECT state FROM users WHERE id = '\(guestID)'") == "anonymous")
        #expect(try await sandbox.run("unlink", guestID, "--provider", "google").status == 66)
        #expect(try await sandbox.run("link", guestID, "--provider", "myspace", "--subject", "x").status == 64)
        #expect(try await sandbox.run("link", "nobody", "--provider", "apple", "--subject", "x").status == 66)
    }

    @Test("a second upgrade while one is in progress exits 14; a stale lock expires")
    func upgradeInProgress() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let guest = try await sandbox.newGuest()
        let killed = try await sandbox.run(
            arguments: ["link", guest, "--provider", "apple", "--subject", "a"],
            environment: ["GUESTMODE_TEST_STOP_AFTER": "link-lock"])
        #expect(killed.status != 0)
        let second = try await sandbox.run("link", guest, "--provider", "apple", "--subject", "a", "--json")
        #expect(second.status == 14)
        #expect(second.errorJSON["code"] as? String == "upgrade_in_progress")
        #expect(try await sqlite(sandbox, "SELECT state FROM users") == "anonymous")
        let failures = try await sandbox.run("user", "events", guest, "--action", "account_upgrade_failed", "--json")
        let failure = (failures.json as? [[String: Any]])?.first?["properties"] as? [String: Any]
        #expect(failure?["code"] as? String == "upgrade_in_progress", "\(failures.stdout)")
        #expect(
            try await sqlite(sandbox, "SELECT count(*) FROM upgrade_locks") == "1",
            "the killed attempt keeps its lock")
        let later = try await sandbox.run(
            "--now", "2026-11-01T10:30:00Z", "link", guest, "--provider", "apple", "--subject", "a")
        #expect(later.status == 0, "\(later.stderr)")
    }

    @Test("track: counters, idempotency keys, unknown actions and users")
    func track() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("track", guest, "recipe_created").stdout == "recipe_created 1\n")
        #expect(try await sandbox.run("track", guest, "recipe_created", "--count", "2", "--id", "k1").status == 0)
        let repeated = try await sandbox.run("track", guest, "recipe_created", "--count", "2", "--id", "k1", "--json")
        #expect(repeated.object["counted"] as? Bool == false)
        #expect(repeated.object["total"] as? Int == 3)
        #expect(try await sandbox.run("track", guest, "app_opened", "--prop", "screen=home").status == 0)
        #expect(
            (try await (sandbox.run("counters", guest, "--json").object["counters"] as? [String: Any])?[
                "recipe_created"]) as? Int == 3)
        let reused = try await sandbox.run("track", guest, "app_opened", "--id", "k1", "--json")
        #expect(reused.status == 14, "a key identifies one report, not one per action")
        #expect(reused.errorJSON["code"] as? String == "idempotency_key_reused")
        #expect(try await sandbox.run("track", guest, "rocket_launched").status == 64)
        #expect(try await sandbox.run("track", "nobody", "app_opened").status == 66)
        #expect(try await sandbox.run("track", guest, "app_opened", "--count", "0").status == 64)
    }

    @Test("track --from: 100,000 lines with one bad line change nothing and name the line; keys dedupe across runs")
    func bulkIngest() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let guests = try await (0..<10).asyncMap { _ in try await sandbox.newGuest() }
        let actions = ["app_opened", "recipe_created", "recipe_viewed", "video_generated"]
        var lines: [String] = []
        lines.reserveCapacity(100_000)
        for index in 0..<100_000 {
            let user = guests[index % guests.count]
            let action = actions[index % actions.count]
            lines.append(#"{"user":"\#(user)","action":"\#(action)","at":"2026-11-01T10:00:00Z","id":"e\#(index)"}"#)
        }
        var broken = lines
        broken[76_542] = #"{"user":"\#(guests[0])","action":"app_opened","count":"many"}"#
        try sandbox.write("broken.ndjson", broken.joined(separator: "\n") + "\n")
        let before = try sandbox.snapshot()
        let refused = try await sandbox.run("track", "--from", "broken.ndjson")
        #expect(refused.status == 65)
        #expect(refused.stderr.contains("broken.ndjson:76543: 'count' must be a whole number"))
        #expect(try sandbox.snapshot() == before)
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM events") == "0")

        try sandbox.write("good.ndjson", lines.joined(separator: "\n") + "\n")
        let applied = try await sandbox.run("track", "--from", "good.ndjson", "--json")
        #expect(applied.status == 0, "\(applied.stderr)")
        #expect(applied.object["applied"] as? Int == 100_000)
        #expect(try await sqlite(sandbox, "SELECT SUM(total) FROM counters") == "100000")
        let again = try await sandbox.run(
            "track", "--from", "-", "--json", input: lines.prefix(1000).joined(separator: "\n"))
        #expect(again.object["duplicates"] as? Int == 1000)
        #expect(again.object["applied"] as? Int == 0)
        #expect(try await sqlite(sandbox, "SELECT SUM(total) FROM counters") == "100000")

        let skipping = try await sandbox.run(
            "track", "--from", "-", "--skip-invalid", "--create-users", "--json",
            input: #"{"user":"newcomer","action":"app_opened","at":"2026-10-01T00:00:00Z"}"# + "\nnot json\n")
        #expect(skipping.status == 0)
        #expect(skipping.object["applied"] as? Int == 1)
        #expect(skipping.object["users_created"] as? Int == 1)
        #expect(skipping.stderr.contains("<stdin>:2: not a JSON object"))
        #expect(
            try await sqlite(sandbox, "SELECT created_at FROM users WHERE id = 'newcomer'")
                == "2026-10-01T00:00:00.000Z")
    }

    @Test("eight track processes at once lose no increment")
    func concurrentTrack() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let guest = try await sandbox.newGuest()
        let perProcess = 25
        let script = """
            for i in $(seq 1 \(perProcess)); do "$1" track "$2" app_opened --quiet || exit 1; done
            """
        var processes: [ChildProcess] = []
        for _ in 0..<8 {
            let process = try ChildProcess(
                "/bin/sh", arguments: ["-c", script, "sh", Sandbox.binary.path, guest],
                environment: sandbox.environment, directory: sandbox.directory.path)
            processes.append(process)
        }
        for process in processes {
            #expect(try process.wait().status == 0)
        }
        #expect(
            try await sqlite(sandbox, "SELECT total FROM counters WHERE action = 'app_opened'")
                == String(8 * perProcess))
        #expect(
            try await sqlite(sandbox, "SELECT COUNT(*) FROM events WHERE action = 'app_opened'")
                == String(8 * perProcess))
    }

    @Test("user list, show, delete and purge")
    func users() async throws {
        let sandbox = try await Sandbox.withStore("subscriptions")
        sandbox.environment["GUESTMODE_NOW"] = "2026-01-01T00:00:00Z"
        let idle = try await sandbox.newGuest()
        let idleWithData = try await sandbox.newGuest()
        #expect(try await sandbox.run("record", "put", idleWithData, "subscriptions", "a", "--data", "{}").status == 0)
        let idlePayer = try await sandbox.newGuest()
        #expect(try await sandbox.run("plan", "grant", idlePayer, "premium").status == 0)
        sandbox.environment["GUESTMODE_NOW"] = "2026-03-01T00:00:00Z"
        let active = try await sandbox.newGuest()
        let member = try await sandbox.newGuest()
        #expect(try await sandbox.run("link", member, "--provider", "email", "--subject", "m@example.com").status == 0)

        let anonymous = try await sandbox.run("user", "list", "--anonymous", "--json")
        #expect((anonymous.json as? [[String: Any]])?.count == 4)
        let inactive = try await sandbox.run("user", "list", "--inactive-days", "30", "--json")
        #expect(
            Set((inactive.json as? [[String: Any]])?.compactMap { $0["user_id"] as? String } ?? []) == [
                idle, idleWithData, idlePayer,
            ])

        #expect(try await sandbox.run("user", "purge", "--inactive-days", "30").status == 64)
        let before = try sandbox.snapshot()
        let dryRun = try await sandbox.run("user", "purge", "--inactive-days", "30", "--dry-run", "--json")
        #expect((dryRun.object["purged"] as? [[String: Any]])?.compactMap { $0["user_id"] as? String } == [idle])
        #expect(try sandbox.snapshot() == before)
        let withData = try await sandbox.run(
            "user", "purge", "--inactive-days", "30", "--dry-run", "--include-with-data", "--json")
        #expect(
            Set((withData.object["purged"] as? [[String: Any]])?.compactMap { $0["user_id"] as? String } ?? []) == [
                idle, idleWithData,
            ])
        #expect(try await sandbox.run("user", "purge", "--inactive-days", "30", "--yes").status == 0)
        #expect(try await sandbox.run("user", "show", idle).status == 66)
        #expect(try await sandbox.run("user", "show", idleWithData).status == 0)
        #expect(try await sandbox.run("user", "show", idlePayer).status == 0)

        #expect(try await sandbox.run("user", "delete", idleWithData).status == 64)
        #expect(try await sandbox.run("user", "delete", idleWithData, "--yes").status == 0)
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM records") == "0")
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM users") == "3")
        #expect(try await sandbox.run("user", "show", active, "--json").status == 0)
        #expect(try await sandbox.run("user", "delete", "nobody", "--yes").status == 66)
    }

    @Test("a purge of 45,000 guests deletes in ranges: every stale guest and its rows go, the kept ones stay")
    func purgeAcrossDeletionRanges() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        // 45,000 stale guests (more than two ranges of 20,000), each with a counter; three kept: one
        // recent, one owning a record, one linked.
        let made = try await sandbox.shell(
            """
            sqlite3 guestmode.sqlite "PRAGMA foreign_keys = ON; BEGIN;
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 45003)
            INSERT INTO users (id, state, created_at, last_seen_at, linked_at)
            SELECT printf('g%05d', i), CASE WHEN i = 45003 THEN 'linked' ELSE 'anonymous' END, '2025-01-01T00:00:00.000Z',
                   CASE WHEN i = 45001 THEN '2026-11-10T00:00:00.000Z' ELSE '2025-06-01T00:00:00.000Z' END,
                   CASE WHEN i = 45003 THEN '2025-02-01T00:00:00.000Z' END FROM n;
            INSERT INTO counters (user_id, action, total) SELECT id, 'app_opened', 1 FROM users;
            INSERT INTO records (owner_id, collection, key, data, created_at, updated_at)
                VALUES ('g45002', 'completions', 'k', '{}', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z');
            COMMIT;"
            """)
        #expect(made.status == 0, "\(made.stderr)")
        let purged = try await sandbox.run(
            "--now", "2026-11-15T00:00:00Z", "user", "purge", "--inactive-days", "30", "--yes", "--quiet")
        #expect(purged.status == 0, "\(purged.stderr)")
        #expect(
            try await sqlite(sandbox, "SELECT group_concat(id) FROM (SELECT id FROM users ORDER BY id)")
                == "g45001,g45002,g45003")
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM counters") == "3")
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM records") == "1")
        #expect(try await sqlite(sandbox, "PRAGMA foreign_key_check") == "")
    }

    @Test("bad record data is refused with 65 and unknown collections with 64")
    func badRecords() async throws {
        let sandbox = try await Sandbox.withStore("subscriptions")
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("record", "put", guest, "subscriptions", "a", "--data", "{nope").status == 65)
        #expect(try await sandbox.run("record", "put", guest, "films", "a", "--data", "{}").status == 64)
        #expect(try await sandbox.run("record", "put", guest, "subscriptions", "a").status == 64)
        #expect(try await sandbox.run("record", "delete", guest, "subscriptions", "a").status == 66)
        let before = try sandbox.snapshot()
        let missingFile = try await sandbox.run(
            "record", "put", guest, "settings", "theme", "--file", "nope.json", "--json")
        #expect(missingFile.status == 66)
        #expect(missingFile.errorJSON["code"] as? String == "file_not_found")
        let noSecret = try await sandbox.run(
            arguments: ["guest", "new", "--username", "anon", "--secret-stdin"], input: Data())
        #expect(noSecret.status == 64)
        #expect(noSecret.stderr.contains("held no secret"))
        #expect(try sandbox.snapshot() == before, "refusals change nothing")
        let piped = try await sandbox.run(
            arguments: ["record", "put", guest, "settings", "theme", "--file", "-"],
            input: Data(#"{"dark": true}"#.utf8))
        #expect(piped.status == 0)
        #expect(try await sandbox.run("record", "get", guest, "settings", "theme").stdout == "{\"dark\":true}\n")
    }
}
