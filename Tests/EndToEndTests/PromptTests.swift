import Foundation
import Testing

private let day0 = "2026-11-01T09:00:00Z"

/// A time `minutes` after day0, as the command line takes it.
private func at(minutes: Int) -> String {
    let start = ISO8601DateFormatter().date(from: day0)!
    return ISO8601DateFormatter().string(from: start.addingTimeInterval(Double(minutes) * 60))
}

private func at(hours: Double) -> String { at(minutes: Int(hours * 60)) }

extension Sandbox {
    /// A new guest of the recipes store, first seen at `time`, put in the
    /// experiment variant whose strategy the test expects.
    func recipesGuest(at time: String = day0, variant: String = "control") async throws -> String {
        let created = try await run("guest", "new", "--json", "--now", time)
        #expect(created.status == 0, "\(created.stderr)")
        let id = try #require(created.object["user_id"] as? String)
        let assigned = try await run("experiment", "assign", id, "auth_prompts", "--variant", variant, "--now", time)
        #expect(assigned.status == 0, "\(assigned.stderr)")
        return id
    }

    func track(_ user: String, _ action: String, at time: String, count: Int = 1) async throws {
        let result = try await run("track", user, action, "--count", String(count), "--now", time)
        #expect(result.status == 0, "track \(action): \(result.stderr)")
    }

    func nextPrompt(_ user: String, at time: String, trigger: String? = nil) async throws -> Result {
        try await run(
            arguments: ["prompt", "next", user, "--json", "--now", time] + (trigger.map { ["--trigger", $0] } ?? []))
    }
}

@Suite("Prompts: the recipes policy through the binary")
struct PromptTests {
    @Test("first recipe, once only, 24 h cooldown, then never silences everything")
    func recipesJourney() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let user = try await sandbox.recipesGuest()

        let nothingYet = try await sandbox.nextPrompt(user, at: at(minutes: 1))
        #expect(nothingYet.status == 13)
        #expect(nothingYet.errorJSON["code"] as? String == "no_eligible_prompt")

        try await sandbox.track(user, "recipe_created", at: at(minutes: 2))
        let first = try await sandbox.nextPrompt(user, at: at(minutes: 3))
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.object["context"] as? String == "first_recipe_success")
        #expect(first.object["priority"] as? String == "medium")
        let content = first.object["content"] as? [String: Any] ?? [:]
        #expect(content["title"] as? String == "Your first recipe!")
        #expect((content["benefits"] as? [String])?.count == 2)
        #expect(content["primary_action"] as? String == "Save my recipe")
        #expect(content["secondary_action"] as? String == "Maybe later")
        #expect(content["style"] as? String == "celebration")

        let shown = try await sandbox.run(
            "prompt", "record", user, "first_recipe_success", "shown", "--json", "--now", at(minutes: 3))
        #expect(shown.status == 0)
        #expect(shown.object["prompt_state"] as? String == "prompted")

        // Not offered again, even long after the cooldown.
        let again = try await sandbox.nextPrompt(user, at: at(hours: 100))
        #expect(again.status == 13)

        // A second prompt becomes eligible within the 24 hours: held back until they pass.
        try await sandbox.track(user, "video_generated", at: at(hours: 1))
        try await sandbox.track(user, "video_shared", at: at(hours: 1))
        let tooSoon = try await sandbox.nextPrompt(user, at: at(hours: 5))
        #expect(tooSoon.status == 13)
        #expect(tooSoon.errorJSON["code"] as? String == "cooldown")
        #expect((tooSoon.errorJSON["message"] as? String)?.contains("2026-11-02T09:03:00.000Z") == true)
        let afterADay = try await sandbox.nextPrompt(user, at: at(minutes: 24 * 60 + 3))
        #expect(afterADay.status == 0, "\(afterADay.stderr)")
        #expect(afterADay.object["context"] as? String == "viral_content_created")

        let never = try await sandbox.run(
            "prompt", "record", user, "viral_content_created", "never", "--json", "--now", at(hours: 25))
        #expect(never.object["prompt_state"] as? String == "never_ask")
        try await sandbox.track(user, "app_opened", at: at(hours: 26), count: 50)
        try await sandbox.track(user, "recipe_viewed", at: at(hours: 26), count: 50)
        for (hours, trigger) in [
            (30.0, nil), (24.0 * 400, nil), (24.0 * 400, "share_intent"), (24.0 * 400, "daily_limit_reached"),
        ] {
            let silenced = try await sandbox.nextPrompt(user, at: at(hours: hours), trigger: trigger)
            #expect(silenced.status == 13)
            #expect(silenced.errorJSON["code"] as? String == "never_ask")
        }

        let history = try await sandbox.run("prompt", "history", user, "--json")
        #expect(history.object["prompt_state"] as? String == "never_ask")
        let outcomes = (history.object["outcomes"] as? [[String: Any]] ?? []).compactMap { $0["outcome"] as? String }
        #expect(outcomes == ["shown", "never"])
        let table = try await sandbox.run("prompt", "history", user)
        #expect(table.stdout.contains("viral_content_created  never"))
    }

    @Test("a guest with five app opens over three days gets reengagement")
    func reengagement() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let user = try await sandbox.recipesGuest()
        for hours in [0.5, 12, 24, 48, 71] { try await sandbox.track(user, "app_opened", at: at(hours: hours)) }
        let early = try await sandbox.nextPrompt(user, at: at(hours: 71.5))
        #expect(early.status == 13)
        let due = try await sandbox.nextPrompt(user, at: at(hours: 72))
        #expect(due.status == 0, "\(due.stderr)")
        #expect(due.object["context"] as? String == "reengagement")
        #expect(due.object["priority"] as? String == "low")
    }

    @Test("a linked user gets no sign-in prompt")
    func linkedUser() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let user = try await sandbox.recipesGuest()
        try await sandbox.track(user, "recipe_created", at: at(minutes: 1))
        #expect(try await sandbox.nextPrompt(user, at: at(minutes: 2)).status == 0)
        let linked = try await sandbox.run(
            "link", user, "--provider", "apple", "--subject", "001234.abc", "--now", at(minutes: 3))
        #expect(linked.status == 0, "\(linked.stderr)")
        for trigger in [nil, "share_intent"] {
            let result = try await sandbox.nextPrompt(user, at: at(hours: 48), trigger: trigger)
            #expect(result.status == 13)
            #expect(result.errorJSON["code"] as? String == "user_linked")
        }
    }

    @Test("when several prompts are eligible the higher priority wins, every time")
    func priority() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let user = try await sandbox.recipesGuest()
        for action in ["recipe_created", "video_generated", "video_shared"] {
            try await sandbox.track(user, action, at: at(minutes: 1))
        }
        try await sandbox.track(user, "challenge_viewed", at: at(minutes: 1), count: 3)
        for minute in 2..<7 {
            let result = try await sandbox.nextPrompt(user, at: at(minutes: minute))
            #expect(result.object["context"] as? String == "viral_content_created")
        }
        let critical = try await sandbox.nextPrompt(user, at: at(minutes: 8), trigger: "daily_limit_reached")
        #expect(critical.object["context"] as? String == "daily_limit_reached")
        #expect(critical.object["priority"] as? String == "critical")
        // Once shown, the next highest takes its place; equal priorities go by profile order.
        _ = try await sandbox.run("prompt", "record", user, "viral_content_created", "shown", "--now", at(minutes: 9))
        let next = try await sandbox.nextPrompt(user, at: at(hours: 25))
        #expect(next.object["context"] as? String == "first_recipe_success")
    }

    @Test("an experiment variant changes the strategy: delayed waits 72 h and skips first_recipe_success")
    func variantStrategy() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let delayed = try await sandbox.recipesGuest(variant: "delayed")
        try await sandbox.track(delayed, "recipe_created", at: at(minutes: 1))
        #expect(try await sandbox.nextPrompt(delayed, at: at(minutes: 2)).status == 13)
        try await sandbox.track(delayed, "video_generated", at: at(minutes: 3))
        try await sandbox.track(delayed, "video_shared", at: at(minutes: 3))
        let viral = try await sandbox.nextPrompt(delayed, at: at(minutes: 4))
        #expect(viral.object["context"] as? String == "viral_content_created")
        let variants = (viral.object["variants"] as? [[String: Any]] ?? []).compactMap { $0["variant"] as? String }
        #expect(variants == ["delayed"])
    }

    @Test("bad input is refused with the right status")
    func refusals() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let user = try await sandbox.recipesGuest()
        #expect(try await sandbox.run("prompt", "next", "no-such-user").status == 66)
        #expect(try await sandbox.run("prompt", "record", "no-such-user", "reengagement", "shown").status == 66)
        let context = try await sandbox.run("prompt", "record", user, "no_such_context", "shown", "--json")
        #expect(context.status == 64)
        #expect(context.errorJSON["code"] as? String == "unknown_context")
        #expect(try await sandbox.run("prompt", "record", user, "reengagement", "maybe").status == 64)
        #expect(try await sandbox.run("prompt", "next", user, "--trigger", "no_such_trigger").status == 64)
        #expect(
            try await sandbox.run("prompt", "record", user, "reengagement", "shown", "--from", "x.ndjson").status == 64)
        #expect(try await sandbox.run("prompt", "record", "--from", "missing.ndjson").status == 66)
        let malformed = try await sandbox.run(
            "prompt", "record", "--from", "-", input: "{\"user\":\"\(user)\"}\nnot json\n")
        #expect(malformed.status == 65)
        #expect(malformed.stderr.contains("stdin:1: missing \"context\""))
        #expect(malformed.stderr.contains("stdin:2:"))
        #expect(
            (try await sandbox.run("prompt", "history", user, "--json").object["outcomes"] as? [Any])?.isEmpty == true)
        #expect(try await sandbox.run("experiment", "assign", user, "no_such_experiment").status == 66)
        #expect(try await sandbox.run("experiment", "assign", user, "auth_prompts", "--variant", "nope").status == 64)
        #expect(try await sandbox.run("experiment", "assign", user, "--variant", "control").status == 64)
    }
}
