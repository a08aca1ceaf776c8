import Foundation
import Testing

/// The hostile archives of issue 14, each made from a real export by
/// Tests/Fuzz/hostile_archive.py with a recomputed manifest, so only row
/// validation and header trust stand between them and the store.
@Suite("Hostile archives")
struct HostileArchiveTests {
    static let script = Sandbox.packageRoot.appendingPathComponent("Tests/Fuzz/hostile_archive.py").path

    /// (case, the entry its message must name, the line, or nil when the header is at fault)
    static let cases: [(String, String, Int?)] = [
        ("cross-user", "header.json", nil),
        ("foreign-row", "data/records/000001.ndjson", 2),
        ("negative-usage", "data/meter_usage/000001.ndjson", 1),
        ("negative-count", "data/events/000001.ndjson", 1),
        ("counters-disagree", "data/counters/000001.ndjson", 1),
        ("undeclared-collection", "data/records/000001.ndjson", 1),
        ("undeclared-action", "data/events/000001.ndjson", 1),
        ("undeclared-meter", "data/meter_usage/000001.ndjson", 1),
        ("undeclared-plan", "data/plans/000001.ndjson", 1),
        ("undeclared-provider", "data/upgrade_locks/000001.ndjson", 1),
        ("record-not-json", "data/records/000001.ndjson", 1),
        ("record-not-object", "data/records/000001.ndjson", 1),
        ("linked-without-identity", "data/users/000001.ndjson", 1),
        ("garbage-timestamp", "data/users/000001.ndjson", 1),
        ("lenient-timestamp", "data/events/000001.ndjson", 1),
        ("lock-9999", "data/upgrade_locks/000001.ndjson", 1),
        ("total-lots", "data/counters/000001.ndjson", 1),
        ("total-1e300", "data/counters/000001.ndjson", 1),
        ("non-integer-id", "data/events/000001.ndjson", 1),
        ("fractional-id", "data/events/000001.ndjson", 1),
        ("duplicate-row", "data/records/000001.ndjson", 2),
        ("duplicate-event", "data/events/000001.ndjson", 2),
    ]

    /// A voice store with a linked victim and an attacker who holds their own
    /// export (`attacker.tar.gz`); both have events, usage, a record and a plan.
    static func setUp() async throws -> (Sandbox, victim: String, attacker: String) {
        let sandbox = try await Sandbox.withStore("voice")
        let victim = try await sandbox.run("guest", "new", "--quiet").stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let attacker = try await sandbox.run("guest", "new", "--quiet").stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        for user in [victim, attacker] {
            #expect(try await sandbox.run("track", user, "command_spoken").status == 0)
            #expect(try await sandbox.run("meter", "use", user, "api_minutes", "2").status == 0)
            #expect(try await sandbox.run("record", "put", user, "commands", "k1", "--data", #"{"a":1}"#).status == 0)
            #expect(try await sandbox.run("plan", "grant", user, "premium").status == 0)
        }
        #expect(try await sandbox.run("link", victim, "--provider", "apple", "--subject", "victim-sub").status == 0)
        let exported = try await sandbox.run(
            "backup", "export", attacker, "--out", "attacker.tar.gz", "--format", "tar.gz")
        #expect(exported.status == 0, "\(exported.stderr)")
        return (sandbox, victim, attacker)
    }

    static func make(_ kind: String, victim: String, in sandbox: Sandbox) async throws -> String {
        let name = "hostile-\(kind).tar.gz"
        let made = try await sandbox.shell("python3 '\(script)' attacker.tar.gz \(kind) \(name) \(victim)")
        #expect(made.status == 0, "\(kind): \(made.stderr)")
        return name
    }

    @Test(
        "each hostile archive exits 65 naming the entry and line, under every conflict policy, and changes nothing",
        arguments: cases.map(\.0))
    func refused(kind: String) async throws {
        let (sandbox, victim, attacker) = try await Self.setUp()
        let (_, entry, line) = try #require(Self.cases.first { $0.0 == kind })
        let name = try await Self.make(kind, victim: victim, in: sandbox)
        // The manifest matches: nothing but the rows themselves is wrong.
        #expect(try await sandbox.run("backup", "verify", "--full", name).status == 0)
        let before = try sandbox.snapshot()
        // `fail` would stop at the attacker already being there; a fresh store and `replace` reach the rows.
        // Under `skip` the store's constraints never see a skipped user's rows, so a repeated natural key
        // (records, counters, …) is caught only when it would be written; every per-row check still runs.
        for policy in kind == "duplicate-row" ? ["replace"] : ["replace", "skip"] {
            // Skipped users' rows are still checked: a hostile archive is refused whatever the policy.
            let imported = try await sandbox.run("backup", "import", name, "--on-conflict", policy, "--json")
            #expect(imported.status == 65, "\(kind)/\(policy): \(imported.stderr)")
            let message = imported.errorJSON["message"] as? String ?? ""
            #expect(message.contains(entry), "\(kind): \(message)")
            if let line { #expect(message.contains("line \(line) of \(entry)"), "\(kind): \(message)") }
            #expect(try sandbox.snapshot() == before, "\(kind) changed the store")
        }
        #expect(try sandbox.snapshot() == before, "\(kind) changed the store")
        try await Self.stillWorks(sandbox, victim: victim, attacker: attacker)
    }

    @Test("the same archives refused when imported into a fresh store")
    func refusedIntoAFreshStore() async throws {
        let (sandbox, victim, _) = try await Self.setUp()
        #expect(try await sandbox.run("init", "--profile", "voice", "--store", "fresh.sqlite").status == 0)
        for (kind, entry, _) in Self.cases {
            let name = try await Self.make(kind, victim: victim, in: sandbox)
            let imported = try await sandbox.run("--store", "fresh.sqlite", "backup", "import", name, "--json")
            #expect(imported.status == 65, "\(kind): \(imported.stderr)")
            #expect((imported.errorJSON["message"] as? String ?? "").contains(entry), "\(kind): \(imported.stderr)")
        }
        let users = try await sandbox.shell(
            "sqlite3 fresh.sqlite 'SELECT COUNT(*) FROM users; SELECT COUNT(*) FROM records'")
        #expect(users.stdout == "0\n0\n")
    }

    @Test("cross-user takeover: the victim's user, identity, events, usage and records survive a replace")
    func takeover() async throws {
        let (sandbox, victim, attacker) = try await Self.setUp()
        let name = try await Self.make("cross-user", victim: victim, in: sandbox)
        let dump =
            "SELECT * FROM users WHERE id = '\(victim)'; SELECT * FROM identities; SELECT COUNT(*) FROM events WHERE user_id = '\(victim)'; SELECT COUNT(*) FROM meter_usage WHERE user_id = '\(victim)'; SELECT * FROM records WHERE owner_id = '\(victim)'"
        let before = try await sandbox.shell("sqlite3 guestmode.sqlite \"\(dump)\"")
        for policy in ["fail", "replace", "skip"] {
            let imported = try await sandbox.run("backup", "import", name, "--on-conflict", policy, "--json")
            #expect(imported.status == 65, "\(policy): \(imported.stderr)")
            #expect(imported.errorJSON["code"] as? String == "guest_owner_mismatch")
        }
        #expect(try await sandbox.shell("sqlite3 guestmode.sqlite \"\(dump)\"").stdout == before.stdout)
        #expect(!before.stdout.contains("planted"))
        try await Self.stillWorks(sandbox, victim: victim, attacker: attacker)
    }

    @Test(
        "surrogate ids are renumbered by the store: an events or meter_usage id of Int64.max cannot exhaust the sequence",
        arguments: ["events-id-max", "usage-id-max"])
    func surrogateIDs(kind: String) async throws {
        let (sandbox, victim, attacker) = try await Self.setUp()
        let name = try await Self.make(kind, victim: victim, in: sandbox)
        let imported = try await sandbox.run("backup", "import", name, "--on-conflict", "replace")
        #expect(imported.status == 0, "\(kind): \(imported.stderr)")
        let largest = try await sandbox.shell(
            "sqlite3 guestmode.sqlite 'SELECT MAX(id) FROM events; SELECT MAX(id) FROM meter_usage'")
        #expect(!largest.stdout.contains("9223372036854775807"), "\(largest.stdout)")
        try await Self.stillWorks(sandbox, victim: victim, attacker: attacker)
        #expect(try await sandbox.run("meter", "use", victim, "api_minutes", "1").status == 0)
    }

    @Test("a store poisoned outside guestmode is reported as corrupt (65), never a crash")
    func poisonedStore() async throws {
        let (sandbox, victim, _) = try await Self.setUp()
        for value in ["'lots'", "1e300", "NULL", "x'00ff'"] {
            let poisoned = try await sandbox.shell(
                "sqlite3 guestmode.sqlite \"PRAGMA ignore_check_constraints = ON; UPDATE counters SET total = \(value) WHERE user_id = '\(victim)'\""
            )
            #expect(poisoned.status == 0 || value == "NULL", "\(poisoned.stderr)")
            if poisoned.status != 0 { continue }
            for command in [["counters", victim], ["user", "show", victim], ["--json", "user", "show", victim]] {
                let result = try await sandbox.run(arguments: command)
                #expect(result.status == 65, "\(value) \(command): \(result.status) \(result.stderr)")
                #expect(result.stderr.contains("corrupt") || result.stderr.contains("cannot read"), "\(result.stderr)")
            }
        }
    }

    /// After a refusal the store still takes ordinary writes.
    static func stillWorks(_ sandbox: Sandbox, victim: String, attacker: String) async throws {
        #expect(try await sandbox.run("track", victim, "command_spoken").status == 0)
        #expect(try await sandbox.run("track", attacker, "command_spoken").status == 0)
        let linked = try await sandbox.run("link", attacker, "--provider", "google", "--subject", "attacker-sub")
        #expect(linked.status == 0, "\(linked.stderr)")
        #expect(try await sandbox.run("db", "check").status == 0)
    }
}
