import Foundation
import Testing

/// `user import` as a shell runs it: a Firebase export in, the users out
/// with their ids, and every refusal named by file and line with nothing
/// changed.
@Suite("user import")
struct UserImportEndToEndTests {
    /// Two accounts as `firebase auth:export users.json` writes them: an
    /// anonymous one and an Apple one.
    static let export = """
        {"users": [
        {
          "localId": "Zmlyc3RBbm9ueW1vdXNVc2VyMDAx",
          "lastSignedInAt": "1761912000000",
          "createdAt": "1761825600000"
        },
        {
          "localId": "YXBwbGVVc2VyMTIzNDU2Nzg5MDEy",
          "email": "ana@privaterelay.appleid.com",
          "emailVerified": true,
          "createdAt": "1761830000000",
          "providerUserInfo": [
            {
              "providerId": "apple.com",
              "rawId": "001234.5d9c0a1b2c3d.0912",
              "email": "ana@privaterelay.appleid.com"
            }
          ]
        }]}
        """

    /// Every table a refused import could touch, as sqlite3 prints it.
    private func tables(_ sandbox: Sandbox) async throws -> [String] {
        var dumps: [String] = []
        for table in ["users", "identities", "events", "outbox"] {
            let result = try await sandbox.shell(
                "sqlite3 -json guestmode.sqlite 'SELECT * FROM \(table) ORDER BY rowid'")
            #expect(result.status == 0, "\(result.stderr)")
            dumps.append(result.stdout)
        }
        return dumps
    }

    @Test("a Firebase export keeps its ids; a rerun changes nothing; standard input works")
    func importsAndReruns() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        try sandbox.write("users.json", Self.export)
        let dryRun = try await sandbox.run(
            "user", "import", "--from", "users.json", "--format", "firebase", "--dry-run")
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        #expect(dryRun.stdout.contains("would import 2 users (1 anonymous, 1 linked, 1 identity)"), "\(dryRun.stdout)")
        #expect(try await sqlite(sandbox, "SELECT count(*) FROM users") == "0")

        let imported = try await sandbox.run("user", "import", "--from", "users.json", "--format", "firebase", "--json")
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.object["users_created"] as? Int == 2)
        #expect(imported.object["password_hashes_skipped"] as? Int == 0)
        let shown = try await sandbox.run("user", "show", "YXBwbGVVc2VyMTIzNDU2Nzg5MDEy", "--json")
        #expect((shown.object["user"] as? [String: Any])?["state"] as? String == "linked", "\(shown.stdout)")
        #expect(try await sqlite(sandbox, "SELECT subject FROM identities") == "001234.5d9c0a1b2c3d.0912")
        #expect(
            try await sqlite(sandbox, "SELECT created_at FROM users WHERE id = 'Zmlyc3RBbm9ueW1vdXNVc2VyMDAx'")
                == "2025-10-30T12:00:00.000Z")
        let human = try await sandbox.run("user", "import", "--from", "users.json", "--format", "firebase")
        #expect(human.stderr.isEmpty, "nothing new, no password hash left out: \(human.stderr)")

        let before = try await tables(sandbox)
        let again = try await sandbox.run(
            arguments: ["user", "import", "--from", "-", "--format", "firebase", "--json"],
            input: Data(Self.export.utf8))
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.object["unchanged"] as? Int == 2 && again.object["users_created"] as? Int == 0)
        #expect(try await tables(sandbox) == before)
    }

    @Test("refusals: exit 14 for a conflict, 65 for a bad export, every account named, nothing changed")
    func refusals() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let guest = try await sandbox.newGuest()
        #expect(
            try await sandbox.run("link", guest, "--provider", "apple", "--subject", "001234.5d9c0a1b2c3d.0912").status
                == 0)
        try sandbox.write("users.json", Self.export)
        let before = try await tables(sandbox)

        let conflict = try await sandbox.run("user", "import", "--from", "users.json", "--format", "firebase")
        #expect(conflict.status == 14)
        #expect(
            conflict.stderr.contains(
                "users.json:7: the apple identity of account 'YXBwbGVVc2VyMTIzNDU2Nzg5MDEy' already belongs to user '\(guest)'; nothing was imported"
            ), "\(conflict.stderr)")
        #expect(try await tables(sandbox) == before)

        try sandbox.write(
            "bad.json",
            "{\"users\": [\n{\"localId\": \"a\"},\n{\"localId\": \"b\", \"createdAt\": \"soon\"},\n{\"localId\": \"c\", \"createdAt\": \"1\"}\n]}"
        )
        let bad = try await sandbox.run("user", "import", "--from", "bad.json", "--format", "firebase")
        #expect(bad.status == 65)
        #expect(
            bad.stderr.contains("guestmode: bad.json:3: 'createdAt' is not a number of milliseconds"), "\(bad.stderr)")
        #expect(
            bad.stderr.contains("bad.json:2: account 'a' has no 'createdAt' (and 1 more); nothing was imported"),
            "\(bad.stderr)")
        let badJSON = try await sandbox.run("user", "import", "--from", "bad.json", "--format", "firebase", "--json")
        #expect(badJSON.status == 65)
        #expect(badJSON.errorJSON["code"] as? String == "invalid_import_file", "\(badJSON.stderr)")
        #expect(
            (badJSON.errorJSON["message"] as? String)?.hasPrefix("bad.json:2: account 'a' has no 'createdAt'") == true)
        #expect(try await tables(sandbox) == before)

        let notAnExport = try await sandbox.run(
            "user", "import", "--from", "-", "--format", "firebase", input: "[1, 2]")
        #expect(notAnExport.status == 65)
        #expect(notAnExport.stderr.contains("<stdin>:1: the file does not start with '{'"), "\(notAnExport.stderr)")
        #expect(try await sandbox.run("user", "import", "--from", "missing.json", "--format", "firebase").status == 66)
        #expect(try await sandbox.run("user", "import", "--from", "users.json", "--format", "auth0").status == 64)
        #expect(try await tables(sandbox) == before)
    }

    @Test("Supabase: auth.users and auth.identities as psql exports them; each file named on its problems")
    func supabase() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let fixtures = Sandbox.packageRoot.appendingPathComponent("Tests/GuestModeKitTests/Fixtures/supabase")
        let users = fixtures.appendingPathComponent("users.csv").path
        let identities = fixtures.appendingPathComponent("identities.csv").path
        let imported = try await sandbox.run(
            "user", "import", "--from", users, "--identities", identities, "--format", "supabase", "--json")
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.object["format"] as? String == "supabase")
        #expect(imported.object["users_created"] as? Int == 3 && imported.object["linked"] as? Int == 2)
        #expect(
            try await sqlite(sandbox, "SELECT state FROM users WHERE id = '1f0e7a52-3c1b-4d6e-9a8b-2c3d4e5f6a7b'")
                == "anonymous")
        let before = try await tables(sandbox)
        let again = try await sandbox.run(
            arguments: ["user", "import", "--from", "-", "--identities", identities, "--format", "supabase"],
            input: try Data(contentsOf: URL(fileURLWithPath: users)))
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("3 already there unchanged"), "\(again.stdout)")
        #expect(try await tables(sandbox) == before)

        try sandbox.write("orphan.csv", "provider_id,user_id,provider\nx,ffffffff-0000-0000-0000-000000000000,google\n")
        let orphan = try await sandbox.run(
            "user", "import", "--from", users, "--identities", "orphan.csv", "--format", "supabase")
        #expect(orphan.status == 65)
        #expect(
            orphan.stderr.contains("orphan.csv:2: an identity of user 'ffffffff-0000-0000-0000-000000000000'"),
            "\(orphan.stderr)")
        #expect(try await tables(sandbox) == before)
        #expect(try await sandbox.run("user", "import", "--from", users, "--format", "supabase").status == 64)
        #expect(
            try await sandbox.run(
                "user", "import", "--from", users, "--identities", identities, "--format", "firebase"
            ).status == 64)
    }

}
