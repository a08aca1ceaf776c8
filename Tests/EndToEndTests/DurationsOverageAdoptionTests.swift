import Foundation
import Testing

/// Real durations, relative --now, negative amounts, overage,
/// ownerless data and its adoption, idempotent guests, the event log and
/// the conflict archive, all through the binary.
@Suite("Durations, overage, ownerless data, events and the conflict archive")
struct DurationsOverageAdoptionTests {
    static let start = "2026-01-31T10:00:00Z"

    @Test("--trial 1M is refused naming P1M and 1 month, 0d is refused, and neither uses up the trial")
    func ambiguousAndZeroTrialsAreRefused() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        sandbox.environment["GUESTMODE_NOW"] = Self.start
        let guest = try await sandbox.newGuest()
        let before = try sandbox.snapshot()

        let ambiguous = try await sandbox.run("plan", "grant", guest, "premium", "--trial", "1M")
        #expect(ambiguous.status == 64)
        #expect(ambiguous.stderr.contains("P1M") && ambiguous.stderr.contains("1 month"), "\(ambiguous.stderr)")
        let zero = try await sandbox.run("plan", "grant", guest, "premium", "--trial", "0d")
        #expect(zero.status == 64)
        #expect(zero.stderr.contains("zero"), "\(zero.stderr)")
        for refused in ["", "-7d", "P", "PT", "7", "1.5d", "P1.5M", "soon", "7d7d"] {
            let result = try await sandbox.run("plan", "grant", guest, "premium", "--trial", refused)
            #expect(result.status == 64, "--trial '\(refused)' was not refused: \(result.stdout)")
        }
        #expect(try sandbox.snapshot() == before, "a refused trial changes nothing")

        // The trial was not used up: a month-long one is still granted, ending one calendar month later.
        let granted = try await sandbox.run("plan", "grant", guest, "premium", "--trial", "P1M", "--json")
        #expect(granted.status == 0, "\(granted.stderr)")
        #expect(granted.object["state"] as? String == "trial")
        #expect(granted.object["ends_at"] as? String == "2026-02-28T10:00:00.000Z", "31 January + 1 month")
    }

    @Test("--trial P1M and '1 month' end one calendar month later; short and ISO forms agree")
    func calendarMonths() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-22T09:30:00Z"
        for (trial, end) in [
            ("P1M", "2026-12-22T09:30:00.000Z"), ("1 month", "2026-12-22T09:30:00.000Z"),
            ("P1Y", "2027-11-22T09:30:00.000Z"), ("PT24H", "2026-11-23T09:30:00.000Z"),
            ("P7D", "2026-11-29T09:30:00.000Z"), ("1 week", "2026-11-29T09:30:00.000Z"),
            ("PT30M", "2026-11-22T10:00:00.000Z"), ("P1DT12H", "2026-11-23T21:30:00.000Z"),
            ("2 months", "2027-01-22T09:30:00.000Z"),
        ] {
            let guest = try await sandbox.newGuest()
            let granted = try await sandbox.run("plan", "grant", guest, "premium", "--trial", trial, "--json")
            #expect(granted.status == 0, "\(trial): \(granted.stderr)")
            #expect(granted.object["ends_at"] as? String == end, "\(trial)")
        }
    }

    @Test("--now and GUESTMODE_NOW take a time relative to the clock")
    func relativeNow() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let guest = try await sandbox.newGuest("--now", "+30d")
        let shown = try await sandbox.run("user", "show", guest, "--json")
        let createdText = try #require((shown.object["user"] as? [String: Any])?["created_at"] as? String)
        let created = try #require(parseTime(createdText))
        #expect(created.timeIntervalSinceNow > 29 * 86_400, "+30d is about 30 days ahead")
        let past = try await sandbox.run(arguments: ["guest", "new", "--json"], environment: ["GUESTMODE_NOW": "-1h"])
        #expect(past.status == 0, "\(past.stderr)")
        let pastText = try #require(past.object["created_at"] as? String)
        let pastCreated = try #require(parseTime(pastText))
        #expect(pastCreated.timeIntervalSinceNow < -3000 && pastCreated.timeIntervalSinceNow > -4000)
        #expect(try await sandbox.run("--now", "-1h", "user", "list").status == 0)
        let bad = try await sandbox.run("user", "list", "--now", "+1M")
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("P1M"), "\(bad.stderr)")
    }

    @Test("a negative amount is refused as an amount, not as a missing value")
    func negativeAmounts() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let guest = try await sandbox.newGuest()
        let before = try sandbox.snapshot()
        for arguments in [
            ["meter", "use", guest, "api_minutes", "-5"], ["meter", "use", guest, "api_minutes", "-5", "--id", "k"],
            ["meter", "check", guest, "api_minutes", "-0.5"],
        ] {
            let result = try await sandbox.run(arguments: arguments)
            #expect(result.status == 64, "\(arguments)")
            #expect(result.stderr.contains("amount must be positive"), "\(result.stderr)")
            #expect(!result.stderr.contains("Missing"), "\(result.stderr)")
        }
        let json = try await sandbox.run("meter", "use", guest, "api_minutes", "-5", "--json")
        #expect(json.status == 64)
        #expect((json.errorJSON["message"] as? String)?.contains("positive") == true, "\(json.stderr)")
        #expect(try sandbox.snapshot() == before)
    }

    @Test("voice: with --overage allow, 7 minutes with 6 left records 7, reads exhausted, exits 12")
    func overage() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        sandbox.environment["GUESTMODE_NOW"] = Self.start
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("meter", "use", guest, "api_minutes", "54").status == 0)
        // The default (refuse): nothing recorded.
        let refused = try await sandbox.run("meter", "use", guest, "api_minutes", "7")
        #expect(refused.status == 12)
        #expect(refused.stderr.contains("nothing was recorded"))
        let explicitRefuse = try await sandbox.run("meter", "use", guest, "api_minutes", "7", "--overage", "refuse")
        #expect(explicitRefuse.status == 12)

        let allowed = try await sandbox.run("meter", "use", guest, "api_minutes", "7", "--overage", "allow", "--json")
        #expect(allowed.status == 12, "the allowance is now used up")
        #expect(allowed.object["recorded"] as? Bool == true)
        #expect(allowed.object["overage"] as? Bool == true)
        let status = allowed.object["status"] as? [String: Any]
        #expect(status?["used"] as? Double == 61)
        #expect(status?["level"] as? String == "exhausted")
        #expect(status?["remaining"] as? Double == 0)
        #expect((allowed.object["warnings"] as? [Any])?.isEmpty == true, "54 already fired both warnings")

        let text = try await sandbox.run("meter", "status", guest, "api_minutes", "--json")
        let shown = (text.json as? [[String: Any]])?.first
        #expect(shown?["used"] as? Double == 61)
        #expect(try await sandbox.run("meter", "check", guest, "api_minutes").status == 12, "the gate stays shut")
        let plain = try await sandbox.run("meter", "use", guest, "api_minutes", "1", "--overage", "allow")
        #expect(plain.status == 12)
        #expect(plain.stderr.contains("recorded in full"), "\(plain.stderr)")
    }

    @Test("overage fires every warning it crosses, once")
    func overageFiresEveryWarning() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let guest = try await sandbox.newGuest()
        let result = try await sandbox.run("meter", "use", guest, "api_minutes", "70", "--overage", "allow", "--json")
        #expect(result.status == 12)
        let levels = (result.object["warnings"] as? [[String: Any]])?.compactMap { $0["level"] as? String }
        #expect(levels == ["warning", "critical"])
        let events = try await sandbox.run("user", "events", guest, "--action", "meter_warning", "--json")
        #expect((events.json as? [Any])?.count == 2)
    }

    @Test(
        "habits: ownerless records written through the CLI are adopted; later ones by a second run; a third changes nothing"
    )
    func ownerlessAdoption() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        sandbox.environment["GUESTMODE_NOW"] = Self.start
        for (collection, key, data) in [
            ("habits", "h1", #"{"name":"Run"}"#),
            ("completions", "/h1/2026-01-30", #"{"habit":"h1","day":"2026-01-30"}"#),
        ] {
            let put = try await sandbox.run("record", "put-ownerless", collection, key, "--data", data)
            #expect(put.status == 0, "\(put.stderr)")
        }
        let badKey = try await sandbox.run("record", "put-ownerless", "completions", "h1/x", "--data", "{}")
        #expect(badKey.status == 64, "a unique collection's ownerless key starts with the guest owner")
        let user = try await sandbox.newGuest()

        let first = try await sandbox.run("migrate", "adopt", user, "--json")
        #expect(first.status == 0, "\(first.stderr)")
        #expect((first.object["moved"] as? [String: Int]) == ["habits": 1, "completions": 1])
        #expect(try await sandbox.run("record", "get", user, "completions", "\(user)/h1/2026-01-30").status == 0)

        // The app fell back to guest mode offline and wrote more.
        let later = try await sandbox.run(
            "record", "put-ownerless", "completions", "/h1/2026-01-31", "--data",
            #"{"habit":"h1","day":"2026-01-31"}"#)
        #expect(later.status == 0, "\(later.stderr)")
        let second = try await sandbox.run("migrate", "adopt", user, "--json")
        #expect(second.status == 0)
        #expect((second.object["moved"] as? [String: Int]) == ["completions": 1], "only what is new")
        let listed = try await sandbox.run("record", "list", user, "completions", "--json")
        #expect((listed.json as? [Any])?.count == 2)

        let stable = try sandbox.snapshot()
        let third = try await sandbox.run("migrate", "adopt", user, "--json")
        #expect(third.status == 0)
        #expect((third.object["moved"] as? [String: Int]) == [:])
        #expect(try sandbox.snapshot() == stable, "a run with nothing to adopt leaves the store byte for byte")
    }

    @Test("an adoption that finds nothing does not block a later one")
    func emptyAdoptionDoesNotBlock() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        let user = try await sandbox.newGuest()
        let empty = try await sandbox.run("migrate", "adopt", user)
        #expect(empty.status == 0)
        #expect(empty.stdout.contains("no ownerless records"))
        #expect(try await sandbox.run("record", "put-ownerless", "habits", "late", "--data", "{}").status == 0)
        let adopted = try await sandbox.run("migrate", "adopt", user, "--json")
        #expect((adopted.object["moved"] as? [String: Int]) == ["habits": 1])
    }

    @Test("guest new --device is idempotent and says so")
    func idempotentDevice() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let first = try await sandbox.run("guest", "new", "--device", "phone-1", "--json")
        #expect(first.status == 0)
        #expect(first.object["new"] as? Bool == true)
        let id = try #require(first.object["user_id"] as? String)
        let before = try sandbox.snapshot()
        let again = try await sandbox.run("guest", "new", "--device", "phone-1", "--json")
        #expect(again.status == 0)
        #expect(again.object["user_id"] as? String == id)
        #expect(again.object["new"] as? Bool == false)
        #expect(again.stderr.isEmpty, "with --json the document says it; stderr is for errors")
        #expect(try sandbox.snapshot() == before, "nothing created")
        let text = try await sandbox.run("guest", "new", "--device", "phone-1")
        #expect(text.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == id)
        #expect(text.stderr.contains("already has guest"))
        let other = try await sandbox.run("guest", "new", "--device", "phone-2", "--json")
        #expect(other.object["user_id"] as? String != id)
        #expect(other.object["new"] as? Bool == true)
    }

    @Test("six processes creating a guest for one device at once create one user and all succeed")
    func concurrentDevice() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let processes = try (0..<6).map { _ in try sandbox.start(["guest", "new", "--device", "shared-phone"]) }
        var statuses: [Int32] = []
        for process in processes { statuses.append(await Sandbox.exitStatus(of: process).status) }
        #expect(statuses == Array(repeating: 0, count: 6))
        #expect(try await sqlite(sandbox, "SELECT COUNT(*) FROM users WHERE device = 'shared-phone'") == "1")
    }

    @Test("user purge and list take --inactive DURATION; --inactive-days stays an alias")
    func inactiveDurations() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let idle = try await sandbox.newGuest("--now", "2026-01-01T00:00:00Z")
        let active = try await sandbox.newGuest("--now", "2026-03-30T00:00:00Z")
        let now = "2026-04-01T00:00:00Z"
        for option in [
            ["--inactive", "30d"], ["--inactive", "P1M"], ["--inactive-days", "30"], ["--inactive", "4 weeks"],
        ] {
            let listed = try await sandbox.run(arguments: ["user", "list", "--json", "--now", now] + option)
            #expect(listed.status == 0, "\(option): \(listed.stderr)")
            let ids = (listed.json as? [[String: Any]])?.compactMap { $0["user_id"] as? String }
            #expect(ids == [idle], "\(option)")
        }
        let dryRun = try await sandbox.run("user", "purge", "--inactive", "90d", "--dry-run", "--json", "--now", now)
        #expect(dryRun.status == 0, "\(dryRun.stderr)")
        #expect(dryRun.object["inactive"] as? String == "90d")
        #expect(dryRun.object["inactive_days"] as? Int == 90)
        #expect(try await sandbox.run("user", "purge", "--inactive", "0d", "--yes").status == 64)
        #expect(try await sandbox.run("user", "purge", "--inactive", "1M", "--yes").status == 64)
        #expect(try await sandbox.run("user", "purge", "--yes").status == 64)
        #expect(
            try await sandbox.run("user", "purge", "--inactive", "9d", "--inactive-days", "9", "--yes").status == 64)
        let purged = try await sandbox.run("user", "purge", "--inactive", "2 months", "--yes", "--json", "--now", now)
        #expect((purged.object["purged"] as? [[String: Any]])?.compactMap { $0["user_id"] as? String } == [idle])
        #expect(try await sandbox.run("user", "show", active).status == 0)
    }

    @Test("user events shows upgrade events with provider and failure code, filtered by action, since and limit")
    func userEvents() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let account = try await sandbox.newGuest("--now", "2026-01-01T00:00:00Z")
        #expect(
            try await sandbox.run(
                "link", account, "--provider", "apple", "--subject", "s1", "--now", "2026-01-02T00:00:00Z"
            ).status == 0)
        let guest = try await sandbox.newGuest("--now", "2026-01-03T00:00:00Z")
        #expect(try await sandbox.run("track", guest, "app_opened", "--now", "2026-01-03T00:00:00Z").status == 0)
        let refused = try await sandbox.run(
            "link", guest, "--provider", "apple", "--subject", "s1", "--now", "2026-01-04T00:00:00Z")
        #expect(refused.status == 14)

        let all = try await sandbox.run("user", "events", guest, "--json")
        #expect(all.status == 0, "\(all.stderr)")
        let actions = (all.json as? [[String: Any]])?.compactMap { $0["action"] as? String } ?? []
        #expect(actions.first == "app_opened")
        #expect(actions.contains("account_upgrade_started") && actions.contains("account_upgrade_failed"))
        let failed = try await sandbox.run("user", "events", guest, "--action", "account_upgrade_failed", "--json")
        let failure = try #require((failed.json as? [[String: Any]])?.first)
        #expect(failure["user_id"] as? String == guest)
        let properties = failure["properties"] as? [String: Any]
        #expect(properties?["provider"] as? String == "apple")
        #expect(properties?["code"] as? String == "identity_already_exists", "\(failure)")

        let since = try await sandbox.run("user", "events", guest, "--since", "2026-01-04T00:00:00Z", "--json")
        #expect((since.json as? [[String: Any]])?.contains { $0["action"] as? String == "app_opened" } == false)
        let relative = try await sandbox.run(
            "user", "events", guest, "--since", "-12h", "--now", "2026-01-04T06:00:00Z", "--json")
        let relativeActions = (relative.json as? [[String: Any]])?.compactMap { $0["action"] as? String }
        #expect(relativeActions == (since.json as? [[String: Any]])?.compactMap { $0["action"] as? String })
        let latest = try await sandbox.run("user", "events", guest, "--limit", "1", "--json")
        #expect((latest.json as? [[String: Any]])?.count == 1)
        #expect((latest.json as? [[String: Any]])?.first?["action"] as? String == actions.last)
        let table = try await sandbox.run("user", "events", guest)
        #expect(table.stdout.contains("provider=apple"))
        #expect(try await sandbox.run("user", "events", "nobody").status == 66)
        #expect(try await sandbox.run("user", "events", guest, "--limit", "0").status == 64)
    }

    @Test("merge conflicts list shows the loser of a keep-account merge; restore brings it back beside the winner")
    func conflictArchive() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        sandbox.environment["GUESTMODE_NOW"] = Self.start
        let guest = try await sandbox.newGuest()
        let account = try await sandbox.newGuest()
        #expect(try await sandbox.run("link", account, "--provider", "apple", "--subject", "s").status == 0)
        #expect(
            try await sandbox.run("record", "put", guest, "habits", "h1", "--data", #"{"name":"guest"}"#).status == 0)
        #expect(
            try await sandbox.run("record", "put", account, "habits", "h1", "--data", #"{"name":"account"}"#).status
                == 0)
        let merged = try await sandbox.run("merge", guest, "--into", account, "--policy", "keep-account")
        #expect(merged.status == 0, "\(merged.stderr)")

        let listed = try await sandbox.run("merge", "conflicts", "list", account, "--json")
        #expect(listed.status == 0, "\(listed.stderr)")
        let entry = try #require((listed.json as? [[String: Any]])?.first)
        #expect(entry["user_id"] as? String == account)
        #expect(entry["collection"] as? String == "habits")
        #expect(entry["key"] as? String == "h1")
        #expect((entry["data"] as? [String: Any])?["name"] as? String == "guest")
        let id = try #require(entry["conflict_id"] as? Int)
        let everyone = try await sandbox.run("merge", "conflicts", "list")
        #expect(everyone.stdout.contains(#"{"name":"guest"}"#))

        let taken = try await sandbox.run("merge", "conflicts", "restore", String(id), "--key", "h1")
        #expect(taken.status == 14, "the winner's key is refused")
        let restored = try await sandbox.run(
            "merge", "conflicts", "restore", String(id), "--key", "h1-from-guest", "--json")
        #expect(restored.status == 0, "\(restored.stderr)")
        #expect(restored.object["restored_key"] as? String == "h1-from-guest")
        #expect(
            try await sandbox.run("record", "get", account, "habits", "h1").stdout.contains(#"{"name":"account"}"#),
            "the winner is untouched")
        #expect(
            try await sandbox.run("record", "get", account, "habits", "h1-from-guest").stdout.contains(
                #"{"name":"guest"}"#))
        let after = try await sandbox.run("merge", "conflicts", "list", account, "--json")
        #expect((after.json as? [Any])?.isEmpty == true)
        #expect(try await sandbox.run("merge", "conflicts", "restore", String(id)).status == 66)
    }
}

private func parseTime(_ text: String) -> Date? {
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return formatter.date(from: text)
}
