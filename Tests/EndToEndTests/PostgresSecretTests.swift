import Foundation
import Testing

/// A PostgreSQL password given in `--store` never reaches a terminal, a file
/// or a table: a whole journey is run with one, and everything it produced is
/// searched for it. The test server trusts every local connection, so the
/// password is accepted and ignored.
@Suite("PostgreSQL: a password in the store URI is never printed, written or stored")
struct PostgresSecretTests {
    static let secret = "Pw7-leak-QZ9x"

    /// The test server's URI with `secret` as the password, in the form given.
    static func uri(_ form: (String) -> String) throws -> String {
        let base = try #require(
            ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 },
            "GUESTMODE_TEST_POSTGRES is not set: run the tests through 'make test'")
        return form(base)
    }

    /// Every file under `directory`, read whole (the sandbox is also $HOME, so
    /// ~/.config and ~/.local/state are searched too).
    static func filesContaining(_ needle: String, under directory: URL) throws -> [String] {
        var found: [String] = []
        let enumerator = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = enumerator?.nextObject() as? URL {
            if url.path.contains(needle) { found.append(url.path) }
            guard (try url.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true else { continue }
            if try Data(contentsOf: url).range(of: Data(needle.utf8)) != nil { found.append(url.path) }
        }
        return found
    }

    @Test(
        "init, status, track, records, migrate with its safety backup, journals, copy and errors: no password anywhere")
    func wholeJourney() async throws {
        let uri = try Self.uri { $0.replacingOccurrences(of: "://guestmode@", with: "://guestmode:\(Self.secret)@") }
        #expect(uri.contains(Self.secret))
        let sandbox = try Sandbox()
        sandbox.environment["GUESTMODE_STORE"] = uri
        let schema = "e2e_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        sandbox.environment["GUESTMODE_SCHEMA"] = schema
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        var transcript: [Sandbox.Result] = []
        func run(_ arguments: String..., status: Int32 = 0) async throws -> Sandbox.Result {
            let result = try await sandbox.run(arguments: arguments)
            #expect(result.status == status, "\(arguments.joined(separator: " ")): \(result.stderr)")
            transcript.append(result)
            return result
        }
        let created = try await run("init", "--profile", "recipes")
        #expect(created.stdout.contains("postgresql://guestmode:…@"), "\(created.stdout)")
        _ = try await run("init", "--profile", "recipes", "--force", "--json", "--verbose")
        let status = try await run("db", "status")
        #expect(status.stdout.contains("store:    postgresql://guestmode:…@"), "\(status.stdout)")
        let statusJSON = try await run("db", "status", "--json")
        #expect((statusJSON.object["store"] as? String)?.hasPrefix("postgresql://guestmode:…@") == true)
        _ = try await run("db", "status", "--verbose")
        _ = try await run("db", "check", "--verbose")

        let account = try await run("guest", "new").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try await run("link", account, "--provider", "google", "--subject", "g-1", "--verbose")
        let guest = try await run("guest", "new", "--verbose").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try await run("track", guest, "app_opened", "--count", "2", "--verbose")
        _ = try await run("record", "put", guest, "recipes", "soup", "--data", #"{"by":"guest"}"#, "--verbose")
        let migrated = try await run("migrate", guest, "--to", account, "--json", "--verbose")
        let backup = try #require(
            (migrated.object["journal"] as? [String: Any])?["backup_path"] as? String, "\(migrated.stdout)")
        // A PostgreSQL store's safety backups go to the per-user state folder ($HOME is the sandbox here).
        #expect(
            backup.hasPrefix(sandbox.directory.appendingPathComponent(".local/state/guestmode/backups/").path),
            "\(backup)")
        #expect(FileManager.default.fileExists(atPath: backup))
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("postgresql:")))
        _ = try await run("migrate", "status", account, "--json")
        _ = try await run("migrate", "status", account)

        // A second migration, with XDG_STATE_HOME and then --backup-directory choosing the folder.
        let second = try await run("guest", "new").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try await run("record", "put", second, "recipes", "pie", "--data", "{}")
        sandbox.environment["XDG_STATE_HOME"] = sandbox.path("state")
        let viaState = try await run("migrate", second, "--to", account)
        #expect(viaState.stderr.contains(sandbox.path("state/guestmode/backups/migrate-")), "\(viaState.stderr)")
        let third = try await run("guest", "new").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try await run("record", "put", third, "recipes", "tart", "--data", "{}")
        let chosen = try await run("migrate", third, "--to", account, "--backup-directory", "chosen", "--json")
        #expect(
            ((chosen.object["journal"] as? [String: Any])?["backup_path"] as? String)?.hasPrefix(
                sandbox.path("chosen/migrate-")) == true,
            "\(chosen.stdout)")

        _ = try await run("backup", "export", "--all", "--out", "all.tar.zst", "--verbose")
        _ = try await run("db", "copy", "--to", "copy.sqlite", "--verbose")
        _ = try await run("db", "copy", "--to", "copy.sqlite", "--json", status: 73)
        // Failures name the store too.
        _ = try await run("db", "status", "--schema", "Bad-Schema", status: 64)
        _ = try await run("db", "status", "--schema", "bad_schema_xyz", "--json", status: 66)
        let unreachable = uri.replacing(#/:\d+\//#, with: ":1/")
        let refused = try await sandbox.run(arguments: ["db", "status", "--store", unreachable])
        #expect(refused.status == 75 && refused.stderr.contains("guestmode:…@"), "\(refused.stderr)")
        transcript.append(refused)
        transcript.append(try await sandbox.run(arguments: ["db", "status", "--store", unreachable, "--json"]))
        transcript.append(try await sandbox.run(arguments: ["user", "show", "nobody", "--verbose"]))

        for result in transcript {
            #expect(!result.stdout.contains(Self.secret), "stdout: \(result.stdout)")
            #expect(!result.stderr.contains(Self.secret), "stderr: \(result.stderr)")
        }
        #expect(try Self.filesContaining(Self.secret, under: sandbox.directory) == [])
        let copied = try await sandbox.shell("sqlite3 copy.sqlite .dump")
        #expect(copied.status == 0 && copied.stdout.contains("migration_journals"), "\(copied.stderr)")
        #expect(!copied.stdout.contains(Self.secret))
        #expect(!copied.stdout.contains("postgres"), "a journal names the URI: \(copied.stdout)")
        let plain = uri.replacingOccurrences(of: ":\(Self.secret)@", with: "@")
        let dump = try await sandbox.shell("pg_dump --data-only --schema=\(schema) '\(plain)'")
        #expect(dump.status == 0 && dump.stdout.contains("migration_journals"), "\(dump.stderr)")
        #expect(!dump.stdout.contains(Self.secret))
        #expect(!dump.stdout.contains("postgres:/"), "a journal names the URI")
    }

    @Test(
        "a password given as a URI parameter, percent-encoded or not, is hidden too",
        arguments: [
            "?password=", "?sslmode=disable&password=", "?pass%77ord=",
        ])
    func passwordParameter(_ parameter: String) async throws {
        let uri = try Self.uri { $0 + parameter + Self.secret }
        let sandbox = try Sandbox()
        sandbox.environment["GUESTMODE_STORE"] = uri
        sandbox.environment["GUESTMODE_SCHEMA"] =
            "e2e_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        var results = [try await sandbox.run("init", "--profile", "recipes", "--verbose")]
        results.append(try await sandbox.run("db", "status", "--json"))
        results.append(try await sandbox.run("db", "status"))
        results.append(
            try await sandbox.run(arguments: ["db", "status", "--store", uri.replacing(#/:\d+\//#, with: ":1/")]))
        #expect(results.map(\.status) == [0, 0, 0, 75], "\(results.map(\.stderr))")
        #expect(results[1].object["store"] as? String != nil)
        for result in results {
            #expect(!result.stdout.contains(Self.secret), "stdout: \(result.stdout)")
            #expect(!result.stderr.contains(Self.secret), "stderr: \(result.stderr)")
        }
        #expect(try Self.filesContaining(Self.secret, under: sandbox.directory) == [])
    }

    @Test("a keyword/value connection string is refused without echoing it, and no file is made of it")
    func keywordValueConninfo() async throws {
        let sandbox = try Sandbox()
        let result = try await sandbox.run(
            "db", "status", "--store", "host=127.0.0.1 dbname=guestmode_test password=\(Self.secret)")
        #expect(result.status == 64)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("postgres://"), "\(result.stderr)")
        #expect(!result.stderr.contains(Self.secret))
        let initialised = try await sandbox.run(
            "init", "--profile", "recipes", "--store", "host=127.0.0.1 password=\(Self.secret)", "--json")
        #expect(initialised.status == 64)
        #expect(!initialised.stderr.contains(Self.secret))
        #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path) == [])
    }
}
