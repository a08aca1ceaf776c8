import Foundation
import Testing

@Suite("record load: bulk NDJSON, all or nothing")
struct BulkRecordTests {
    @Test("a load stores every line, enforces caps per user, and stores nothing when one line is bad")
    func bulkLoad() async throws {
        let sandbox = try await Sandbox.withStore("subscriptions")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let first = try await sandbox.newGuest()
        let second = try await sandbox.newGuest()
        var lines: [String] = []
        for index in 1...5 {
            lines.append(
                #"{"user_id":"\#(first)","collection":"subscriptions","key":"s\#(index)","data":{"price":\#(index)}}"#)
        }
        lines.append(#"{"user":"\#(second)","collection":"settings","key":"theme","data":{"dark":true}}"#)
        lines.append("")
        try lines.joined(separator: "\n").write(toFile: sandbox.path("ok.ndjson"), atomically: true, encoding: .utf8)
        let loaded = try await sandbox.run("record", "load", "ok.ndjson", "--json")
        #expect(loaded.status == 0, "\(loaded.stderr)")
        #expect(loaded.object["added"] as? Int == 6)
        #expect(loaded.object["lines"] as? Int == 6)
        let stored = try await sandbox.run("record", "get", first, "subscriptions", "s3")
        #expect(stored.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == #"{"price":3}"#)

        // A sixth subscription for the guest: the whole load is refused with the cap's exit status.
        let over = [
            #"{"user_id":"\#(second)","collection":"subscriptions","key":"x","data":{}}"#,
            #"{"user_id":"\#(first)","collection":"subscriptions","key":"s6","data":{}}"#,
        ].joined(separator: "\n")
        let refused = try await sandbox.run("record", "load", "-", input: over)
        #expect(refused.status == 10, "\(refused.stderr)")
        #expect(refused.stderr.contains("<stdin>") || refused.stderr.contains(":2:"), "\(refused.stderr)")
        #expect(try await sandbox.run("record", "get", second, "subscriptions", "x").status == 66)

        // A bad line: nothing stored, exit 65, the line named.
        let bad = [
            #"{"user_id":"\#(second)","collection":"subscriptions","key":"y","data":{}}"#,
            #"{"user_id":"\#(second)","collection":"subscriptions","key":"z","data":[1]}"#,
        ].joined(separator: "\n")
        let invalid = try await sandbox.run("record", "load", "-", input: bad)
        #expect(invalid.status == 65, "\(invalid.stderr)")
        #expect(invalid.stderr.contains(":2:"), "\(invalid.stderr)")
        #expect(try await sandbox.run("record", "get", second, "subscriptions", "y").status == 66)

        // Existing keys: skip keeps them, fail refuses the load with 14, replace (the default) overwrites.
        let again = #"{"user_id":"\#(first)","collection":"subscriptions","key":"s1","data":{"price":99}}"#
        let skipped = try await sandbox.run("record", "load", "-", "--on-conflict", "skip", input: again)
        #expect(skipped.status == 0, "\(skipped.stderr)")
        #expect(skipped.stdout.contains("1 skipped"), "\(skipped.stdout)")
        let failed = try await sandbox.run("record", "load", "-", "--on-conflict", "fail", input: again)
        #expect(failed.status == 14, "\(failed.stderr)")
        let replaced = try await sandbox.run("record", "load", "-", input: again)
        #expect(replaced.status == 0, "\(replaced.stderr)")
        let after = try await sandbox.run("record", "get", first, "subscriptions", "s1")
        #expect(after.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == #"{"price":99}"#)

        // 'record put --from', load's old spelling, still loads and says it is deprecated.
        let aliased = try await sandbox.run("record", "put", "--from", "-", "--on-conflict", "skip", input: again)
        #expect(aliased.status == 0, "\(aliased.stderr)")
        #expect(aliased.stdout.contains("1 unchanged"), "\(aliased.stdout)")
        #expect(aliased.stderr == "guestmode: 'record put --from' is deprecated; use 'record load -'\n")
        #expect(try await sandbox.run("record", "put", "--from", "-", "--quiet", input: again).stderr.isEmpty)
        // With --json, standard error holds nothing but an error document.
        #expect(try await sandbox.run("record", "put", "--from", "-", "--json", input: again).stderr.isEmpty)
        // --from replaces USER COLLECTION KEY; both together are a usage error.
        #expect(try await sandbox.run("record", "put", first, "settings", "k", "--from", "ok.ndjson").status == 64)
        #expect(
            try await sandbox.run("record", "put", first, "settings", "k", "--data", "{}", "--on-conflict", "skip")
                .status == 64)
    }

    @Test(
        "a record's key in a load is user, collection and key: a retried load changes nothing, other data for a key exits 14",
        arguments: ["sqlite", "postgres"])
    func keyRule(backend: String) async throws {
        let sandbox =
            backend == "sqlite"
            ? try await Sandbox.withStore("subscriptions") : try await Sandbox.withPostgresStore("subscriptions")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let guest = try await sandbox.newGuest()
        func line(_ key: String, _ data: String) -> String {
            #"{"user_id":"\#(guest)","collection":"subscriptions","key":"\#(key)","data":\#(data)}"#
        }
        /// Every row of the store that a load could change, as text (PostgreSQL has no file to compare).
        func state() async throws -> String {
            if backend == "sqlite" { return try sandbox.snapshot().base64EncodedString() }
            let records = try await sandbox.run("record", "list", guest, "subscriptions", "--json")
            let user = try await sandbox.run("user", "show", guest, "--json")
            return records.stdout + user.stdout
        }
        let file = [line("netflix", #"{"price":9.99}"#), line("spotify", #"{"price":5}"#)].joined(separator: "\n")
        try file.write(toFile: sandbox.path("subs.ndjson"), atomically: true, encoding: .utf8)
        let first = try await sandbox.run("record", "load", "subs.ndjson", "--on-conflict", "fail", "--json")
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.object["added"] as? Int == 2)
        let loaded = try await state()

        // The same file again, later: every record unchanged, nothing written, even under --on-conflict fail.
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-02T10:00:00Z"
        for policy in ["fail", "skip", "replace"] {
            let again = try await sandbox.run(
                "record", "load", "subs.ndjson", "--on-conflict", policy, "--json")
            #expect(again.status == 0, "\(policy): \(again.stderr)")
            #expect(again.object["unchanged"] as? Int == 2 && again.object["added"] as? Int == 0, "\(again.stdout)")
            #expect(try await state() == loaded, "a retried load (\(policy)) changes nothing")
        }
        let text = try await sandbox.run("record", "load", "subs.ndjson")
        #expect(text.stdout.contains("2 lines: 0 added, 0 replaced, 0 skipped, 2 unchanged"), "\(text.stdout)")

        // One key twice with other data: exit 14 naming the key and both lines, nothing written.
        let reused = [
            line("hulu", #"{"price":7}"#), line("netflix", #"{"price":9.99}"#), line("hulu", #"{"price":8}"#),
        ]
        .joined(separator: "\n")
        let refused = try await sandbox.run("record", "load", "-", "--json", input: reused)
        #expect(refused.status == 14, "\(refused.stderr)")
        #expect(refused.errorJSON["code"] as? String == "idempotency_key_reused")
        let message = refused.errorJSON["message"] as? String ?? ""
        #expect(
            message.hasPrefix("<stdin>:3:") && message.contains("'hulu'") && message.contains("line 1"), "\(message)")
        #expect(try await state() == loaded, "a refused load writes nothing")

        // One key twice with the same data: stored once.
        let repeated = [line("hulu", #"{"price":7}"#), line("hulu", #"{ "price" : 7 }"#)].joined(separator: "\n")
        let stored = try await sandbox.run("record", "load", "-", "--json", input: repeated)
        #expect(stored.status == 0, "\(stored.stderr)")
        #expect(stored.object["added"] as? Int == 1 && stored.object["unchanged"] as? Int == 1, "\(stored.stdout)")
    }
}
