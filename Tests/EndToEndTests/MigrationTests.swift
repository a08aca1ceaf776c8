import Foundation
import Testing

/// Every row of the user-data tables, as text, for before/after comparisons.
func tableDump(
    _ sandbox: Sandbox, _ table: String, orderBy: String, columns: String = "*", store: String = "guestmode.sqlite"
) async throws -> String {
    try await sqlite(sandbox, "SELECT \(columns) FROM \(table) ORDER BY \(orderBy)", store: store)
}

/// A recipes store with a guest that has data in every table and an account
/// that shares some record keys with it.
func seededRecipes() async throws -> (Sandbox, guest: String, account: String) {
    let sandbox = try await Sandbox.withStore("recipes")
    sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
    let account = try await sandbox.newGuest()
    #expect(try await sandbox.run("link", account, "--provider", "google", "--subject", "g-1").status == 0)
    #expect(
        try await sandbox.run("record", "put", account, "recipes", "pasta", "--data", #"{"by":"account"}"#).status == 0)
    #expect(
        try await sandbox.run("record", "put", account, "preferences", "diet", "--data", #"{"diet":"omnivore"}"#).status
            == 0)
    #expect(try await sandbox.run("track", account, "app_opened", "--count", "3").status == 0)

    sandbox.environment["GUESTMODE_NOW"] = "2026-11-02T10:00:00Z"
    let guest = try await sandbox.newGuest()
    for (collection, key, data) in [
        ("profile", "me", #"{"name":"Ana"}"#), ("recipes", "pasta", #"{"by":"guest"}"#),
        ("recipes", "soup", #"{"by":"guest"}"#),
        ("photos", "p1", #"{"url":"file:///p1.jpg"}"#), ("preferences", "diet", #"{"diet":"vegan"}"#),
    ] {
        #expect(try await sandbox.run("record", "put", guest, collection, key, "--data", data).status == 0)
    }
    #expect(try await sandbox.run("track", guest, "app_opened", "--count", "2", "--id", "launch-1").status == 0)
    #expect(try await sandbox.run("track", guest, "recipe_created", "--count", "2").status == 0)
    #expect(try await sandbox.run("meter", "use", guest, "video_generations", "2", "--id", "v1").status == 0)
    #expect(try await sandbox.run("plan", "grant", guest, "premium", "--trial", "7d").status == 0)
    _ = try await sqlite(
        sandbox,
        """
        INSERT INTO prompt_outcomes (user_id, context, outcome, at) VALUES ('\(guest)', 'first_recipe_success', 'shown', '2026-11-02T10:00:00.000Z');
        INSERT INTO experiment_assignments VALUES ('\(guest)', 'auth_prompts', 'social', '2026-11-02T10:00:00.000Z');
        """)
    return (sandbox, guest, account)
}

@Suite("Migrations: guest to account, merge, adopt, schema, profile versions")
struct MigrationTests {
    @Test("a guest with data in every table is migrated field by field, with a backup taken first")
    func guestToAccount() async throws {
        let (sandbox, guest, account) = try await seededRecipes()
        let counterTotals = try await sqlite(
            sandbox,
            "SELECT action || '=' || SUM(total) FROM counters WHERE user_id IN ('\(guest)', '\(account)') GROUP BY action ORDER BY action"
        )
        let usage = try await tableDump(sandbox, "meter_usage", orderBy: "id", columns: "meter, amount, at")
        let plans = try await tableDump(
            sandbox, "plans", orderBy: "id", columns: "plan, granted_at, trial_ends_at, ends_at, revoked_at")
        let prompts = try await tableDump(sandbox, "prompt_outcomes", orderBy: "id", columns: "context, outcome, at")
        let guestRecords = try await sqlite(
            sandbox,
            "SELECT collection || '/' || key || '=' || data FROM records WHERE owner_id = '\(guest)' AND NOT (collection = 'recipes' AND key = 'pasta') ORDER BY 1"
        )

        let dryBefore = try sandbox.snapshot()
        let plan = try await sandbox.run("migrate", guest, "--to", account, "--dry-run", "--json")
        #expect(plan.status == 0, "\(plan.stderr)")
        #expect(
            (plan.object["steps"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == [
                "profile", "recipes", "photos", "preferences", "cleanup",
            ])
        #expect((plan.object["conflicts"] as? [[String: Any]])?.count == 2)
        #expect(try sandbox.snapshot() == dryBefore)

        let result = try await sandbox.run("migrate", guest, "--to", account, "--json")
        #expect(result.status == 0, "\(result.stderr)")
        let journal = result.object["journal"] as? [String: Any]
        #expect(journal?["status"] as? String == "done")
        let backup = try #require(journal?["backup_path"] as? String)
        #expect(FileManager.default.fileExists(atPath: backup))
        #expect(try await sandbox.run("backup", "verify", backup, "--full").status == 0)
        // With --json the steps are JSON progress lines on stderr, ending in the summary.
        #expect(result.stderr.contains("\"done\":5,\"message_type\":\"summary\",\"total\":5"), "\(result.stderr)")

        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM users WHERE id = '\(guest)'") == "0")
        #expect(
            try await sqlite(
                sandbox,
                "SELECT action || '=' || SUM(total) FROM counters WHERE user_id = '\(account)' GROUP BY action ORDER BY action"
            ) == counterTotals)
        #expect(try await tableDump(sandbox, "meter_usage", orderBy: "id", columns: "meter, amount, at") == usage)
        #expect(
            try await tableDump(
                sandbox, "plans", orderBy: "id", columns: "plan, granted_at, trial_ends_at, ends_at, revoked_at")
                == plans)
        #expect(
            try await tableDump(sandbox, "prompt_outcomes", orderBy: "id", columns: "context, outcome, at") == prompts)
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM meter_usage WHERE user_id != '\(account)'") == "0")
        #expect(
            try await sqlite(sandbox, "SELECT variant FROM experiment_assignments WHERE user_id = '\(account)'")
                == "social")
        let accountRecords = try await sqlite(
            sandbox,
            "SELECT collection || '/' || key || '=' || data FROM records WHERE owner_id = '\(account)' ORDER BY 1")
        for line in guestRecords.split(separator: "\n") where !line.hasPrefix("preferences/diet") {
            #expect(accountRecords.contains(line), "\(line) missing after migration")
        }
        // recipes keep both (keep-both collection); preferences: the newer (the guest's) wins, the other is archived.
        #expect(accountRecords.contains(#"recipes/pasta={"by":"account"}"#))
        #expect(accountRecords.contains(#"recipes/pasta~guest={"by":"guest"}"#))
        #expect(accountRecords.contains(#"preferences/diet={"diet":"vegan"}"#))
        #expect(try await sqlite(sandbox, "SELECT data FROM conflict_archive") == #"{"diet":"omnivore"}"#)
        #expect(
            try await sqlite(sandbox, "SELECT created_at FROM users WHERE id = '\(account)'")
                == "2026-11-01T10:00:00.000Z")
        #expect(try await sandbox.run("db", "check").status == 0)
        let status = try await sandbox.run("migrate", "status", account, "--json")
        #expect((status.json as? [[String: Any]])?.first?["status"] as? String == "done")
    }

    @Test("killed after each step in turn, a migration resumes to the same final state", arguments: 0...5)
    func resumeAfterKill(stopAfter step: Int) async throws {
        let (reference, referenceGuest, referenceAccount) = try await seededRecipes()
        #expect(try await reference.run("migrate", referenceGuest, "--to", referenceAccount).status == 0)

        let (sandbox, guest, account) = try await seededRecipes()
        let hook = step == 0 ? "migrate-backup" : "migrate-step-\(step)"
        let killed = try await sandbox.run(
            arguments: ["migrate", guest, "--to", account], environment: ["GUESTMODE_TEST_STOP_AFTER": hook])
        #expect(killed.status != 0)
        #expect(try await sandbox.run("db", "check").status == 0)
        if step == 0 {
            // Killed before the journal existed: nothing moved, start again.
            #expect(try await sandbox.run("migrate", guest, "--to", account, "--resume").status == 66)
            #expect(try await sandbox.run("migrate", guest, "--to", account).status == 0)
        } else if step < 5 {
            let again = try await sandbox.run("migrate", guest, "--to", account)
            #expect(again.status == 14, "an unfinished migration must be resumed, not restarted")
            let resumed = try await sandbox.run("migrate", guest, "--to", account, "--resume")
            #expect(resumed.status == 0, "\(resumed.stderr)")
            #expect(!resumed.stderr.contains("step \(step)/5"), "a done step is never applied twice")
        }
        #expect(try await sandbox.run("db", "check").status == 0)
        func normalized(_ box: Sandbox, _ account: String, _ guest: String) async throws -> String {
            try await sqlite(
                box,
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
        #expect(
            try await normalized(sandbox, account, guest) == normalized(reference, referenceAccount, referenceGuest))
    }

    @Test(
        "merge with each policy gives the documented result; --dry-run changes nothing",
        arguments: ["keep-guest", "keep-account", "union"])
    func merge(policy: String) async throws {
        let (sandbox, guest, account) = try await seededRecipes()
        let before = try sandbox.snapshot()
        let dryRun = try await sandbox.run("merge", guest, "--into", account, "--policy", policy, "--dry-run", "--json")
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        let conflicts = (dryRun.object["conflicts"] as? [[String: Any]]) ?? []
        #expect(Set(conflicts.compactMap { $0["key"] as? String }) == ["pasta", "diet"])
        #expect(try sandbox.snapshot() == before)

        let merged = try await sandbox.run("merge", guest, "--into", account, "--policy", policy, "--json")
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect((merged.object["conflicts"] as? [[String: Any]])?.count == 2)
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM users WHERE id = '\(guest)'") == "0")
        let pasta = try await sqlite(
            sandbox,
            "SELECT key || '=' || data FROM records WHERE owner_id = '\(account)' AND collection = 'recipes' AND key LIKE 'pasta%' ORDER BY key"
        )
        let diet = try await sqlite(sandbox, "SELECT data FROM records WHERE owner_id = '\(account)' AND key = 'diet'")
        switch policy {
        case "keep-guest":
            #expect(pasta == #"pasta={"by":"guest"}"#)
            #expect(diet == #"{"diet":"vegan"}"#)
            #expect(
                try await sqlite(
                    sandbox,
                    "SELECT COUNT(*) FROM conflict_archive WHERE data LIKE '%account%' OR data LIKE '%omnivore%'")
                    == "2")
        case "keep-account":
            #expect(pasta == #"pasta={"by":"account"}"#)
            #expect(diet == #"{"diet":"omnivore"}"#)
            #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM conflict_archive") == "2")
        default:
            #expect(pasta == "pasta={\"by\":\"account\"}\npasta~guest={\"by\":\"guest\"}")
            #expect(diet == #"{"diet":"vegan"}"#, "newest wins where both cannot be kept")
            #expect(try await sqlite(sandbox, "SELECT data FROM conflict_archive") == #"{"diet":"omnivore"}"#)
        }
        #expect(
            try await sqlite(
                sandbox, "SELECT total FROM counters WHERE user_id = '\(account)' AND action = 'app_opened'") == "5")
        #expect(
            try await sqlite(sandbox, "SELECT COUNT(*) FROM conflict_archive WHERE owner_id != '\(account)'") == "0",
            "archived losers stay with the account, and so travel in its backups")
        #expect(try await sandbox.run("db", "check").status == 0)
    }

    @Test("merge refuses a linked source, unknown users and a bad policy, changing nothing")
    func mergeRefusals() async throws {
        let (sandbox, guest, account) = try await seededRecipes()
        let before = try sandbox.snapshot()
        #expect(try await sandbox.run("merge", account, "--into", guest, "--policy", "union").status == 14)
        #expect(try await sandbox.run("merge", guest, "--into", "nobody", "--policy", "union").status == 66)
        #expect(try await sandbox.run("merge", guest, "--into", account, "--policy", "coin-flip").status == 64)
        #expect(try sandbox.snapshot() == before)
    }

    @Test("merge re-checks caps and reports an account pushed over them")
    func mergeCaps() async throws {
        let sandbox = try await Sandbox.withStore("subscriptions")
        let account = try await sandbox.newGuest()
        #expect(try await sandbox.run("link", account, "--provider", "apple", "--subject", "a").status == 0)
        let guest = try await sandbox.newGuest()
        for index in 1...4 {
            #expect(
                try await sandbox.run("record", "put", account, "subscriptions", "a\(index)", "--data", "{}").status
                    == 0)
            #expect(
                try await sandbox.run("record", "put", guest, "subscriptions", "g\(index)", "--data", "{}").status == 0)
        }
        let merged = try await sandbox.run("merge", guest, "--into", account, "--policy", "union", "--json")
        #expect(merged.status == 0)
        let over = (merged.object["over_cap"] as? [[String: Any]])?.first
        #expect(over?["collection"] as? String == "subscriptions")
        #expect(over?["used"] as? Int == 8)
        #expect(try await sandbox.run("record", "put", account, "subscriptions", "new", "--data", "{}").status == 11)
    }

    @Test("migrate adopt twice equals once; a colliding key is reported, not overwritten")
    func adopt() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        let user = try await sandbox.newGuest()
        _ = try await sqlite(
            sandbox,
            """
            INSERT INTO records VALUES ('', 'habits', 'h1', '{"name":"Run"}', '2026-10-01T00:00:00.000Z', '2026-10-01T00:00:00.000Z');
            INSERT INTO records VALUES ('', 'completions', '/h1/2026-10-01', '{"habit":"h1","day":"2026-10-01"}', '2026-10-01T00:00:00.000Z', '2026-10-01T00:00:00.000Z');
            INSERT INTO records VALUES ('', 'completions', '/h1/2026-10-02', '{"habit":"h1","day":"2026-10-02"}', '2026-10-01T00:00:00.000Z', '2026-10-01T00:00:00.000Z');
            INSERT INTO records VALUES ('', 'awards', '/2026-10-01', '{"day":"2026-10-01"}', '2026-10-01T00:00:00.000Z', '2026-10-01T00:00:00.000Z');
            """)
        #expect(
            try await sandbox.run(
                "record", "put", user, "completions", "\(user)/h1/2026-10-02", "--data",
                #"{"habit":"h1","day":"2026-10-02","mine":true}"#
            ).status == 0)
        let first = try await sandbox.run("migrate", "adopt", user, "--json")
        #expect(first.status == 0, "\(first.stderr)")
        #expect((first.object["moved"] as? [String: Int]) == ["habits": 1, "completions": 1, "awards": 1])
        let collisions = first.object["collisions"] as? [[String: Any]]
        #expect(collisions?.first?["key_after"] as? String == "\(user)/h1/2026-10-02")
        let afterFirst = try await tableDump(sandbox, "records", orderBy: "owner_id, collection, key")
        #expect(afterFirst.contains("\(user)|awards|\(user)/2026-10-01"))
        #expect(afterFirst.contains(#"\#(user)/h1/2026-10-02|{"day":"2026-10-02","habit":"h1","mine":true}"#))
        #expect(afterFirst.contains("|completions|/h1/2026-10-02|"), "the colliding record stays with the guest owner")

        let stable = try sandbox.snapshot()
        #expect(try await sandbox.run("migrate", "adopt", "nobody").status == 66)
        #expect(try sandbox.snapshot() == stable)
        let second = try await sandbox.run("migrate", "adopt", user, "--json")
        #expect(second.object["already_adopted"] as? Bool == true)
        #expect(try await tableDump(sandbox, "records", orderBy: "owner_id, collection, key") == afterFirst)
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM outbox WHERE user_id = '\(user)'") == "1")
    }

    @Test("a store written by the first released schema is migrated with all data intact")
    func schemaUpgradeFromFixture() async throws {
        let sandbox = try Sandbox()
        let fixture = Sandbox.packageRoot.appendingPathComponent("Tests/Fixtures/store-v1-habits.sqlite")
        try FileManager.default.copyItem(at: fixture, to: sandbox.directory.appendingPathComponent("guestmode.sqlite"))
        let tables = try await sqlite(
            sandbox,
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'grdb_migrations' ORDER BY name"
        )
        .split(separator: "\n").map(String.init)
        #expect(tables.count == 17)
        // The columns each table had: later migrations may add columns (with defaults), never change these.
        let columns = try await tables.asyncMap {
            try await sqlite(sandbox, "SELECT group_concat(name, ', ') FROM pragma_table_info('\($0)')")
        }
        let before = try await zip(tables, columns).asyncMap {
            try await tableDump(sandbox, $0.0, orderBy: "1, 2", columns: $0.1)
        }

        let status = try await sandbox.run("db", "status", "--json")
        #expect(
            ((status.object["schema"] as? [String: Any])?["pending"] as? [String])?.contains("v2-conflict-archive")
                == true)
        let migrated = try await sandbox.run("db", "migrate")
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(migrated.stdout.contains("applied v2-conflict-archive"))
        #expect(
            try await zip(tables, columns).asyncMap {
                try await tableDump(sandbox, $0.0, orderBy: "1, 2", columns: $0.1)
            } == before)
        #expect(try await sandbox.run("db", "check").status == 0)
        let after = try await sandbox.run("db", "status", "--json")
        #expect(((after.object["schema"] as? [String: Any])?["pending"] as? [String]) == [])
        // And the data is usable by today's commands.
        let users = try await sandbox.run("user", "list", "--json")
        #expect((users.json as? [[String: Any]])?.count == 2)
    }

    @Test("a schema history with an earlier step missing is a damaged store (65), not a crash")
    func schemaHistoryWithAGap() async throws {
        let sandbox = try Sandbox()
        #expect(try await sandbox.run("init", "--profile", "voice", "--quiet").status == 0)
        _ = try await sqlite(sandbox, "DELETE FROM grdb_migrations WHERE identifier = 'v14-meter-grant-draws'")
        let before = try sandbox.snapshot()
        for arguments in [["user", "list", "--json"], ["db", "migrate", "--json"]] {
            let run = try await sandbox.run(arguments: arguments)
            #expect(run.status == 65, "\(arguments): \(run.stderr)")
            #expect(run.errorJSON["code"] as? String == "corrupt_store", "\(arguments)")
            #expect(
                (run.errorJSON["message"] as? String)?.contains(
                    "has v15-meter-grant-draws-owed applied but not the earlier v14-meter-grant-draws") == true,
                "\(arguments): \(run.stderr)")
        }
        #expect(try sandbox.snapshot() == before)
    }

    @Test("a schema migration that fails leaves the store at the previous version, with a clear message")
    func failedSchemaMigration() async throws {
        let sandbox = try Sandbox()
        let fixture = Sandbox.packageRoot.appendingPathComponent("Tests/Fixtures/store-v1-habits.sqlite")
        try FileManager.default.copyItem(at: fixture, to: sandbox.directory.appendingPathComponent("guestmode.sqlite"))
        // Someone created a table the next migration needs, by hand.
        _ = try await sqlite(
            sandbox, "CREATE TABLE conflict_archive (note TEXT); INSERT INTO conflict_archive VALUES ('mine')")
        let before = try sandbox.snapshot()
        let migrated = try await sandbox.run("db", "migrate", "--json")
        #expect(migrated.status == 65)
        #expect(migrated.errorJSON["code"] as? String == "schema_migration_failed")
        #expect((migrated.errorJSON["message"] as? String)?.contains("unchanged at v1-initial") == true)
        #expect(try sandbox.snapshot() == before)
        let status = try await sandbox.run("db", "status", "--json")
        let schema = status.object["schema"] as? [String: Any]
        #expect(schema?["applied"] as? [String] == ["v1-initial"])
        #expect(
            schema?["pending"] as? [String] == [
                "v2-conflict-archive", "v3-server", "v4-device-index", "v5-grants", "v6-webhooks",
                "v7-sign-in-buckets", "v8-migration-attempts", "v9-webhook-heads", "v10-meter-totals",
                "v11-identity-email",
                "v12-signing-keys", "v13-store-purchases", "v14-meter-grant-draws", "v15-meter-grant-draws-owed",
            ])
        #expect(
            try await sandbox.run("user", "list").status == 65,
            "commands refuse the store rather than run on a half-migrated one")
        _ = try await sqlite(sandbox, "DROP TABLE conflict_archive")
        #expect(try await sandbox.run("db", "migrate").status == 0)
        #expect(try await sandbox.run("user", "list").status == 0)
    }

    @Test("profile apply moves the store to a new profile version all-or-nothing, plan first")
    func profileApply() async throws {
        let sandbox = try await Sandbox.withStore("subscriptions")
        let guest = try await sandbox.newGuest()
        #expect(
            try await sandbox.run(
                "record", "put", guest, "subscriptions", "n", "--data", #"{"name":"Netflix","cost":15}"#
            ).status == 0)
        #expect(
            try await sandbox.run("record", "put", guest, "settings", "theme", "--data", #"{"dark":true}"#).status == 0)
        var text = try String(
            contentsOf: Sandbox.packageRoot.appendingPathComponent("Templates/subscriptions.yaml"), encoding: .utf8)
        text = text.replacingOccurrences(of: "version: 1", with: "version: 2")
            .replacingOccurrences(of: "  settings:\n", with: "  preferences:\n")
            .replacingOccurrences(of: "subscriptions: 5", with: "subscriptions: 10")
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
        let before = try sandbox.snapshot()
        let plan = try await sandbox.run("profile", "apply", "v2.yaml", "--dry-run")
        #expect(plan.status == 0, "\(plan.stderr)")
        #expect(plan.stdout.contains("rename collection settings → preferences: 1 record"))
        #expect(plan.stdout.contains("rename field subscriptions.cost → price: 1 record"))
        #expect(plan.stdout.contains("guest subscriptions: 5 → 10"))
        #expect(try sandbox.snapshot() == before)

        let applied = try await sandbox.run("profile", "apply", "v2.yaml")
        #expect(applied.status == 0, "\(applied.stderr)")
        #expect(try await sandbox.run("profile", "show", "--json").object["version"] as? Int == 2)
        #expect(
            try await sandbox.run("record", "get", guest, "subscriptions", "n").stdout
                == "{\"name\":\"Netflix\",\"price\":15}\n")
        #expect(try await sandbox.run("record", "get", guest, "preferences", "theme").status == 0)
        #expect(try await sandbox.run("profile", "apply", "v2.yaml").status == 65, "already at version 2")

        // Dropping a collection that holds records is refused and changes nothing.
        let dropping = text.replacingOccurrences(of: "version: 2", with: "version: 3")
            .replacingOccurrences(of: "  preferences:\n", with: "")
            .replacingOccurrences(of: "    - name: settings\n      collections: [preferences]\n", with: "")
        try sandbox.write("v3.yaml", dropping)
        let stable = try sandbox.snapshot()
        let refused = try await sandbox.run("profile", "apply", "v3.yaml")
        #expect(refused.status == 65)
        #expect(refused.stderr.contains("'preferences' is dropped"))
        #expect(try sandbox.snapshot() == stable)
    }
}
