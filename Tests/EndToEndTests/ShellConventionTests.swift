import Foundation
import Testing

/// Shell conventions (guestmode(1)): --quiet prints data only, --format on listing commands, `-` for
/// standard input and output.
@Suite("Shell conventions: --quiet, --format, - for stdin/stdout")
struct ShellConventionTests {
    private func guests(_ sandbox: Sandbox, _ count: Int) async throws -> [String] {
        try await (0..<count).asyncMap { _ in
            try await sandbox.run("guest", "new", "--quiet").stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    @Test("user list -q | head -1 prints a user id, no header, in every text format")
    func quietPrintsDataOnly() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let ids = try await guests(sandbox, 2)
        let table = try await sandbox.run("user", "list", "-q")
        #expect(table.status == 0, "\(table.stderr)")
        let listed = table.stdout.split(separator: "\n").map(String.init)
        #expect(listed.count == 2 && Set(listed) == Set(ids), "the ids alone: \(table.stdout)")
        let piped = try await sandbox.shell("'\(Sandbox.binary.path)' user list -q | head -1")
        #expect(piped.stdout == listed.first.map { $0 + "\n" }, "\(piped.stdout)")
        for format in ["tsv", "csv"] {
            let quiet = try await sandbox.run("user", "list", "-q", "--format", format)
            let lines = quiet.stdout.split(separator: "\n")
            #expect(lines.count == 2, "\(format): \(quiet.stdout)")
            #expect(ids.contains(String(lines.first?.split(whereSeparator: { $0 == "\t" || $0 == "," }).first ?? "")))
            let loud = try await sandbox.run("user", "list", "--format", format)
            #expect(loud.stdout.hasPrefix(format == "csv" ? "user_id,state," : "user_id\tstate\t"), "\(loud.stdout)")
        }
        let counters = try await sandbox.run("counters", ids[0], "-q")
        #expect(!counters.stdout.contains("ACTION"))
    }

    @Test("--format json and ndjson on listing commands; rates in csv are numbers")
    func machineFormats() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let ids = try await guests(sandbox, 3)
        let ndjson = try await sandbox.run("user", "list", "--format", "ndjson")
        let rows = ndjson.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(rows.compactMap { $0["user_id"] as? String }.sorted() == ids.sorted(), "\(ndjson.stdout)")
        let json = try await sandbox.run("user", "list", "--format", "json")
        #expect((json.json as? [[String: Any]])?.count == 3)
        #expect(try await sandbox.run("meter", "use", ids[0], "api_minutes", "55").status == 0)
        let csv = try await sandbox.run("meter", "status", ids[0], "--format", "csv")
        #expect(csv.stdout.contains("api_minutes,guest,55,60,5,91.666667,critical"), "\(csv.stdout)")
        let status = try await sandbox.run("meter", "status", ids[0], "--json")
        #expect(!status.stdout.contains("91.66666666"))
        for command in [
            ["counters", ids[0]], ["record", "list", ids[0], "commands"], ["plan", "status", ids[0]],
            ["prompt", "history", ids[0]], ["backup", "queue"], ["migrate", "status"], ["limit", ids[0]],
            ["report", "funnel"], ["profile", "list"],
        ] {
            for format in ["table", "tsv", "csv", "json", "ndjson"] {
                let result = try await sandbox.run(arguments: command + ["--format", format])
                #expect(result.status == 0, "\(command) --format \(format): \(result.stderr)")
                if format == "json" { #expect(result.json != nil, "\(command): \(result.stdout)") }
                if format == "ndjson" {
                    for line in result.stdout.split(separator: "\n") {
                        #expect(
                            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) != nil, "\(command): \(line)")
                    }
                }
            }
        }
        let funnel = try await sandbox.run("report", "funnel", "--format", "csv")
        #expect(!funnel.stdout.contains("%"), "\(funnel.stdout)")
    }

    @Test("backup export --all --out - | backup import - round-trips; verify - and inspect - read stdin")
    func standardStreams() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let ids = try await guests(sandbox, 2)
        #expect(try await sandbox.run("meter", "use", ids[0], "api_minutes", "12.5").status == 0)
        #expect(try await sandbox.run("--store", "other.sqlite", "init", "--profile", "voice").status == 0)
        // The same deployment: the other store shares the key, so the archive is trusted whole.
        let copied = try await sandbox.shell("cp guestmode.sqlite.key other.sqlite.key")
        #expect(copied.status == 0)
        let binary = Sandbox.binary.path
        let piped = try await sandbox.shell(
            "set -e; '\(binary)' backup export --all --out - | '\(binary)' --store other.sqlite backup import -")
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("-")))
        let listed = try await sandbox.run("--store", "other.sqlite", "user", "list", "-q", "--format", "tsv")
        #expect(
            Set(listed.stdout.split(separator: "\n").map { String($0.split(separator: "\t")[0]) }) == Set(ids),
            "\(listed.stdout)")
        let meter = try await sandbox.run("--store", "other.sqlite", "meter", "status", ids[0], "--json")
        #expect((meter.json as? [[String: Any]])?.first?["used"] as? Double == 12.5, "\(meter.stdout)")

        // Only the archive on stdout (zstd magic first), the summary on stderr.
        let exported = try await sandbox.shell("'\(binary)' backup export --all --out - > piped.gmbackup")
        #expect(exported.status == 0)
        let bytes = try sandbox.read("piped.gmbackup")
        #expect(Array(bytes.prefix(4)) == [0x28, 0xB5, 0x2F, 0xFD])
        let verified = try await sandbox.run(arguments: ["backup", "verify", "-", "--full"], input: bytes)
        #expect(verified.status == 0, "\(verified.stderr)")
        let inspected = try await sandbox.run(arguments: ["backup", "inspect", "-", "--json"], input: bytes)
        #expect(inspected.object["archive"] as? String == "-", "\(inspected.stdout)\(inspected.stderr)")
        let damaged = try await sandbox.run(arguments: ["backup", "verify", "-"], input: Data("not an archive".utf8))
        #expect(damaged.status == 65, "\(damaged.stderr)")
        // No spooled copy of standard input is left behind.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())
            .filter { $0.hasPrefix("guestmode-stream-") }
        #expect(leftovers.allSatisfy { !$0.contains("-\(getpid())-") })
    }

    @Test("messages in plain English: not enough left versus exhausted, 1 record not 1 records")
    func messages() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let guest = try await guests(sandbox, 1)[0]
        #expect(try await sandbox.run("meter", "use", guest, "api_minutes", "45").status == 0)
        let short = try await sandbox.run("meter", "check", guest, "api_minutes", "20")
        #expect(short.status == 12)
        #expect(short.stderr.contains("not enough left: 20 minutes asked, 15 left"), "\(short.stderr)")
        #expect(!short.stderr.contains("exhausted"), "\(short.stderr)")
        #expect(try await sandbox.run("meter", "use", guest, "api_minutes", "15").status == 0)
        let empty = try await sandbox.run("meter", "check", guest, "api_minutes", "1")
        #expect(empty.status == 12)
        #expect(empty.stderr.contains("meter exhausted"), "\(empty.stderr)")

        let subscriptions = try await Sandbox.withStore("subscriptions")
        let owner = try await guests(subscriptions, 1)[0]
        #expect(
            try await subscriptions.run("record", "put", owner, "subscriptions", "a", "--data", "{}").status == 0)
        let purge = try await subscriptions.run(
            "user", "purge", "--inactive-days", "1", "--include-with-data", "--dry-run", "--now", "2030-01-01")
        #expect(purge.stdout.contains("1 record)"), "\(purge.stdout)")
        #expect(purge.stderr.contains("would purge 1 guest inactive"), "\(purge.stderr)")
    }

    @Test("progress: JSON lines on stderr with --json (status, then one summary), nothing off a terminal")
    func progressLines() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        _ = try await guests(sandbox, 3)
        let exported = try await sandbox.run("backup", "export", "--all", "--out", "p.gmbackup", "--json")
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect(exported.object["archive"] as? String == "p.gmbackup", "stdout is one document: \(exported.stdout)")
        let lines = exported.stderr.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(lines.count == exported.stderr.split(separator: "\n").count, "\(exported.stderr)")
        #expect(lines.dropLast().allSatisfy { $0["message_type"] as? String == "status" }, "\(exported.stderr)")
        #expect(lines.last?["message_type"] as? String == "summary")
        #expect(lines.last?["action"] as? String == "backup export")
        #expect((lines.last?["done"] as? Int ?? 0) > 0)
        #expect(lines.last?["total"] as? Int == lines.last?["done"] as? Int, "the rows counted first for the total")
        let ingested = try await sandbox.run(
            "track", "--from", "-", "--create-users", "--json",
            input: "{\"user\":\"x\",\"action\":\"app_opened\"}\n")
        #expect(ingested.status == 0, "\(ingested.stderr)")
        #expect(ingested.stderr.contains("\"message_type\":\"summary\""), "\(ingested.stderr)")
        let plain = try await sandbox.run("backup", "export", "--all", "--out", "q.gmbackup")
        #expect(plain.stderr.isEmpty, "no progress off a terminal: \(plain.stderr)")
    }

    @Test("backup import reports progress every 1000 rows read, then a summary")
    func importProgress() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let log = (0..<1_200).map { #"{"user":"busy","action":"app_opened","id":"e\#($0)"}"# }.joined(separator: "\n")
        let tracked = try await sandbox.run("track", "--from", "-", "--create-users", input: log)
        #expect(tracked.status == 0, "\(tracked.stderr)")
        #expect(try await sandbox.run("backup", "export", "--all", "--out", "all.gmbackup").status == 0)
        #expect(try await sandbox.run("--store", "other.sqlite", "init", "--profile", "voice").status == 0)
        let imported = try await sandbox.run("--store", "other.sqlite", "backup", "import", "all.gmbackup", "--json")
        #expect(imported.status == 0, "\(imported.stderr)")
        let lines = imported.stderr.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let statuses = lines.filter { $0["message_type"] as? String == "status" }
        #expect(statuses.contains { $0["done"] as? Int == 1_000 }, "\(imported.stderr)")
        #expect(lines.last?["message_type"] as? String == "summary")
        #expect((lines.last?["done"] as? Int ?? 0) > 1_200, "\(imported.stderr)")
    }

    @Test("backup push reports progress per queued user, then a summary")
    func pushProgress() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        for user in try await guests(sandbox, 3) {
            let put = try await sandbox.run("record", "put", user, "habits", "walk", "--data", #"{"name":"walk"}"#)
            #expect(put.status == 0, "\(put.stderr)")
        }
        try FileManager.default.createDirectory(
            atPath: sandbox.path("pushed"), withIntermediateDirectories: true)
        let pushed = try await sandbox.run("backup", "push", "--to", "pushed", "--json")
        #expect(pushed.status == 0, "\(pushed.stderr)")
        let lines = pushed.stderr.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let statuses = lines.filter { $0["message_type"] as? String == "status" }
        #expect(statuses.map { $0["done"] as? Int } == [1, 2, 3], "\(pushed.stderr)")
        #expect(statuses.allSatisfy { $0["total"] as? Int == 3 }, "\(pushed.stderr)")
        #expect(lines.last?["message_type"] as? String == "summary")
        #expect(lines.last?["done"] as? Int == 3)
    }
}
