import Foundation
import Testing

/// A profile whose experiments use the seeds of GrowthBook's hash test
/// vectors, so the binary's buckets can be checked against them.
private let vectorProfile = """
    name: vectors
    version: 1
    actions: [app_opened]
    tiers: { guest: }
    experiments:
      uneven:
        seed: seed
        variants:
          - { name: small, weight: 0.1 }
          - { name: large, weight: 0.9 }
      half_coverage:
        seed: seed
        coverage: 0.5
        variants:
          - { name: left, weight: 0.5 }
          - { name: right, weight: 0.5 }
    """

@Suite("Experiments: GrowthBook-compatible assignment through the binary")
struct ExperimentTests {
    func vectorStore() async throws -> Sandbox {
        let sandbox = try Sandbox()
        try sandbox.write("vectors.yaml", vectorProfile)
        #expect(try await sandbox.run("init", "--profile", "./vectors.yaml").status == 0)
        let users = "{\"user\":\"a\",\"action\":\"app_opened\"}\n{\"user\":\"b\",\"action\":\"app_opened\"}\n"
        let tracked = try await sandbox.run(
            "track", "--from", "-", "--create-users", "--now", "2026-11-01T00:00:00Z", input: users)
        #expect(tracked.status == 0, "\(tracked.stderr)")
        return sandbox
    }

    func assignments(_ sandbox: Sandbox, _ user: String) async throws -> [String: [String: Any]] {
        let result = try await sandbox.run("experiment", "assign", user, "--json", "--now", "2026-11-01T00:00:00Z")
        #expect(result.status == 0, "\(result.stderr)")
        var byName: [String: [String: Any]] = [:]
        for assignment in result.object["assignments"] as? [[String: Any]] ?? [] {
            byName[assignment["experiment"] as? String ?? ""] = assignment
        }
        return byName
    }

    @Test("buckets equal GrowthBook's hash v2 vectors and variants follow its bucket ranges")
    func matchesGrowthBook() async throws {
        let sandbox = try await vectorStore()
        // cases.json: hash("seed", "a", 2) = 0.0505 and hash("seed", "b", 2) = 0.2696.
        let a = try await assignments(sandbox, "a")
        #expect(a["uneven"]?["bucket"] as? Double == 0.0505)
        #expect(a["uneven"]?["variant"] as? String == "small")
        // Half coverage: ranges [0, 0.25) and [0.5, 0.75).
        #expect(a["half_coverage"]?["variant"] as? String == "left")
        let b = try await assignments(sandbox, "b")
        #expect(b["uneven"]?["bucket"] as? Double == 0.2696)
        #expect(b["uneven"]?["variant"] as? String == "large")
        #expect(b["half_coverage"]?["variant"] == nil || b["half_coverage"]?["variant"] is NSNull)
        #expect(b["half_coverage"]?["assigned_at"] == nil || b["half_coverage"]?["assigned_at"] is NSNull)
    }

    @Test("a user's variant is the same in every store and on every run, and sticky")
    func stable() async throws {
        let first = try await vectorStore()
        let second = try await vectorStore()
        let once = try await assignments(first, "a")["uneven"]?["variant"] as? String
        #expect(once == (try await assignments(second, "a")["uneven"]?["variant"] as? String))
        let rerun = try await assignments(first, "a")["uneven"]
        #expect(rerun?["variant"] as? String == once)
        #expect(rerun?["new"] as? Bool == false)
        let text = try await first.run("experiment", "assign", "a", "uneven")
        #expect(text.stdout.contains("uneven"))
        #expect(text.stdout.contains("kept"))
    }

    /// The 100,000-user split is checked in the engine suite
    /// (GrowthBookTests); through the binary a smaller population shows the
    /// same assignment reaches replay's report.
    @Test("5,000 replayed users split within 2.5% of the recipes weights")
    func split() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let population = 5_000
        var log = ""
        log.reserveCapacity(population * 80)
        for index in 0..<population {
            log += "{\"user\":\"guest-\(index)\",\"action\":\"app_opened\",\"at\":\"2026-11-01T09:00:00Z\"}\n"
        }
        try sandbox.write("users.ndjson", log)
        let replayed = try await sandbox.run("replay", "users.ndjson", "--json")
        #expect(replayed.status == 0, "\(replayed.stderr)")
        let variants = (replayed.object["experiments"] as? [String: Any])?["variants"] as? [[String: Any]] ?? []
        #expect(variants.count == 5)
        for variant in variants {
            let users = variant["users"] as? Int ?? 0
            #expect(abs(Double(users) / Double(population) - 0.2) < 0.025, "\(variant["variant"] ?? "?"): \(users)")
        }
        #expect(variants.reduce(0) { $0 + ($1["users"] as? Int ?? 0) } == population)
    }
}
