import Foundation
import Testing

/// `report migrations`: journals of migrations and merges, with failures
/// injected by the debug build's fault hooks (Sources/GuestModeCommandLine/FaultHooks.swift).
@Suite("report migrations through the binary")
struct MigrationReportTests {
    /// A guest with a record in each collection of the recipes profile and an
    /// account (linked) to move it into.
    private func pair(_ sandbox: Sandbox, _ name: String) async throws -> (guest: String, account: String) {
        let account = try await sandbox.newGuest()
        #expect(try await sandbox.run("link", account, "--provider", "google", "--subject", "g-\(name)").status == 0)
        let guest = try await sandbox.newGuest()
        for (collection, key) in [("profile", "me"), ("recipes", "pasta"), ("photos", "p1")] {
            #expect(
                try await sandbox.run("record", "put", guest, collection, key, "--data", #"{"by":"guest"}"#).status == 0
            )
        }
        return (guest, account)
    }

    @Test(
        "started, completed, failed, resumed and unfinished journals, failures by step, the period",
        arguments: ["sqlite", "postgres"])
    func report(backend: String) async throws {
        let sandbox =
            backend == "sqlite"
            ? try await Sandbox.withStore("recipes") : try await Sandbox.withPostgresStore("recipes")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let clean = try await pair(sandbox, "clean")
        #expect(try await sandbox.run("migrate", clean.guest, "--to", clean.account).status == 0)

        sandbox.environment["GUESTMODE_NOW"] = "2026-11-02T10:00:00Z"
        // Fails in step 2, then resumed to the end.
        let retried = try await pair(sandbox, "retried")
        let failed = try await sandbox.run(
            arguments: ["migrate", retried.guest, "--to", retried.account],
            environment: ["GUESTMODE_TEST_FAIL_AT": "migrate-step-2"])
        #expect(failed.status == 1, "\(failed.stderr)")
        #expect(failed.stderr.contains("fault injected at migrate-step-2"), "\(failed.stderr)")
        let status = try await sandbox.run("migrate", "status", retried.guest, "--json")
        #expect((status.json as? [[String: Any]])?.last?["status"] as? String == "failed", "\(status.stdout)")
        let resumed = try await sandbox.run("migrate", retried.guest, "--to", retried.account, "--resume")
        #expect(resumed.status == 0, "\(resumed.stderr)")

        // Killed after step 1, resumed, fails in step 3, left unfinished.
        let abandoned = try await pair(sandbox, "abandoned")
        let killed = try await sandbox.run(
            arguments: ["migrate", abandoned.guest, "--to", abandoned.account],
            environment: ["GUESTMODE_TEST_STOP_AFTER": "migrate-step-1"])
        #expect(killed.status != 0)
        let failedAgain = try await sandbox.run(
            arguments: ["migrate", abandoned.guest, "--to", abandoned.account, "--resume"],
            environment: ["GUESTMODE_TEST_FAIL_AT": "migrate-step-3"])
        #expect(failedAgain.status == 1, "\(failedAgain.stderr)")

        // One merge.
        let merged = try await pair(sandbox, "merged")
        #expect(try await sandbox.run("merge", merged.guest, "--into", merged.account, "--policy", "union").status == 0)

        let before = backend == "sqlite" ? try sandbox.snapshot() : Data()
        let report = try await sandbox.run("report", "migrations", "--json")
        #expect(report.status == 0, "\(report.stderr)")
        if backend == "sqlite" { #expect(try sandbox.snapshot() == before, "a report changes nothing") }
        let kinds = try #require(report.object["kinds"] as? [[String: Any]], "\(report.stdout)")
        #expect(kinds.map { $0["kind"] as? String } == ["guest-to-account", "merge"])
        let migrations = kinds[0]
        #expect(migrations["started"] as? Int == 3)
        #expect(migrations["completed"] as? Int == 2)
        #expect(migrations["failed"] as? Int == 2)
        #expect(migrations["resumed"] as? Int == 2)
        #expect(migrations["unfinished"] as? Int == 1)
        let rate = try #require(migrations["success_rate"] as? [String: Any])
        #expect(abs((rate["rate"] as? Double ?? 0) - 2.0 / 3.0) < 1e-6)
        #expect((rate["low"] as? Double ?? 1) < 2.0 / 3.0 && (rate["high"] as? Double ?? 0) > 2.0 / 3.0)
        let steps = try #require(migrations["failures_by_step"] as? [[String: Any]])
        #expect(
            steps.map { "\($0["position"] ?? "")/\($0["step"] ?? "")/\($0["failures"] ?? "")" } == [
                "2/recipes/1", "3/photos/1",
            ])
        #expect(kinds[1]["started"] as? Int == 1 && kinds[1]["completed"] as? Int == 1)
        #expect(kinds[1]["failed"] as? Int == 0 && (kinds[1]["failures_by_step"] as? [Any])?.isEmpty == true)

        // The period is when a journal started.
        let first = try await sandbox.run("report", "migrations", "--until", "2026-11-02T00:00:00Z", "--json")
        let firstKinds = try #require(first.object["kinds"] as? [[String: Any]])
        #expect(firstKinds[0]["started"] as? Int == 1 && firstKinds[0]["failed"] as? Int == 0)
        #expect(firstKinds[1]["started"] as? Int == 0)
        let later = try await sandbox.run("report", "migrations", "--since", "2026-12-01T00:00:00Z", "--json")
        let empty = try #require((later.object["kinds"] as? [[String: Any]])?.first)
        #expect(empty["started"] as? Int == 0)
        #expect((empty["success_rate"] as? [String: Any])?["rate"] is NSNull, "\(later.stdout)")

        let csv = try await sandbox.run("report", "migrations", "--format", "csv")
        #expect(csv.status == 0)
        let lines = csv.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(csv.stdout)")
        #expect(
            lines.first
                == "kind,started,completed,failed,resumed,unfinished,success_rate,ci95_low,ci95_high,failures_by_step")
        #expect(lines.dropFirst().first?.hasPrefix("guest-to-account,3,2,2,2,1,0.666667,") == true, "\(csv.stdout)")
        #expect(lines.dropFirst().first?.hasSuffix(",2:recipes=1 3:photos=1") == true, "\(csv.stdout)")
        #expect(lines.last?.hasPrefix("merge,1,1,0,0,0,1,") == true, "\(csv.stdout)")
        let ndjson = try await sandbox.run("report", "migrations", "--format", "ndjson")
        #expect(ndjson.stdout.split(separator: "\n").count == 2)
    }
}
