import Foundation
import Testing

/// `plan import --format app-store`: App Store Server Notifications V2 signed by the test's own chain,
/// verified as the server verifies them, on both backends.
@Suite("plan import --format app-store")
struct PlanImportAppStoreTests {
    @Test(
        "notifications apply as the server applies them; a tampered line is named and nothing is applied; a replay is duplicate",
        arguments: ServerTests.Backend.allCases)
    func appStoreFile(_ backend: ServerTests.Backend) async throws {
        let chain = try AppStoreChain()
        let sandbox = try await backend.sandbox("voice")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:05:00Z"
        try sandbox.write("root.pem", try chain.rootPEM())
        let user = try await sandbox.newGuest()
        let subscribed = try chain.notification(
            "SUBSCRIBED", subtype: "INITIAL_BUY", signed: "2026-11-01T10:00:00Z",
            transaction: AppStoreChain.transaction(user: user, signed: "2026-11-01T10:00:00Z"))
        let renewed = try chain.notification(
            "DID_RENEW", signed: "2026-11-01T10:02:00Z",
            transaction: AppStoreChain.transaction(
                id: "2000000000000002", user: user, expires: "2027-01-01T10:00:00Z", signed: "2026-11-01T10:02:00Z"))
        var parts = subscribed.split(separator: ".").map(String.init)
        parts[1] = String(parts[1].dropLast()) + (parts[1].hasSuffix("A") ? "B" : "A")
        let tampered = parts.joined(separator: ".")
        let arguments = [
            "plan", "import", "--from", "store.ndjson", "--format", "app-store", "--app-store-root-ca", "root.pem",
            "--app-store-bundle-id", AppStoreChain.bundleID,
        ]
        // Apple's body on one line, the bare signedPayload on another, and one that does not verify.
        try sandbox.write("store.ndjson", "{\"signedPayload\":\"\(renewed)\"}\n\(subscribed)\n\(tampered)\n")
        let refused = try await sandbox.run(arguments: arguments)
        #expect(refused.status == 65, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.stderr.contains("store.ndjson:3: "), "\(refused.stderr)")
        #expect(refused.stderr.contains("nothing was applied"), "\(refused.stderr)")
        let before = try await sandbox.run("plan", "status", user, "--json")
        #expect((before.object["plans"] as? [Any])?.isEmpty == true, "\(before.stdout)")

        let applied = try await sandbox.run(arguments: arguments + ["--skip-invalid", "--json"])
        #expect(applied.status == 0, "\(applied.stderr)")
        #expect(applied.object["applied"] as? Int == 2, "\(applied.stdout)")
        #expect(applied.object["invalid"] as? Int == 1, "\(applied.stdout)")
        // Oldest first: SUBSCRIBED (line 2) before DID_RENEW (line 1).
        let lines = (applied.object["events"] as? [[String: Any]] ?? []).map { $0["line"] as? Int }
        #expect(lines == [2, 1], "\(applied.stdout)")
        let status = try await sandbox.run("plan", "status", user, "--json")
        let premium = (status.object["plans"] as? [[String: Any]])?.first
        #expect(premium?["state"] as? String == "active", "\(status.stdout)")
        #expect(premium?["ends_at"] as? String == "2027-01-01T10:00:00.000Z", "\(status.stdout)")
        #expect(premium?["source"] as? String == "app_store", "\(status.stdout)")

        // Replayed, and an EXPIRED signed before the renewal applied: nothing changes.
        let late = try chain.notification(
            "EXPIRED", subtype: "VOLUNTARY", signed: "2026-11-01T10:01:00Z",
            transaction: AppStoreChain.transaction(user: nil, signed: "2026-11-01T10:01:00Z"))
        try sandbox.write("store.ndjson", "\(subscribed)\n\(renewed)\n\(late)\n")
        let replayed = try await sandbox.run(arguments: arguments)
        #expect(replayed.status == 0, "\(replayed.stderr)")
        #expect(
            replayed.stdout.contains("3 lines: 0 applied, 2 duplicate, 1 superseded"), "\(replayed.stdout)")
        let after = try await sandbox.run("plan", "status", user, "--json")
        #expect(after.stdout == status.stdout)

        let unverified = try await sandbox.run("plan", "import", "--from", "store.ndjson", "--format", "app-store")
        #expect(unverified.status == 64, "\(unverified.stderr)")
    }
}
