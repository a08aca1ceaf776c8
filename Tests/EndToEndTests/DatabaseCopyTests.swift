import Foundation
import Testing

/// Every table of the store with its primary key: the copy must carry them all.
private let storeTables: [(name: String, key: String)] = [
    ("meta", "key"), ("users", "id"), ("identities", "provider, subject"), ("credentials", "user_id"),
    ("upgrade_locks", "user_id"), ("events", "id"), ("counters", "user_id, action"),
    ("records", "owner_id, collection, key"), ("meter_usage", "id"),
    ("meter_warnings", "user_id, meter, period_start, percent"), ("meter_grants", "id"), ("plans", "id"),
    ("prompt_outcomes", "id"),
    ("experiment_assignments", "user_id, experiment"), ("outbox", "user_id"), ("user_flags", "user_id, flag"),
    ("migration_journals", "id"), ("migration_steps", "journal_id, position"), ("conflict_archive", "id"),
    ("server_keys", "name"), ("session_families", "id"), ("refresh_tokens", "token_hash"),
    ("kept_responses", "principal, key"), ("webhook_outbox", "id"), ("sign_in_buckets", "address"),
    ("signing_keys", "id"), ("store_purchases", "source, original_transaction_id"),
    ("store_events", "source, event_id"),
]

/// A recipes store with rows in every table: the seeded guest and account,
/// a merge (journals, steps, conflict archive), a migration of another guest,
/// and the rows no command of this profile writes put in directly.
private func storeWithEveryTable() async throws -> Sandbox {
    let (sandbox, guest, account) = try await seededRecipes()
    let merged = try await sandbox.run("merge", guest, "--into", account, "--policy", "union")
    #expect(merged.status == 0, "\(merged.stderr)")
    sandbox.environment["GUESTMODE_NOW"] = "2026-11-03T10:00:00Z"
    let other = try await sandbox.newGuest()
    let target = try await sandbox.newGuest()
    #expect(try await sandbox.run("link", target, "--provider", "apple", "--subject", "a-9").status == 0)
    #expect(try await sandbox.run("record", "put", other, "recipes", "stew", "--data", #"{"x":1.5}"#).status == 0)
    #expect(try await sandbox.run("track", other, "app_opened", "--count", "4").status == 0)
    #expect(try await sandbox.run("meter", "use", other, "video_generations", "1").status == 0)
    #expect(
        try await sandbox.run(
            "meter", "grant", other, "video_generations", "2.5", "--expires", "7d", "--reason", "refund", "--id", "r-1"
        ).status == 0)
    let migrated = try await sandbox.run("migrate", other, "--to", target)
    #expect(migrated.status == 0, "\(migrated.stderr)")
    let kept = try await sandbox.newGuest()
    #expect(try await sandbox.run("record", "put", kept, "recipes", "toast", "--data", #"{"é":"ü ✓"}"#).status == 0)
    _ = try await sqlite(
        sandbox,
        """
        INSERT INTO credentials VALUES ('\(account)', 'ana', 'hash', '2026-11-01T10:00:00.000Z');
        INSERT INTO upgrade_locks VALUES ('\(kept)', 'apple', '2026-11-03T10:00:00.000Z');
        INSERT INTO meter_warnings VALUES ('\(account)', 'video_generations', '2026-11-01T00:00:00.000Z', 80.5, 'warning', '2026-11-02T10:00:00.000Z');
        INSERT INTO outbox VALUES ('\(kept)', '2026-11-03T10:00:00.000Z', 2, 'unreachable', NULL);
        INSERT INTO user_flags VALUES ('\(kept)', 'adopted', '2026-11-03T10:00:00.000Z');
        INSERT INTO session_families VALUES ('family-1', '\(kept)', '2026-11-03T10:00:00.000Z', NULL);
        INSERT INTO refresh_tokens VALUES ('\(String(repeating: "ab", count: 32))', 'family-1', '2026-11-03T10:00:00.000Z', NULL);
        INSERT INTO kept_responses VALUES ('user:\(kept)', 'k-1', '\(String(repeating: "cd", count: 32))', 201, '{"ok":true}', '2026-11-03T10:00:00.000Z');
        INSERT INTO webhook_outbox VALUES (7, 'evt_1', 'crm', 'user.deleted', '\(kept)', '2026-11-03T10:00:00.000Z', '', '{"id":"evt_1"}', 'held', 8, 'HTTP 500', NULL, NULL);
        INSERT INTO sign_in_buckets VALUES ('192.0.2.1', 12.5, '2026-11-03T10:00:00.000Z');
        INSERT INTO store_purchases VALUES ('app_store', '2000000001', '\(kept)', 'premium', '2026-11-03T10:00:00.000Z', '2000000002', 'sandbox', NULL);
        INSERT INTO store_events VALUES ('app_store', 'n-1', '2000000001', 'applied', '2026-11-03T10:00:00.000Z');
        """)
    #expect(try await sandbox.run("serve", "key", "create", "backend", "--scope", "user-data").status == 0)
    #expect(try await sandbox.run("serve", "signing-key", "rotate").status == 0)
    for table in storeTables {
        let count = try await sqlite(sandbox, "SELECT COUNT(*) FROM \(table.name)")
        #expect(count.trimmingCharacters(in: .whitespacesAndNewlines) != "0", "no rows in \(table.name)")
    }
    return sandbox
}

@Suite("db copy: a whole store between SQLite and PostgreSQL")
struct DatabaseCopyTests {
    @Test("SQLite → PostgreSQL → SQLite gives back an identical store, table by table")
    func roundTrip() async throws {
        let uri = try #require(
            ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 },
            "GUESTMODE_TEST_POSTGRES is not set: run the tests through 'make test'")
        let schema = "copy_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let sandbox = try await storeWithEveryTable()

        let there = try await sandbox.run(
            "--verbose", "db", "copy", "--to", uri, "--to-schema", schema, "--json")
        #expect(there.status == 0, "\(there.stderr)")
        #expect(there.stderr.contains("verifying"), "\(there.stderr)")
        let thereTables = try #require(there.object["tables"] as? [String: [String: Any]])
        #expect(Set(thereTables.keys) == Set(storeTables.map(\.name)))
        #expect(!(there.stdout.contains("password")))

        let back = try await sandbox.run(
            arguments: ["db", "copy", "--to", sandbox.path("back.sqlite"), "--json"],
            environment: ["GUESTMODE_STORE": uri, "GUESTMODE_SCHEMA": schema])
        #expect(back.status == 0, "\(back.stderr)")
        let backTables = try #require(back.object["tables"] as? [String: [String: Any]])
        for table in storeTables {
            #expect(thereTables[table.name]?["sha256"] as? String == backTables[table.name]?["sha256"] as? String)
            #expect(thereTables[table.name]?["rows"] as? Int == backTables[table.name]?["rows"] as? Int)
            let original = try await tableDump(sandbox, table.name, orderBy: table.key)
            let copied = try await tableDump(sandbox, table.name, orderBy: table.key, store: "back.sqlite")
            #expect(!original.isEmpty)
            #expect(original == copied, "\(table.name) differs after the round trip")
        }
        // The copy is a working store: the same profile and commands.
        let status = try await sandbox.run("--store", sandbox.path("back.sqlite"), "db", "status", "--json")
        #expect(status.object["profile"] as? String == "recipes")
        #expect(try await sandbox.run("--store", sandbox.path("back.sqlite"), "db", "check").status == 0)
    }

    @Test("a copy onto an existing store is refused and changes nothing; --force replaces it")
    func refused() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("record", "put", guest, "recipes", "a", "--data", "{}").status == 0)
        let other = try Sandbox()
        #expect(try await other.run("init", "--profile", "habits").status == 0)
        let destination = other.path("guestmode.sqlite")
        let before = try other.snapshot()
        let sourceBefore = try sandbox.snapshot()

        let refused = try await sandbox.run("db", "copy", "--to", destination, "--json")
        #expect(refused.status == 73)
        #expect(refused.errorJSON["code"] as? String == "store_exists")
        #expect(try other.snapshot() == before)
        #expect(try sandbox.snapshot() == sourceBefore)

        let itself = try await sandbox.run("db", "copy", "--to", sandbox.path("guestmode.sqlite"), "--json")
        #expect(itself.status == 64)
        #expect(itself.errorJSON["code"] as? String == "same_store")
        #expect(try sandbox.snapshot() == sourceBefore)

        let forced = try await sandbox.run("db", "copy", "--to", destination, "--force")
        #expect(forced.status == 0, "\(forced.stderr)")
        let status = try await sandbox.run("--store", destination, "db", "status", "--json")
        #expect(status.object["profile"] as? String == "recipes")
    }

    @Test("rows the copy cannot carry fail the verification: exit 65 and no destination left")
    func mismatch() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        _ = try await sandbox.newGuest()
        // An outbox row of no user: whole-store backup rows do not carry it, so the counts differ.
        _ = try await sqlite(
            sandbox, "INSERT INTO outbox VALUES ('nobody', '2026-11-03T10:00:00.000Z', 0, NULL, NULL);")
        let copy = try await sandbox.run("db", "copy", "--to", sandbox.path("copy.sqlite"), "--json")
        #expect(copy.status == 65)
        #expect(copy.errorJSON["code"] as? String == "copy_mismatch")
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("copy.sqlite")))
    }
}
