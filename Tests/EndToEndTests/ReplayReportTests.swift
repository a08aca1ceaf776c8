import Foundation
import Testing

/// A deterministic event log: `users` guests doing recipe-app things over
/// about a month, in time order, some events with idempotency keys.
private func eventLog(events: Int, users: Int) -> String {
    let actions = [
        "app_opened", "app_opened", "app_opened", "app_opened", "app_opened", "recipe_created", "recipe_viewed",
        "recipe_viewed", "video_generated", "video_shared", "challenge_viewed", "social_explored",
    ]
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    func next(_ bound: Int) -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int((state >> 33) % UInt64(bound))
    }
    let formatter = ISO8601DateFormatter()
    var time = formatter.date(from: "2026-11-01T09:00:00Z")!
    var log = ""
    log.reserveCapacity(events * 90)
    for index in 0..<events {
        time.addTimeInterval(Double(next(53)))
        let key = index % 10 == 0 ? ",\"id\":\"k\(index)\"" : ""
        log +=
            "{\"user\":\"user-\(next(users))\",\"action\":\"\(actions[next(actions.count)])\",\"at\":\"\(formatter.string(from: time))\"\(key)}\n"
    }
    return log
}

@Suite("Replay and reports through the binary")
struct ReplayReportTests {
    @Test("replaying 100,000 events gives the totals 'report prompts' gives after ingesting the same log and prompts")
    func replayMatchesReport() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        try sandbox.write("events.ndjson", eventLog(events: 100_000, users: 1_000))
        let before = try sandbox.snapshot()
        let replayed = try await sandbox.run("replay", "events.ndjson", "--decisions", "shown.ndjson", "--json")
        #expect(replayed.status == 0, "\(replayed.stderr)")
        #expect(try sandbox.snapshot() == before, "replay must not touch the store")
        #expect(replayed.object["events"] as? Int == 100_000)
        #expect(replayed.object["users"] as? Int == 1_000)
        let shown = try #require(replayed.object["prompts_shown"] as? Int)
        #expect(shown > 0)
        let decisions = String(decoding: try sandbox.read("shown.ndjson"), as: UTF8.self).split(separator: "\n")
        #expect(decisions.count == shown)

        let ingested = try await sandbox.run("track", "--from", "events.ndjson", "--create-users")
        #expect(ingested.status == 0, "\(ingested.stderr)")
        let recorded = try await sandbox.run("prompt", "record", "--from", "shown.ndjson", "--json")
        #expect(recorded.object["recorded"] as? Int == shown)
        let report = try await sandbox.run("report", "prompts", "--json")
        #expect(report.status == 0)
        let replayTotals = try #require(replayed.object["prompts"] as? NSDictionary)
        #expect(replayTotals == report.object as NSDictionary)
        let total = (report.object["total"] as? [String: Any])?["shown"] as? Int
        #expect(total == shown)
    }

    @Test("replay lists who would have seen what, and can try await another profile")
    func replayListing() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let log = """
            {"user":"ann","action":"recipe_created","at":"2026-11-01T09:00:00Z"}
            {"user":"ann","action":"video_generated","at":"2026-11-01T10:00:00Z"}
            {"user":"ann","action":"video_shared","at":"2026-11-01T10:05:00Z"}
            {"user":"ann","action":"app_opened","at":"2026-11-02T11:00:00Z"}

            """
        try sandbox.write("small.ndjson", log)
        let listed = try await sandbox.run("replay", "small.ndjson")
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains("replayed 4 events of 1 user under profile recipes"))
        #expect(listed.stdout.contains("CONTEXT"))
        let quiet = try await sandbox.run("replay", "small.ndjson", "--quiet", "--profile", "voice")
        #expect(quiet.status == 65, "voice does not know recipe actions: \(quiet.stdout)")
        #expect(quiet.stderr.contains("small.ndjson:1:"))
        let missing = try await sandbox.run("replay", "nope.ndjson")
        #expect(missing.status == 66)
        let elsewhere = try Sandbox()
        try elsewhere.write("small.ndjson", log)
        #expect(try await elsewhere.run("replay", "small.ndjson").status == 66)
        #expect(try await elsewhere.run("replay", "small.ndjson", "--profile", "recipes", "--quiet").status == 0)
        #expect(try await sandbox.run("replay", "small.ndjson", "--decisions", "-", "--json").status == 64)
        let stdout = try await sandbox.run("replay", "small.ndjson", "--decisions", "-", "--quiet")
        #expect(stdout.stdout.contains("\"outcome\":\"shown\""))
    }

    @Test("reports: funnel, prompts, experiments and usage in table, JSON and CSV, with a period")
    func reports() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let converted = try await sandbox.recipesGuest()
        let other = try await sandbox.recipesGuest(variant: "aggressive")
        _ = try await sandbox.recipesGuest(at: "2026-12-01T00:00:00Z")
        _ = try await sandbox.run(
            "prompt", "record", converted, "first_recipe_success", "shown", "--now", "2026-11-01T10:00:00Z")
        _ = try await sandbox.run(
            "prompt", "record", converted, "first_recipe_success", "completed", "--now", "2026-11-01T10:01:00Z")
        _ = try await sandbox.run("prompt", "record", other, "reengagement", "shown", "--now", "2026-11-05T10:00:00Z")
        _ = try await sandbox.run(
            "prompt", "record", other, "reengagement", "dismissed", "--now", "2026-11-05T10:00:10Z")
        _ = try await sandbox.run(
            "link", converted, "--provider", "google", "--subject", "g-1", "--now", "2026-11-01T15:00:00Z")

        let funnel = try await sandbox.run("report", "funnel", "--json", "--until", "2026-11-15")
        #expect(funnel.object["guests"] as? Int == 2)
        #expect(funnel.object["prompted"] as? Int == 2)
        #expect(funnel.object["linked"] as? Int == 1)
        #expect(abs((funnel.object["median_hours_to_link"] as? Double ?? 0) - 6) < 0.001)
        let percentiles = funnel.object["hours_to_link_percentiles"] as? [String: Any]
        #expect(abs((percentiles?["p90"] as? Double ?? 0) - 6) < 0.001, "\(funnel.stdout)")
        #expect(funnel.object["linked_within_seven_days"] as? Int == 1)
        #expect(funnel.object["linked_within_seven_days_rate"] as? Double == 0.5)
        let funnelCSV = try await sandbox.run("report", "funnel", "--format", "csv", "--until", "2026-11-15")
        #expect(funnelCSV.stdout.hasPrefix("guests,prompted,linked,prompted_rate,linked_rate,"), "\(funnelCSV.stdout)")
        #expect(funnelCSV.stdout.contains(",p90_hours,linked_in_7d,linked_in_7d_rate\n"), "\(funnelCSV.stdout)")
        #expect((try await sandbox.run("report", "funnel", "--json")).object["guests"] as? Int == 3)

        let prompts = try await sandbox.run("report", "prompts", "--format", "csv")
        #expect(prompts.stdout.hasPrefix("context,shown,dismissed,later,never,completed,conversion\n"))
        #expect(prompts.stdout.contains("first_recipe_success,1,0,0,0,1,1\n"))
        #expect(prompts.stdout.contains("reengagement,1,1,0,0,0,0\n"))
        #expect(prompts.stdout.contains("total,2,1,0,0,1,0.5\n"))
        let early = try await sandbox.run("report", "prompts", "--json", "--since", "2026-11-02")
        #expect((early.object["total"] as? [String: Any])?["shown"] as? Int == 1)

        let experiments = try await sandbox.run("report", "experiments", "--json")
        let variants = experiments.object["variants"] as? [[String: Any]] ?? []
        let control = variants.first { $0["variant"] as? String == "control" }
        #expect(control?["users"] as? Int == 2)
        #expect(control?["conversions"] as? Int == 1)
        let rate = control?["rate"] as? [String: Any]
        #expect(rate?["rate"] as? Double == 0.5)
        #expect((rate?["low"] as? Double ?? 1) < 0.5 && (rate?["high"] as? Double ?? 0) > 0.5)
        let table = try await sandbox.run("report", "experiments")
        #expect(table.stdout.contains("CI95_LOW"))

        let usage = try await sandbox.run("report", "usage", "--json")
        #expect(((usage.object["meters"] as? [[String: Any]])?.first)?["meter"] as? String == "video_generations")

        #expect(
            try await sandbox.run("report", "prompts", "--since", "2026-11-05", "--until", "2026-11-01").status == 64)
        #expect(try await sandbox.run("report", "prompts", "--since", "last tuesday").status == 64)
        #expect(try await sandbox.run("report", "prompts", "--format", "xml").status == 64)
    }
}
