import Foundation
import Testing

/// The kept usage totals (meter_totals) a meter reads instead of its whole ledger: built for a store
/// that predates them, kept through uses, merges and deletions, and checked by `db check`.
@Suite("Meter usage totals: kept with the ledger, built by a migration, checked by db check")
struct MeterTotalTests {
    /// Runs SQL against the sandbox's store, as an operator with sqlite3 or psql would.
    private func execute(_ sql: String, in sandbox: Sandbox, _ backend: ServerTests.Backend) async throws {
        let command =
            backend == .sqlite
            ? "sqlite3 guestmode.sqlite \"\(sql)\""
            : "psql -q -v ON_ERROR_STOP=1 -d '\(sandbox.postgresURI)' -c 'SET search_path TO \(sandbox.postgresSchema)' -c \"\(sql)\""
        let result = try await sandbox.shell(command)
        #expect(result.status == 0, "\(sql): \(result.stderr)")
    }

    /// The one value a query gives, as text.
    private func value(_ sql: String, in sandbox: Sandbox, _ backend: ServerTests.Backend) async throws -> String {
        let command =
            backend == .sqlite
            ? "sqlite3 guestmode.sqlite \"\(sql)\""
            : "psql -qtA -v ON_ERROR_STOP=1 -d '\(sandbox.postgresURI)' -c 'SET search_path TO \(sandbox.postgresSchema)' -c \"\(sql)\""
        let result = try await sandbox.shell(command)
        #expect(result.status == 0, "\(sql): \(result.stderr)")
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func used(_ sandbox: Sandbox, _ user: String) async throws -> Double? {
        let status = try await sandbox.run("meter", "status", user, "api_minutes", "--json")
        #expect(status.status == 0, "\(status.stderr)")
        return ((status.json as? [[String: Any]])?.first?["used"] as? NSNumber)?.doubleValue
    }

    @Test(
        "a store without totals gets them built by its migration; uses, a merge and a deletion keep them exact",
        arguments: ServerTests.Backend.allCases)
    func builtAndKept(_ backend: ServerTests.Backend) async throws {
        let sandbox = try await backend.sandbox("voice")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let guest = try await sandbox.newGuest()
        let other = try await sandbox.newGuest()
        for (user, amount) in [(guest, "12.5"), (guest, "0.25"), (other, "3")] {
            #expect(try await sandbox.run("meter", "use", user, "api_minutes", amount).status == 0)
        }
        // The store as the version before kept it: no totals, no triggers, neither that migration nor the next applied.
        let forget =
            backend == .sqlite
            ? "DROP TABLE meter_grant_draws; DROP TRIGGER meter_grant_draws_add; DROP TRIGGER meter_grant_draws_remove; DROP TRIGGER meter_grant_draws_move; DROP TABLE meter_totals; DROP TRIGGER meter_totals_add; DROP TRIGGER meter_totals_remove; DROP TRIGGER meter_totals_move; DROP INDEX identities_email; DROP TABLE signing_keys; DROP TABLE store_purchases; DROP TABLE store_events; DELETE FROM grdb_migrations WHERE identifier IN ('v10-meter-totals', 'v11-identity-email', 'v12-signing-keys', 'v13-store-purchases', 'v14-meter-grant-draws', 'v15-meter-grant-draws-owed');"
            : "DROP TABLE meter_totals; DROP FUNCTION meter_totals_add() CASCADE; DROP FUNCTION meter_totals_remove() CASCADE; DROP INDEX identities_email; DELETE FROM schema_migrations WHERE identifier IN ('pg9-meter-totals', 'pg10-identity-email');"
        try await execute(forget, in: sandbox, backend)
        if backend == .sqlite {
            #expect(try await sandbox.run("db", "migrate").status == 0)
        }
        #expect(try await used(sandbox, guest) == 12.75)
        #expect(try await sandbox.run("db", "check").status == 0)

        sandbox.environment["GUESTMODE_NOW"] = "2026-11-02T09:00:00Z"
        #expect(try await sandbox.run("meter", "use", guest, "api_minutes", "1.5").status == 0)
        #expect(try await used(sandbox, guest) == 14.25)
        #expect(try await sandbox.run("link", guest, "--provider", "apple", "--subject", "s-1").status == 0)
        let merged = try await sandbox.run("merge", other, "--into", guest, "--policy", "union")
        #expect(merged.status == 0, "\(merged.stderr)")
        #expect(try await used(sandbox, guest) == 17.25, "the guest's usage moved with it")
        #expect(try await sandbox.run("db", "check").status == 0)
        #expect(try await sandbox.run("user", "delete", guest, "--yes").status == 0)
        #expect(try await sandbox.run("db", "check").status == 0)
    }

    @Test(
        "db check names a kept total that disagrees with its ledger, one that is missing, and a ledger amount that is no number",
        arguments: ServerTests.Backend.allCases)
    func checkNamesWhatDisagrees(_ backend: ServerTests.Backend) async throws {
        let sandbox = try await backend.sandbox("voice")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("meter", "use", guest, "api_minutes", "9.5").status == 0)
        #expect(try await sandbox.run("db", "check").status == 0)
        try await execute(
            "UPDATE meter_totals SET millionths = 1 WHERE span = 'month'; DELETE FROM meter_totals WHERE span = 'day';",
            in: sandbox, backend)
        let checked = try await sandbox.run("db", "check", "--json")
        #expect(checked.status == 65, "\(checked.stdout)\(checked.stderr)")
        let problems = (checked.object["problems"] as? [String]) ?? []
        #expect(
            problems.contains(
                "the kept usage of meter api_minutes of user \(guest) in 2026-11 is 0.000001 but its uses add up to 9.5"
            ),
            "\(problems)")
        #expect(
            problems.contains(
                "the kept usage of meter api_minutes of user \(guest) in 2026-11-01 is missing; its uses add up to 9.5"),
            "\(problems)")
        try await execute("UPDATE meter_usage SET amount = -3", in: sandbox, backend)
        let negative = try await sandbox.run("db", "check", "--json")
        let named = (negative.object["problems"] as? [String]) ?? []
        #expect(named.contains { $0.contains("of user \(guest) has amount -3") }, "\(named)")
    }

    @Test(
        "db migrate builds the kept grant draws of a store from before them; a build stopped after a batch is finished by the next",
        arguments: ServerTests.Backend.allCases)
    func migrateBuildsGrantDraws(_ backend: ServerTests.Backend) async throws {
        let sandbox = try await backend.sandbox("voice")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let guest = try await sandbox.newGuest()
        let early = try await sandbox.newGuest()
        #expect(try await sandbox.run("meter", "use", early, "api_minutes", "5").status == 0)
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-02T10:00:00Z"
        #expect(try await sandbox.run("meter", "grant", guest, "api_minutes", "10").status == 0)
        #expect(try await sandbox.run("meter", "grant", early, "api_minutes", "5", "--expires", "2d").status == 0)
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-03T10:00:00Z"
        #expect(try await sandbox.run("meter", "use", guest, "api_minutes", "64").status == 0)
        // 250 more holders, made as an operator would, so the build takes two batches (of 200).
        let bulk =
            backend == .sqlite
            ? "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 250) INSERT INTO users (id, state, prompt_state, created_at, last_seen_at) SELECT 'bulk-' || i, 'anonymous', 'anonymous', '2026-11-01T10:00:00.000Z', '2026-11-01T10:00:00.000Z' FROM n; INSERT INTO meter_grants (user_id, meter, amount, granted_at) SELECT id, 'api_minutes', 1, '2026-11-01T10:00:00.000Z' FROM users WHERE id LIKE 'bulk-%';"
            : "INSERT INTO users (id, state, prompt_state, created_at, last_seen_at) SELECT 'bulk-' || i, 'anonymous', 'anonymous', '2026-11-01T10:00:00.000Z', '2026-11-01T10:00:00.000Z' FROM generate_series(1, 250) AS i; INSERT INTO meter_grants (user_id, meter, amount, granted_at) SELECT id, 'api_minutes', 1, '2026-11-01T10:00:00.000Z' FROM users WHERE id LIKE 'bulk-%';"
        try await execute(bulk, in: sandbox, backend)
        // The store as the version before kept them: no table, no triggers, neither that step nor the next applied.
        let forget =
            backend == .sqlite
            ? "DROP TABLE meter_grant_draws; DROP TRIGGER meter_grant_draws_add; DROP TRIGGER meter_grant_draws_remove; DROP TRIGGER meter_grant_draws_move; DELETE FROM grdb_migrations WHERE identifier IN ('v14-meter-grant-draws', 'v15-meter-grant-draws-owed');"
            : "DROP TABLE meter_grant_draws; DROP FUNCTION meter_grant_draws_forget_added() CASCADE; DROP FUNCTION meter_grant_draws_forget_removed() CASCADE; DELETE FROM schema_migrations WHERE identifier IN ('pg13-meter-grant-draws', 'pg14-meter-grant-draws-owed');"
        try await execute(forget, in: sandbox, backend)
        let steps =
            backend == .sqlite
            ? ["v14-meter-grant-draws", "v15-meter-grant-draws-owed"]
            : ["pg13-meter-grant-draws", "pg14-meter-grant-draws-owed"]
        let old = try await sandbox.run("db", "status", "--json")
        #expect((old.object["schema"] as? [String: Any])?["pending"] as? [String] == steps, "\(old.stdout)")

        // The first migration stops once its first batch is in.
        let stopped = try await sandbox.run(
            arguments: ["db", "migrate"], environment: ["GUESTMODE_TEST_FAIL_AT": "grant-draws-batch"])
        #expect(stopped.status != 0 && stopped.stderr.contains("grant-draws-batch"), "\(stopped.stderr)")
        #expect(try await value("SELECT count(*) FROM meter_grant_draws", in: sandbox, backend) == "200")
        let status = try await sandbox.run("db", "status", "--json")
        #expect((status.object["schema"] as? [String: Any])?["pending"] as? [String] == [], "\(status.stdout)")
        // Part built, the store reads exactly: db check holds every kept row to the replay.
        #expect(try await sandbox.run("db", "check").status == 0)

        let migrated = try await sandbox.run("db", "migrate", "--json")
        #expect(migrated.status == 0, "\(migrated.stderr)")
        #expect(migrated.object["applied"] as? [String] == [], "\(migrated.stdout)")
        #expect((migrated.object["grant_draws_built"] as? NSNumber)?.intValue == 52, "\(migrated.stdout)")
        #expect(try await value("SELECT count(*) FROM meter_grant_draws", in: sandbox, backend) == "252")
        #expect(
            try await value("SELECT count(*) FROM meta WHERE key = 'meter_grant_draws_owed'", in: sandbox, backend)
                == "0")
        #expect(try await sandbox.run("db", "check").status == 0)
        let again = try await sandbox.run("db", "migrate", "--json")
        #expect((again.object["grant_draws_built"] as? NSNumber)?.intValue == 0, "\(again.stdout)")
        // The kept row is what a read uses: 64 used, the grant's 10 first, then 54 of the free 60.
        let meter = try await sandbox.run("meter", "status", guest, "api_minutes", "--json")
        #expect(
            ((meter.json as? [[String: Any]])?.first?["remaining"] as? NSNumber)?.doubleValue == 6, "\(meter.stdout)")
        try await execute(
            "UPDATE meter_grant_draws SET drawn = replace(drawn, ':10000000', ':1000000') WHERE user_id = '\(guest)'",
            in: sandbox, backend)
        let planted = try await sandbox.run("meter", "grants", guest, "--json")
        #expect(
            ((planted.json as? [[String: Any]])?.first?["used"] as? NSNumber)?.doubleValue == 1, "\(planted.stdout)")
        try await execute("DELETE FROM meter_grant_draws WHERE user_id = '\(guest)'", in: sandbox, backend)

        // No copy carries them: a copy builds its own.
        let copied = try await sandbox.run("db", "copy", "--to", sandbox.path("copy.sqlite"))
        #expect(copied.status == 0, "\(copied.stderr)")
        let kept = try await sandbox.shell("sqlite3 copy.sqlite 'SELECT count(*) FROM meter_grant_draws'")
        #expect(kept.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "252", "\(kept.stderr)")
        #expect(try await sandbox.run("--store", sandbox.path("copy.sqlite"), "db", "check").status == 0)
    }

    @Test(
        "a command that opens a store the previous release left at v14 (pg13), its kept grant draws not built, migrates it and builds them",
        arguments: ServerTests.Backend.allCases)
    func openingBuildsGrantDraws(_ backend: ServerTests.Backend) async throws {
        let sandbox = try await backend.sandbox("voice")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let guest = try await sandbox.newGuest()
        let other = try await sandbox.newGuest()
        for user in [guest, other] {
            #expect(try await sandbox.run("meter", "grant", user, "api_minutes", "10").status == 0)
            #expect(try await sandbox.run("meter", "use", user, "api_minutes", "3").status == 0)
        }
        // As the previous release left it: the table (its step shipped adding it empty), no row, the next step not applied.
        let forget =
            backend == .sqlite
            ? "DELETE FROM meter_grant_draws; DELETE FROM grdb_migrations WHERE identifier = 'v15-meter-grant-draws-owed';"
            : "DELETE FROM meter_grant_draws; DELETE FROM schema_migrations WHERE identifier = 'pg14-meter-grant-draws-owed';"
        try await execute(forget, in: sandbox, backend)
        let step = backend == .sqlite ? "v15-meter-grant-draws-owed" : "pg14-meter-grant-draws-owed"
        let old = try await sandbox.run("db", "status", "--json")
        #expect((old.object["schema"] as? [String: Any])?["pending"] as? [String] == [step], "\(old.stdout)")
        let status = try await sandbox.run("meter", "status", guest, "api_minutes", "--verbose")
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stderr.contains("built the kept grant draws of 2 users' meters"), "\(status.stderr)")
        #expect(try await value("SELECT count(*) FROM meter_grant_draws", in: sandbox, backend) == "2")
        #expect(try await sandbox.run("db", "check").status == 0)
        // Once: the next opening and a migration find nothing owed.
        let next = try await sandbox.run("meter", "status", other, "api_minutes", "--verbose")
        #expect(!next.stderr.contains("built the kept grant draws"), "\(next.stderr)")
        let migrated = try await sandbox.run("db", "migrate", "--json")
        #expect((migrated.object["grant_draws_built"] as? NSNumber)?.intValue == 0, "\(migrated.stdout)")
    }

    @Test(
        "db check names kept grant draws that disagree with the replay of their ledger",
        arguments: ServerTests.Backend.allCases)
    func checkNamesWrongGrantDraws(_ backend: ServerTests.Backend) async throws {
        let sandbox = try await backend.sandbox("voice")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("meter", "grant", guest, "api_minutes", "10").status == 0)
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-02T10:00:00Z"
        #expect(try await sandbox.run("meter", "use", guest, "api_minutes", "4").status == 0)
        #expect(try await sandbox.run("db", "check").status == 0)
        try await execute(
            "UPDATE meter_grant_draws SET drawn = replace(drawn, ':4000000', ':3000000'), drawn_in_period = 1",
            in: sandbox, backend)
        let checked = try await sandbox.run("db", "check", "--json")
        #expect(checked.status == 65, "\(checked.stdout)\(checked.stderr)")
        let problems = (checked.object["problems"] as? [String]) ?? []
        let what = "the kept grant draws of meter api_minutes of user \(guest)"
        #expect(
            problems.contains { $0.hasPrefix("\(what) say grant ") && $0.hasSuffix(" drew 3 but its ledger gives 4") },
            "\(problems)")
        #expect(
            problems.contains(
                "\(what) say the grants gave 0.000001 in the period of their latest use but its ledger gives 4"),
            "\(problems)")
        // The rows are derived: deleting them is the repair, and the next use rebuilds them from the ledger.
        try await execute("DELETE FROM meter_grant_draws", in: sandbox, backend)
        #expect(try await sandbox.run("db", "check").status == 0)
        #expect(try await sandbox.run("meter", "use", guest, "api_minutes", "1").status == 0)
        let status = try await sandbox.run("meter", "status", guest, "api_minutes", "--json")
        #expect(((status.json as? [[String: Any]])?.first?["remaining"] as? NSNumber)?.doubleValue == 65)
        #expect(try await sandbox.run("db", "check").status == 0)
    }
}
