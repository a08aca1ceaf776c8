import Foundation
import Testing

/// `meter grant`, `meter grants` and `meter revoke-grant` through the binary,
/// and the idempotency rule for grants and `track`.
@Suite("Meter grants")
struct GrantTests {
    private func voice() async throws -> (Sandbox, String) {
        let sandbox = try await Sandbox.withStore("voice")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        return (sandbox, try await sandbox.newGuest())
    }

    @Test("a referral grant is spent before the free minutes, and what is left lapses at its expiry")
    func referralBonus() async throws {
        let (sandbox, guest) = try await voice()
        let granted = try await sandbox.run(
            "meter", "grant", guest, "api_minutes", "30", "--expires", "30d", "--reason", "referral", "--json")
        #expect(granted.status == 0, "\(granted.stderr)")
        let grant = try #require(granted.object["grant"] as? [String: Any])
        #expect(grant["expires_at"] as? String == "2026-12-01T10:00:00.000Z" && grant["state"] as? String == "active")
        #expect((granted.object["status"] as? [String: Any])?["allowance"] as? Double == 90)
        let used = try await sandbox.run("meter", "use", guest, "api_minutes", "40")
        #expect(used.status == 0 && used.stdout.contains("40/90 (30 granted)"), "\(used.stdout)")
        let grants = try await sandbox.run("meter", "grants", guest, "--json")
        #expect((grants.json as? [[String: Any]])?.first?["remaining"] as? Double == 0)
        #expect((grants.json as? [[String: Any]])?.first?["state"] as? String == "used_up")
        // 40 used: 30 from the grant, 10 of the free 60.
        #expect(try await sandbox.run("meter", "check", guest, "api_minutes", "50").status == 0)
        #expect(try await sandbox.run("meter", "check", guest, "api_minutes", "50.5").status == 12)

        let other = try await sandbox.newGuest()
        #expect(
            try await sandbox.run("meter", "grant", other, "api_minutes", "30", "--until", "2026-11-10T00:00:00Z")
                .status == 0)
        #expect(try await sandbox.run("meter", "use", other, "api_minutes", "20").status == 0)
        let lapsed = try await sandbox.run(
            "--now", "2026-11-10T00:00:00Z", "meter", "status", other, "--format", "tsv", "--quiet")
        #expect(lapsed.stdout == "api_minutes\tguest\t20\t80\t60\t25\tnone\t20\n", "\(lapsed.stdout)")
        let listed = try await sandbox.run("--now", "2026-11-10T00:00:00Z", "meter", "grants", other, "--json")
        #expect((listed.json as? [[String: Any]])?.map { $0["state"] as? String } == ["expired"])
    }

    @Test(
        "a grant key repeated with the same grant answers as the first time; with another, exit 14 and nothing changes")
    func grantKeys() async throws {
        let (sandbox, guest) = try await voice()
        let arguments = ["meter", "grant", guest, "api_minutes", "30", "--expires", "30d", "--reason", "referral"]
        let first = try await sandbox.run(arguments: arguments + ["--id", "referral-1", "--json"])
        #expect(first.status == 0, "\(first.stderr)")
        // A retry a day later: the lifetime matches, so the answer is the first one.
        let retried = try await sandbox.run(
            arguments: ["--now", "2026-11-02T10:00:00Z"] + arguments + ["--id", "referral-1", "--json"])
        #expect(retried.status == 0 && retried.object["changed"] as? Bool == false)
        #expect(
            (retried.object["grant"] as? [String: Any])?["grant_id"] as? Int
                == (first.object["grant"] as? [String: Any])?["grant_id"] as? Int)
        let before = try sandbox.snapshot()
        let rows = try await sandbox.dump("guestmode.sqlite", "meter_grants")
        for changed in [["35"], ["30", "--expires", "31d"], ["30", "--reason", "refund", "--expires", "30d"]] {
            let refused = try await sandbox.run(
                arguments: ["meter", "grant", guest, "api_minutes"] + changed
                    + (changed.contains("--reason") ? [] : ["--reason", "referral"])
                    + (changed.count == 1 ? ["--expires", "30d"] : []) + ["--id", "referral-1", "--json"])
            #expect(refused.status == 14, "\(changed): \(refused.stderr)")
            #expect(refused.errorJSON["code"] as? String == "idempotency_key_reused")
            #expect((refused.errorJSON["message"] as? String)?.contains("'referral-1'") == true)
            #expect(try sandbox.snapshot() == before, "nothing changed, byte for byte")
            #expect(try await sandbox.dump("guestmode.sqlite", "meter_grants") == rows)
        }
        let text = try await sandbox.run(arguments: arguments + ["--id", "referral-1"])
        #expect(text.stdout.hasPrefix("already granted (id referral-1)"), "\(text.stdout)")
    }

    @Test(
        "track: a key reused with another count or properties exits 14 and changes nothing; the same event again counts once"
    )
    func trackKeys() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let cook = try await sandbox.newGuest()
        #expect(try await sandbox.run("track", cook, "recipe_created", "--id", "e1", "--count", "1").status == 0)
        let again = try await sandbox.run("track", cook, "recipe_created", "--id", "e1", "--count", "1")
        #expect(again.status == 0 && again.stdout.contains("already counted"), "\(again.stdout)")
        let before = try sandbox.snapshot()
        let events = try await sandbox.dump("guestmode.sqlite", "events")
        for other in [["--count", "5"], ["--prop", "cuisine=thai"]] {
            let refused = try await sandbox.run(
                arguments: ["track", cook, "recipe_created", "--id", "e1", "--json"] + other)
            #expect(refused.status == 14, "\(other): \(refused.stderr)")
            #expect(refused.errorJSON["code"] as? String == "idempotency_key_reused")
            #expect((refused.errorJSON["message"] as? String)?.contains("'e1'") == true)
            #expect(try sandbox.snapshot() == before)
            #expect(try await sandbox.dump("guestmode.sqlite", "events") == events)
        }
        try sandbox.write(
            "log.ndjson", "{\"user\":\"\(cook)\",\"action\":\"recipe_created\",\"id\":\"e1\",\"count\":2}\n")
        #expect(try await sandbox.run("track", "--from", "log.ndjson").status == 14)
        #expect(try sandbox.snapshot() == before)
    }

    @Test("revoke-grant lapses what is left; an unknown id exits 66; --expires with --until is a usage error")
    func revokeAndUsage() async throws {
        let (sandbox, guest) = try await voice()
        let granted = try await sandbox.run("meter", "grant", guest, "api_minutes", "10", "--json")
        let id = try #require((granted.object["grant"] as? [String: Any])?["grant_id"] as? Int)
        #expect(try await sandbox.run("meter", "use", guest, "api_minutes", "4").status == 0)
        let revoked = try await sandbox.run("meter", "revoke-grant", "\(id)", "--json")
        #expect(revoked.status == 0 && revoked.object["changed"] as? Bool == true)
        #expect((revoked.object["grant"] as? [String: Any])?["used"] as? Double == 4)
        #expect((revoked.object["status"] as? [String: Any])?["remaining"] as? Double == 60)
        let before = try sandbox.snapshot()
        #expect(try await sandbox.run("meter", "revoke-grant", "\(id)").stdout.hasPrefix("already revoked"))
        let missing = try await sandbox.run("meter", "revoke-grant", "999", "--json")
        #expect(missing.status == 66 && missing.errorJSON["code"] as? String == "grant_not_found")
        let both = try await sandbox.run(
            "meter", "grant", guest, "api_minutes", "5", "--expires", "1d", "--until", "2027-01-01T00:00:00Z")
        #expect(both.status == 64 && both.stderr.contains("--expires"))
        let past = try await sandbox.run("meter", "grant", guest, "api_minutes", "5", "--until", "2026-10-01T00:00:00Z")
        #expect(past.status == 64)
        #expect(try sandbox.snapshot() == before)
    }

    @Test("grants are trusted rows: an unsigned archive brings them only with --trust-unsigned")
    func unsignedArchive() async throws {
        let (sandbox, guest) = try await voice()
        #expect(try await sandbox.run("meter", "grant", guest, "api_minutes", "30", "--reason", "referral").status == 0)
        #expect(try await sandbox.run("backup", "export", guest, "--out", "signed.tar.gz").status == 0)
        try await sandbox.python(
            """
            import tarfile, io, json, hashlib
            entries, order = {}, []
            with tarfile.open('signed.tar.gz') as tar:
                for member in tar.getmembers():
                    entries[member.name] = tar.extractfile(member).read()
                    order.append(member.name)
            header = json.loads(entries['header.json'])
            header.pop('signing_key_id', None)
            entries['header.json'] = json.dumps(header).encode()
            manifest = json.loads(entries['manifest.json'])
            for entry in manifest['entries']:
                entry['size'] = len(entries[entry['name']])
                entry['sha256'] = hashlib.sha256(entries[entry['name']]).hexdigest()
            entries['manifest.json'] = json.dumps(manifest).encode()
            order.remove('signature.json')
            with tarfile.open('unsigned.tar.gz', 'w:gz') as tar:
                for name in order:
                    info = tarfile.TarInfo(name)
                    info.size = len(entries[name])
                    tar.addfile(info, io.BytesIO(entries[name]))
            """)
        #expect(try await sandbox.run("init", "--profile", "voice", "--store", "fresh.sqlite").status == 0)
        let untrusted = try await sandbox.run(
            "--store", "fresh.sqlite", "backup", "import", "unsigned.tar.gz", "--json")
        #expect(untrusted.status == 0, "\(untrusted.stderr)")
        #expect((untrusted.object["skipped_tables"] as? [String])?.contains("meter_grants") == true)
        #expect(try await sandbox.dump("fresh.sqlite", "meter_grants") == "")
        #expect(try await sandbox.run("init", "--profile", "voice", "--store", "third.sqlite").status == 0)
        let trusted = try await sandbox.run(
            "--store", "third.sqlite", "backup", "import", "unsigned.tar.gz", "--trust-unsigned")
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(try await sandbox.dump("third.sqlite", "meter_grants").contains("referral"))
        let status = try await sandbox.run("--store", "third.sqlite", "meter", "status", guest, "--json")
        #expect((status.json as? [[String: Any]])?.first?["allowance"] as? Double == 90)
    }

    @Test("merge and migrate carry the guest's grants into the account, keys kept apart")
    func mergeAndMigrateCarryGrants() async throws {
        let (sandbox, guest) = try await voice()
        let account = try await sandbox.newGuest()
        #expect(try await sandbox.run("link", account, "--provider", "apple", "--subject", "a-1").status == 0)
        for user in [guest, account] {
            #expect(try await sandbox.run("meter", "grant", user, "api_minutes", "10", "--id", "bonus").status == 0)
        }
        let merged = try await sandbox.run("merge", guest, "--into", account, "--policy", "union")
        #expect(merged.status == 0, "\(merged.stderr)")
        let grants = try await sandbox.run("meter", "grants", account, "--json")
        #expect((grants.json as? [[String: Any]])?.count == 2, "\(grants.stdout)")
        #expect(
            try await sqlite(sandbox, "SELECT group_concat(idempotency_key, ' ') FROM meter_grants")
                == "bonus@\(guest) bonus")

        let walker = try await sandbox.newGuest()
        #expect(try await sandbox.run("meter", "grant", walker, "api_minutes", "5").status == 0)
        let migrated = try await sandbox.run("migrate", walker, "--to", account)
        #expect(migrated.status == 0, "\(migrated.stderr)")
        let after = try await sandbox.run("meter", "status", account, "api_minutes", "--json")
        #expect((after.json as? [[String: Any]])?.first?["granted"] as? Double == 25)
        let report = try await sandbox.run("report", "usage", "--json")
        let meter = (report.object["meters"] as? [[String: Any]])?.first
        #expect(meter?["grants"] as? Int == 3 && meter?["granted"] as? Double == 25)
        #expect(try await sandbox.run("db", "check").status == 0)
    }

    @Test("a store of the previous schema version migrates to grants", arguments: ["sqlite", "postgres"])
    func previousSchemaMigrates(backend: String) async throws {
        let sandbox =
            backend == "sqlite" ? try await Sandbox.withStore("voice") : try await Sandbox.withPostgresStore("voice")
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("meter", "use", guest, "api_minutes", "5").status == 0)
        // Back to the version before grants: the table, the later webhook outbox, sign-in buckets, the counts of
        // migration attempts, the kept meter totals, the email index, signing keys and their migrations' records gone.
        let rollback =
            backend == "sqlite"
            ? "sqlite3 guestmode.sqlite \"DROP TABLE meter_grant_draws; DROP TRIGGER meter_grant_draws_add; DROP TRIGGER meter_grant_draws_remove; DROP TRIGGER meter_grant_draws_move; DROP TABLE meter_totals; DROP TRIGGER meter_totals_add; DROP TRIGGER meter_totals_remove; DROP TRIGGER meter_totals_move; DROP TABLE meter_grants; DROP TABLE webhook_outbox; DROP TABLE sign_in_buckets; DROP TABLE signing_keys; DROP TABLE store_purchases; DROP TABLE store_events; DROP INDEX identities_email; ALTER TABLE migration_journals DROP COLUMN resumes; ALTER TABLE migration_steps DROP COLUMN failures; DELETE FROM grdb_migrations WHERE identifier IN ('v5-grants', 'v6-webhooks', 'v7-sign-in-buckets', 'v8-migration-attempts', 'v9-webhook-heads', 'v10-meter-totals', 'v11-identity-email', 'v12-signing-keys', 'v13-store-purchases', 'v14-meter-grant-draws', 'v15-meter-grant-draws-owed')\""
            : "psql -q -d '\(sandbox.postgresURI)' -c \"DROP TABLE \(sandbox.postgresSchema).meter_grant_draws; DROP FUNCTION \(sandbox.postgresSchema).meter_grant_draws_forget_added() CASCADE; DROP FUNCTION \(sandbox.postgresSchema).meter_grant_draws_forget_removed() CASCADE; DROP TABLE \(sandbox.postgresSchema).meter_totals; DROP FUNCTION \(sandbox.postgresSchema).meter_totals_add() CASCADE; DROP FUNCTION \(sandbox.postgresSchema).meter_totals_remove() CASCADE; DROP TABLE \(sandbox.postgresSchema).meter_grants; DROP TABLE \(sandbox.postgresSchema).webhook_outbox; DROP TABLE \(sandbox.postgresSchema).sign_in_buckets; DROP TABLE \(sandbox.postgresSchema).signing_keys; DROP TABLE \(sandbox.postgresSchema).store_purchases; DROP TABLE \(sandbox.postgresSchema).store_events; DROP INDEX \(sandbox.postgresSchema).identities_email; ALTER TABLE \(sandbox.postgresSchema).migration_journals DROP COLUMN resumes; ALTER TABLE \(sandbox.postgresSchema).migration_steps DROP COLUMN failures; DELETE FROM \(sandbox.postgresSchema).schema_migrations WHERE identifier IN ('pg4-grants', 'pg5-webhooks', 'pg6-sign-in-buckets', 'pg7-migration-attempts', 'pg8-webhook-heads', 'pg9-meter-totals', 'pg10-identity-email', 'pg11-signing-keys', 'pg12-store-purchases', 'pg13-meter-grant-draws', 'pg14-meter-grant-draws-owed')\""
        #expect(try await sandbox.shell(rollback).status == 0)
        let name = backend == "sqlite" ? "v5-grants" : "pg4-grants"
        let webhooks = backend == "sqlite" ? "v6-webhooks" : "pg5-webhooks"
        let buckets = backend == "sqlite" ? "v7-sign-in-buckets" : "pg6-sign-in-buckets"
        let attempts = backend == "sqlite" ? "v8-migration-attempts" : "pg7-migration-attempts"
        let heads = backend == "sqlite" ? "v9-webhook-heads" : "pg8-webhook-heads"
        let totals = backend == "sqlite" ? "v10-meter-totals" : "pg9-meter-totals"
        let email = backend == "sqlite" ? "v11-identity-email" : "pg10-identity-email"
        let signing = backend == "sqlite" ? "v12-signing-keys" : "pg11-signing-keys"
        let purchases = backend == "sqlite" ? "v13-store-purchases" : "pg12-store-purchases"
        let draws = backend == "sqlite" ? "v14-meter-grant-draws" : "pg13-meter-grant-draws"
        let owed = backend == "sqlite" ? "v15-meter-grant-draws-owed" : "pg14-meter-grant-draws-owed"
        let status = try await sandbox.run("db", "status", "--json")
        #expect(
            (status.object["schema"] as? [String: Any])?["pending"] as? [String] == [
                name, webhooks, buckets, attempts, heads, totals, email, signing, purchases, draws, owed,
            ],
            "\(status.stdout)")
        let migrated = try await sandbox.run("db", "migrate")
        #expect(
            migrated.status == 0 && migrated.stdout.contains("applied \(name)"), "\(migrated.stdout)\(migrated.stderr)")
        #expect(
            try await sandbox.run("report", "migrations").status == 0, "the counts of migration attempts are back")
        #expect(try await sandbox.run("meter", "grant", guest, "api_minutes", "30").status == 0)
        let meter = try await sandbox.run("meter", "status", guest, "--json")
        #expect((meter.json as? [[String: Any]])?.first?["remaining"] as? Double == 85)
    }
}
