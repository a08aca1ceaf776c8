import Foundation
import Testing

private let day0 = "2026-11-01T09:00:00Z"

/// A time `days` after day0.
private func on(day days: Int) -> String {
    let start = ISO8601DateFormatter().date(from: day0)!
    return ISO8601DateFormatter().string(from: start.addingTimeInterval(Double(days) * 86_400))
}

extension Sandbox {
    func triggerGuest(at time: String = day0) async throws -> String {
        let created = try await run("guest", "new", "--json", "--now", time)
        #expect(created.status == 0, "\(created.stderr)")
        return try #require(created.object["user_id"] as? String)
    }

    func putSubscription(_ user: String, _ key: String, at time: String) async throws -> Result {
        try await run("record", "put", user, "subscriptions", key, "--data", #"{"name":"\#(key)"}"#, "--now", time)
    }

    func offer(_ user: String, at time: String) async throws -> Result {
        try await run("prompt", "next", user, "--json", "--now", time)
    }
}

private func content(_ result: Sandbox.Result) -> [String: Any] { result.object["content"] as? [String: Any] ?? [:] }

@Suite("Prompts: caps, meters and triggers through the binary")
struct PromptTriggerTests {
    @Test("subscriptions: the refused 6th offers the guest's copy, after link the premium copy")
    func subscriptionLimitPrompts() async throws {
        let sandbox = try await Sandbox.withStore("subscriptions")
        let user = try await sandbox.triggerGuest()
        for index in 1...5 {
            #expect(try await sandbox.putSubscription(user, "s\(index)", at: on(day: 0)).status == 0)
        }
        // At the cap, nothing refused yet: no prompt.
        #expect(try await sandbox.offer(user, at: on(day: 0)).status == 13)
        let sixth = try await sandbox.putSubscription(user, "s6", at: on(day: 0))
        #expect(sixth.status == 10, "\(sixth.stderr)")

        let guestOffer = try await sandbox.offer(user, at: on(day: 0))
        #expect(guestOffer.status == 0, "\(guestOffer.stderr)")
        #expect(guestOffer.object["context"] as? String == "guest_cap_reached")
        #expect(content(guestOffer)["primary_action"] as? String == "Create a free account — save your 5 subscriptions")
        #expect((content(guestOffer)["message"] as? String)?.hasPrefix("Guests can track 5 subscriptions.") == true)

        // The guest creates the account from the prompt.
        #expect(
            try await sandbox.run("prompt", "record", user, "guest_cap_reached", "completed", "--now", on(day: 0))
                .status == 0)
        #expect(
            try await sandbox.run("link", user, "--provider", "apple", "--subject", "a-1", "--now", on(day: 0))
                .status == 0)
        // Linked: the guest's sign-in prompt is over, and nothing was refused as an account yet.
        #expect(try await sandbox.offer(user, at: on(day: 2)).status == 13)
        let accountSixth = try await sandbox.putSubscription(user, "s6", at: on(day: 2))
        #expect(accountSixth.status == 11, "\(accountSixth.stderr)")
        let premiumOffer = try await sandbox.offer(user, at: on(day: 2))
        #expect(premiumOffer.status == 0, "\(premiumOffer.stderr)")
        #expect(premiumOffer.object["context"] as? String == "account_cap_reached")
        #expect(content(premiumOffer)["primary_action"] as? String == "Upgrade to premium")
        #expect((content(premiumOffer)["message"] as? String)?.contains("Free accounts track 5 subscriptions") == true)
    }

    @Test("voice: 45 then 54 minutes offer the 75 % and the 90 % prompt once each; 60 the paywall")
    func voiceMeterPrompts() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let user = try await sandbox.triggerGuest()
        func use(_ amount: String, day: Int) async throws -> Sandbox.Result {
            try await sandbox.run("meter", "use", user, "api_minutes", amount, "--now", on(day: day))
        }
        #expect(try await use("44", day: 0).status == 0)
        #expect(try await sandbox.offer(user, at: on(day: 0)).status == 13)
        #expect(try await use("1", day: 0).status == 0)
        let low = try await sandbox.offer(user, at: on(day: 0))
        #expect(low.object["context"] as? String == "minutes_running_low", "\(low.stderr)")
        #expect(content(low)["message"] as? String == "You have used 45 of your 60 free minutes.")
        #expect(
            try await sandbox.run("prompt", "record", user, "minutes_running_low", "shown", "--now", on(day: 0))
                .status == 0)
        // Once only: a day later, still at 45, nothing.
        #expect(try await sandbox.offer(user, at: on(day: 1)).status == 13)

        #expect(try await use("9", day: 1).status == 0)
        let almost = try await sandbox.offer(user, at: on(day: 1))
        #expect(almost.object["context"] as? String == "minutes_almost_gone", "\(almost.stderr)")
        #expect(content(almost)["message"] as? String == "You have 6 of your 60 free minutes left.")
        #expect(
            try await sandbox.run("prompt", "record", user, "minutes_almost_gone", "shown", "--now", on(day: 1))
                .status == 0)
        #expect(try await sandbox.offer(user, at: on(day: 3)).status == 13, "each threshold prompt once")

        #expect(try await use("6", day: 3).status == 0)
        let paywall = try await sandbox.offer(user, at: on(day: 3))
        #expect(paywall.object["context"] as? String == "minutes_paywall", "\(paywall.stderr)")
        #expect((content(paywall)["message"] as? String)?.contains("4.99 USD a month") == true)
        #expect((content(paywall)["message"] as? String)?.contains("first month is free") == true)
        #expect(try await use("1", day: 3).status == 12)
    }

    @Test("recipes: a refused video raises daily_limit_reached with no --trigger; a plain check raises nothing")
    func recipesVideoMeterRaisesTheTrigger() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let user = try await sandbox.triggerGuest()
        #expect(
            try await sandbox.run("experiment", "assign", user, "auth_prompts", "--variant", "control", "--now", day0)
                .status == 0)
        for _ in 1...3 {
            #expect(try await sandbox.run("meter", "use", user, "video_generations", "1", "--now", day0).status == 0)
        }
        #expect(try await sandbox.offer(user, at: day0).status == 13)
        let before = try await sandbox.run("db", "status", "--json")
        for _ in 1...2 {
            #expect(try await sandbox.run("meter", "check", user, "video_generations", "--now", day0).status == 12)
        }
        #expect(try await sandbox.offer(user, at: day0).status == 13, "a plain check is a pure read")
        #expect(try await sandbox.run("db", "status", "--json").stdout == before.stdout)
        let raising = try await sandbox.run(
            "meter", "check", user, "video_generations", "--raise-prompt", "--now", day0)
        #expect(raising.status == 12, "\(raising.stderr)")
        let offer = try await sandbox.offer(user, at: day0)
        #expect(offer.status == 0, "\(offer.stderr)")
        #expect(offer.object["context"] as? String == "daily_limit_reached")
    }

    @Test("--explain names the deciding rule; exit 13 with --json prints the decision on stdout")
    func explainAndJSONOnNothingDue() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let user = try await sandbox.triggerGuest()
        #expect(try await sandbox.run("meter", "use", user, "api_minutes", "50", "--now", day0).status == 0)

        let explained = try await sandbox.run("prompt", "next", user, "--explain", "--json", "--now", day0)
        #expect(explained.status == 0, "\(explained.stderr)")
        #expect(explained.object["decided_by"] as? String == "minutes_running_low")
        #expect(explained.object["due"] as? Bool == true)
        #expect((explained.object["offer"] as? [String: Any])?["context"] as? String == "minutes_running_low")
        let text = try await sandbox.run("prompt", "next", user, "--explain", "--now", day0)
        #expect(text.status == 0)
        #expect(text.stdout.contains("decided by: minutes_running_low"))
        #expect(text.stdout.contains("condition_false"))

        #expect(
            try await sandbox.run("prompt", "record", user, "minutes_running_low", "shown", "--now", day0).status == 0)
        let quiet = try await sandbox.run("prompt", "next", user, "--json", "--now", on(day: 0))
        #expect(quiet.status == 13)
        #expect(quiet.errorJSON["code"] as? String == "cooldown")
        #expect(quiet.object["due"] as? Bool == false)
        #expect(quiet.object["decided_by"] is NSNull)
        let reason = quiet.object["reason"] as? [String: Any] ?? [:]
        #expect(reason["code"] as? String == "cooldown")
        #expect(reason["eligible_at"] as? String != nil)
        let rules = Dictionary(
            uniqueKeysWithValues: (quiet.object["rules"] as? [[String: Any]] ?? []).map {
                ($0["context"] as? String ?? "", $0)
            })
        #expect(rules["minutes_running_low"]?["verdict"] as? String == "once")
        #expect(rules["minutes_almost_gone"]?["verdict"] as? String == "condition_false")
        #expect((rules["minutes_almost_gone"]?["condition"] as? String)?.contains("at_least 90") == true)
        #expect(rules["session_refused"]?["verdict"] as? String == "trigger_not_raised")
        #expect(rules["minutes_paywall"]?["eligible"] as? Bool == false)

        let quietText = try await sandbox.run("prompt", "next", user, "--explain", "--now", on(day: 0))
        #expect(quietText.status == 13)
        #expect(quietText.stdout.contains("minutes_running_low") && quietText.stdout.contains("once"))
        #expect(quietText.stderr.contains("cooldown"))
    }

    @Test("a variant shows its own copy, with placeholders filled")
    func variantCopy() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        var offers: [String: [String: Any]] = [:]
        for variant in ["control", "benefits"] {
            let user = try await sandbox.triggerGuest()
            #expect(
                try await sandbox.run("experiment", "assign", user, "auth_prompts", "--variant", variant, "--now", day0)
                    .status == 0)
            #expect(try await sandbox.run("track", user, "recipe_created", "--now", day0).status == 0)
            let offer = try await sandbox.offer(user, at: day0)
            #expect(offer.status == 0, "\(offer.stderr)")
            offers[variant] = content(offer)
        }
        #expect(offers["control"]?["title"] as? String == "Your first recipe!")
        #expect(offers["benefits"]?["title"] as? String == "Your first recipe is ready")
        #expect(
            offers["benefits"]?["message"] as? String
                == "Sign in and your 1 recipe is saved on every device, with its photos.")
        #expect(offers["benefits"]?["primary_action"] as? String == "Keep my recipe")
        #expect(offers["benefits"]?["secondary_action"] as? String == "Maybe later")
    }

    @Test("an unknown placeholder is a file:line: profile error, exit 65")
    func unknownPlaceholderIsRefused() async throws {
        let sandbox = try Sandbox()
        let text = try String(
            contentsOf: Sandbox.packageRoot.appendingPathComponent("Templates/subscriptions.yaml"), encoding: .utf8)
        try sandbox.write(
            "bad.yaml",
            text.replacingOccurrences(of: "{limit.subscriptions.used}", with: "{limit.subscriptions.count}"))
        let result = try await sandbox.run("profile", "validate", "bad.yaml")
        #expect(result.status == 65)
        #expect(result.stderr.contains("bad.yaml:"))
        #expect(result.stderr.contains("unknown placeholder '{limit.subscriptions.count}'"))
    }

    @Test("prompt reset undoes never, records an event; outcomes queue the backup")
    func resetAndBackupQueue() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        let user = try await sandbox.triggerGuest()
        let contexts = try await sandbox.run("prompt", "next", user, "--json", "--explain", "--now", day0)
        let context = try #require(
            ((contexts.object["rules"] as? [[String: Any]])?.first?["context"]) as? String, "\(contexts.stdout)")
        // Drain what creating the user queued, so the outcome's own queueing shows.
        let drained = try await sandbox.run("backup", "push", "--to", sandbox.path("pushed"), "--now", day0)
        #expect(drained.status == 0, "\(drained.stderr)")
        #expect(!(try await sandbox.run("backup", "queue", "--json").stdout.contains(user)))
        let never = try await sandbox.run("prompt", "record", user, context, "never", "--json", "--now", day0)
        #expect(never.status == 0, "\(never.stderr)")
        let queue = try await sandbox.run("backup", "queue", "--json")
        #expect(
            queue.stdout.contains(user), "a never outcome queues the user's backup: \(queue.stdout) \(queue.stderr)")

        let silenced = try await sandbox.run("prompt", "next", user, "--json", "--now", on(day: 30))
        #expect(silenced.status == 13)
        #expect(silenced.errorJSON["code"] as? String == "never_ask")

        let reset = try await sandbox.run("prompt", "reset", user, "--json", "--now", on(day: 30))
        #expect(reset.status == 0, "\(reset.stderr)")
        #expect(reset.object["reset"] as? Bool == true)
        #expect(reset.object["prompt_state"] as? String == "dismissed")
        #expect(reset.object["user_id"] as? String == user)
        let after = try await sandbox.run("prompt", "next", user, "--json", "--now", on(day: 30))
        #expect(after.errorJSON["code"] as? String != "never_ask", "\(after.stdout)")
        let counters = try await sandbox.run("counters", user, "--json")
        #expect(counters.stdout.contains("prompt_reset"), "the reset is recorded as an event: \(counters.stdout)")
        let again = try await sandbox.run("prompt", "reset", user, "--json", "--now", on(day: 31))
        #expect(again.status == 0)
        #expect(again.object["reset"] as? Bool == false)
        #expect(try await sandbox.run("prompt", "reset", "ghost").status == 66)
    }

    @Test("a reset survives a later link and unlink: only outcomes after the reset rebuild the state")
    func resetSurvivesUnlink() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        let user = try await sandbox.triggerGuest()
        #expect(try await sandbox.run("prompt", "record", user, "protect_streak", "never", "--now", day0).status == 0)
        #expect(try await sandbox.run("prompt", "reset", user, "--now", on(day: 1)).status == 0)
        let linked = try await sandbox.run(
            "link", user, "--provider", "email", "--subject", "reset@example.com", "--now", on(day: 2))
        #expect(linked.status == 0, "\(linked.stderr)")
        let unlinked = try await sandbox.run("unlink", user, "--provider", "email", "--now", on(day: 3))
        #expect(unlinked.status == 0, "\(unlinked.stderr)")
        let shown = try await sandbox.run("user", "show", user, "--json")
        let state = (shown.object["user"] as? [String: Any])?["prompt_state"] as? String
        #expect(state != "never_ask", "the never answered before the reset came back: \(shown.stdout)")
    }
}
