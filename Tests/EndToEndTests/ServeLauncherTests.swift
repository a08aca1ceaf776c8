import Foundation
import Testing

/// `guestmode serve` runs guestmode-serve in its place (guestmode-serve(1), DESCRIPTION): the same
/// arguments without `serve`, the global options wherever they were, its exit status and help. The
/// server suites start every server this way, so they check its signals and streams.
@Suite("guestmode serve runs guestmode-serve")
struct ServeLauncherTests {
    @Test("global options before serve, help for serve and its subcommands, and a usage error's status pass through")
    func argumentsPassThrough() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let created = try await sandbox.run(
            "--store", "guestmode.sqlite", "serve", "key", "create", "k", "--scope", "admin", "-q")
        #expect(created.status == 0, "\(created.stderr)")
        let listed = try await sandbox.run("--json", "serve", "key", "list")
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect((listed.json as? [[String: Any]])?.first?["name"] as? String == "k", "\(listed.stdout)")
        for arguments in [["serve", "--help"], ["help", "serve"]] {
            let help = try await sandbox.run(arguments: arguments)
            #expect(help.status == 0, "\(arguments): \(help.stderr)")
            #expect(
                help.stdout.contains("USAGE: guestmode serve <options> <subcommand>"), "\(arguments): \(help.stdout)")
            #expect(help.stdout.contains("--listen <host:port>"), "\(arguments): \(help.stdout)")
        }
        let keyHelp = try await sandbox.run("help", "serve", "key", "create")
        #expect(keyHelp.stdout.contains("USAGE: guestmode serve key create"), "\(keyHelp.stdout)")
        let bad = try await sandbox.run("serve", "--listen", "nowhere")
        #expect(bad.status == 64)
        #expect(
            bad.stderr
                == "guestmode: --listen 'nowhere' must be HOST:PORT, e.g. 127.0.0.1:8080; see 'guestmode serve --help'\n",
            "\(bad.stderr)")
        // A store named `serve` is a value, not the command.
        let value = try await sandbox.run("--store", "serve", "counters", "u")
        #expect(!value.stderr.contains("guestmode-serve"), "\(value.stderr)")
    }

    @Test("without guestmode-serve beside it or on PATH, serve says what is missing and exits 66")
    func missingServer() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let alone = sandbox.path("alone")
        let copied = try await sandbox.shell(
            "mkdir '\(alone)' && { ln '\(Sandbox.binary.path)' '\(alone)/guestmode' 2>/dev/null || cp '\(Sandbox.binary.path)' '\(alone)/guestmode'; }"
        )
        #expect(copied.status == 0, "\(copied.stderr)")
        let result = try await sandbox.shell("PATH=/usr/bin:/bin '\(alone)/guestmode' serve --listen 127.0.0.1:0")
        #expect(result.status == 66, "\(result.stderr)")
        #expect(
            result.stderr.contains("runs guestmode-serve, which is neither beside this guestmode"), "\(result.stderr)")
        let json = try await sandbox.shell("PATH=/usr/bin:/bin '\(alone)/guestmode' serve --json")
        #expect(json.status == 66)
        #expect(json.errorJSON["code"] as? String == "file_not_found", "\(json.stderr)")
    }

    @Test("plan import runs in guestmode-serve: its arguments, stdin, guestmode's words, exit 66 without it")
    func planImportRunsInServe() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        // Global options before the command's words, the file on standard input, the report on standard output.
        let empty = try await sandbox.run(
            "--json", "--store", "guestmode.sqlite", "plan", "import", "--from", "-", "--format", "revenuecat",
            input: "\n")
        #expect(empty.status == 0, "\(empty.stderr)")
        #expect(empty.object["format"] as? String == "revenuecat", "\(empty.stdout)")
        #expect(empty.object["lines"] as? Int == 0, "\(empty.stdout)")
        // A failure of the run (here, in guestmode-serve) reads as guestmode's, with its status.
        let missing = try await sandbox.run("plan", "import", "--from", "missing.ndjson", "--format", "revenuecat")
        #expect(missing.status == 66, "\(missing.stderr)")
        #expect(missing.stderr.hasPrefix("guestmode: "), "\(missing.stderr)")
        #expect(!missing.stderr.contains("guestmode-serve"), "\(missing.stderr)")
        // A usage error of plan import is guestmode's own, before anything runs.
        let usage = try await sandbox.run("plan", "import", "--from", "-", "--format", "app-store")
        #expect(usage.status == 64, "\(usage.stderr)")
        #expect(usage.stderr.hasSuffix("; see 'guestmode plan import --help'\n"), "\(usage.stderr)")
        let alone = sandbox.path("alone")
        let copied = try await sandbox.shell(
            "mkdir '\(alone)' && { ln '\(Sandbox.binary.path)' '\(alone)/guestmode' 2>/dev/null || cp '\(Sandbox.binary.path)' '\(alone)/guestmode'; }"
        )
        #expect(copied.status == 0, "\(copied.stderr)")
        try sandbox.write("empty.ndjson", "")
        let result = try await sandbox.shell(
            "PATH=/usr/bin:/bin '\(alone)/guestmode' plan import --from empty.ndjson --format revenuecat --json")
        #expect(result.status == 66, "\(result.stderr)")
        #expect(result.errorJSON["code"] as? String == "file_not_found", "\(result.stderr)")
        #expect(
            (result.errorJSON["message"] as? String)?.contains(
                "'guestmode plan import' runs guestmode-serve, which is neither beside this guestmode") == true,
            "\(result.stderr)")
    }
}
