import Foundation
import Testing

@Suite("record put --from: bulk NDJSON, all or nothing")
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
        let loaded = try await sandbox.run("record", "put", "--from", "ok.ndjson", "--json")
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
        let refused = try await sandbox.run("record", "put", "--from", "-", input: over)
        #expect(refused.status == 10, "\(refused.stderr)")
        #expect(refused.stderr.contains("<stdin>") || refused.stderr.contains(":2:"), "\(refused.stderr)")
        #expect(try await sandbox.run("record", "get", second, "subscriptions", "x").status == 66)

        // A bad line: nothing stored, exit 65, the line named.
        let bad = [
            #"{"user_id":"\#(second)","collection":"subscriptions","key":"y","data":{}}"#,
            #"{"user_id":"\#(second)","collection":"subscriptions","key":"z","data":[1]}"#,
        ].joined(separator: "\n")
        let invalid = try await sandbox.run("record", "put", "--from", "-", input: bad)
        #expect(invalid.status == 65, "\(invalid.stderr)")
        #expect(invalid.stderr.contains(":2:"), "\(invalid.stderr)")
        #expect(try await sandbox.run("record", "get", second, "subscriptions", "y").status == 66)

        // Existing keys: skip keeps them, fail refuses the load with 14, replace (the default) overwrites.
        let again = #"{"user_id":"\#(first)","collection":"subscriptions","key":"s1","data":{"price":99}}"#
        let skipped = try await sandbox.run("record", "put", "--from", "-", "--on-conflict", "skip", input: again)
        #expect(skipped.status == 0, "\(skipped.stderr)")
        #expect(skipped.stdout.contains("1 skipped"), "\(skipped.stdout)")
        let failed = try await sandbox.run("record", "put", "--from", "-", "--on-conflict", "fail", input: again)
        #expect(failed.status == 14, "\(failed.stderr)")
        let replaced = try await sandbox.run("record", "put", "--from", "-", input: again)
        #expect(replaced.status == 0, "\(replaced.stderr)")
        let after = try await sandbox.run("record", "get", first, "subscriptions", "s1")
        #expect(after.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == #"{"price":99}"#)

        // --from replaces USER COLLECTION KEY; both together are a usage error.
        #expect(try await sandbox.run("record", "put", first, "settings", "k", "--from", "ok.ndjson").status == 64)
        #expect(
            try await sandbox.run("record", "put", first, "settings", "k", "--data", "{}", "--on-conflict", "skip")
                .status == 64)
    }
}
