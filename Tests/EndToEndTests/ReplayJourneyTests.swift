import Foundation
import Testing

/// One step of a journey: what the live command line runs at `time`, and the
/// same step as a line of a replay log.
private struct ReplayStep {
    var time: String
    var user: String
    var live: [String]
    var line: String
    /// The exit status the live command is meant to end with.
    var status: Int32 = 0
}

/// A `record put` of one subscription, live and as a replay line.
private func put(_ time: String, _ user: String, _ key: String, status: Int32 = 0) -> ReplayStep {
    ReplayStep(
        time: time, user: user,
        live: ["record", "put", "$user", "subscriptions", key, "--data", #"{"price":1}"#],
        line:
            #"{"type":"record","user":"$user","collection":"subscriptions","key":"\#(key)","data":{"price":1},"at":"$at"}"#,
        status: status)
}

/// `replay` applies record puts, meter uses and plan changes through the same
/// engine steps as the live commands, and decides every rule kind (counters,
/// limits, meters, triggers) as `prompt next` does: the journeys of the README,
/// run live (each step followed by `prompt next` and, when one is due,
/// `prompt record … shown`) and replayed, give the same prompts in the same order.
@Suite("replay over caps, meters, triggers and plans")
struct ReplayJourneyTests {
    /// The prompts shown live, as `user context time` lines, and the replay's decisions in the same form.
    private func compare(profile: String, steps: [ReplayStep]) async throws -> [String] {
        let sandbox = try await Sandbox.withStore(profile)
        // Live: each guest made at its first step, then every step followed by prompt next.
        var ids: [String: String] = [:]
        var live: [String] = []
        var log: [String] = []
        for step in steps {
            if ids[step.user] == nil {
                let made = try await sandbox.run("guest", "new", "-q", "--now", step.time)
                ids[step.user] = made.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            }
            let id = try #require(ids[step.user])
            let arguments = step.live.map { $0 == "$user" ? id : $0 } + ["--now", step.time]
            let ran = try await sandbox.run(arguments: arguments)
            #expect(ran.status == step.status, "\(arguments): \(ran.stderr)")
            let next = try await sandbox.run("prompt", "next", id, "--json", "--now", step.time)
            if next.status == 0, let context = next.object["context"] as? String {
                live.append("\(step.user) \(context) \(step.time)")
                #expect(
                    try await sandbox.run("prompt", "record", id, context, "shown", "--now", step.time).status == 0)
            } else {
                #expect(next.status == 13, "\(next.stderr)")
            }
            log.append(
                step.line.replacingOccurrences(of: "$user", with: id).replacingOccurrences(of: "$at", with: step.time))
        }
        // Replayed under the same profile, in a store of its own.
        try (log.joined(separator: "\n") + "\n").write(
            toFile: sandbox.path("journey.ndjson"), atomically: true, encoding: .utf8)
        let replayed = try await sandbox.run("replay", "journey.ndjson", "--decisions", "decisions.ndjson", "--json")
        #expect(replayed.status == 0, "\(replayed.stderr)")
        let names = Dictionary(uniqueKeysWithValues: ids.map { ($1, $0) })
        let decisions = String(decoding: try sandbox.read("decisions.ndjson"), as: UTF8.self)
            .split(separator: "\n").compactMap { line -> String? in
                guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    let user = object["user"] as? String, let context = object["context"] as? String,
                    let at = object["at"] as? String
                else { return nil }
                return "\(names[user] ?? user) \(context) \(at.replacingOccurrences(of: ".000Z", with: "Z"))"
            }
        #expect(
            decisions == live,
            "replayed:\n\(decisions.joined(separator: "\n"))\nlive:\n\(live.joined(separator: "\n"))")
        return live
    }

    @Test("the voice journey: meter warnings, a refused use's trigger, a trial, overage")
    func voice() async throws {
        func use(
            _ time: String, _ user: String, _ amount: String, id: String? = nil, overage: String? = nil,
            status: Int32 = 0
        ) -> ReplayStep {
            var live = ["meter", "use", "$user", "api_minutes", amount]
            var line = #"{"type":"meter","user":"$user","meter":"api_minutes","amount":\#(amount),"at":"$at""#
            if let id {
                live += ["--id", id]
                line += #","id":"\#(id)""#
            }
            if let overage {
                live += ["--overage", overage]
                line += #","overage":"\#(overage)""#
            }
            return ReplayStep(time: time, user: user, live: live, line: line + "}", status: status)
        }
        let shown = try await compare(
            profile: "voice",
            steps: [
                ReplayStep(
                    time: "2026-11-01T10:00:00Z", user: "speaker", live: ["track", "$user", "app_opened"],
                    line: #"{"user":"$user","action":"app_opened","at":"$at"}"#),
                use("2026-11-01T10:05:00Z", "speaker", "45"),
                use("2026-11-01T11:00:00Z", "speaker", "10"),
                use("2026-11-03T10:00:00Z", "speaker", "20", status: 12),
                ReplayStep(
                    time: "2026-11-05T10:00:00Z", user: "speaker",
                    live: ["plan", "grant", "$user", "premium", "--trial", "P1M"],
                    line: #"{"type":"plan","user":"$user","plan":"premium","trial":"P1M","at":"$at"}"#),
                use("2026-11-06T10:00:00Z", "speaker", "20", id: "call-1"),
                use("2026-11-06T10:00:00Z", "speaker", "20", id: "call-1"),
                use("2026-11-01T12:00:00Z", "late", "54"),
                use("2026-11-03T12:00:00Z", "late", "7", overage: "allow", status: 12),
                ReplayStep(
                    time: "2026-11-10T10:00:00Z", user: "late", live: ["plan", "grant", "$user", "premium"],
                    line: #"{"type":"plan","user":"$user","plan":"premium","at":"$at"}"#),
                ReplayStep(
                    time: "2026-11-12T10:00:00Z", user: "late", live: ["plan", "revoke", "$user", "premium"],
                    line: #"{"type":"plan","user":"$user","plan":"premium","revoke":true,"at":"$at"}"#),
                use("2026-11-14T10:00:00Z", "late", "1", status: 12),
            ])
        // Meter rules and the trigger of a refused use both fired.
        #expect(shown.count >= 3, "\(shown)")
        #expect(Set(shown.map { $0.split(separator: " ")[1] }).count >= 3, "\(shown)")
    }

    @Test("the subscriptions journey: the cap's refusal raises its prompt; premium lifts the cap")
    func subscriptions() async throws {
        var steps = (1...5).map { put("2026-11-01T10:0\($0):00Z", "guest", "sub-\($0)") }
        steps += [
            put("2026-11-01T10:06:00Z", "guest", "sub-6", status: 10),
            put("2026-11-01T10:07:00Z", "guest", "sub-1"),
            ReplayStep(
                time: "2026-11-02T10:00:00Z", user: "guest", live: ["plan", "grant", "$user", "premium"],
                line: #"{"type":"plan","user":"$user","plan":"premium","at":"$at"}"#),
            put("2026-11-02T10:01:00Z", "guest", "sub-6"),
            put("2026-11-03T10:00:00Z", "other", "a"),
        ]
        steps += (2...6).map { put("2026-11-04T10:0\($0):00Z", "other", "o-\($0)", status: $0 == 6 ? 10 : 0) }
        let shown = try await compare(profile: "subscriptions", steps: steps)
        #expect(
            shown.map { $0.split(separator: " ").prefix(2).joined(separator: " ") } == [
                "guest guest_cap_reached", "other guest_cap_reached",
            ])
    }

    /// A link line upgrades the guest in place, as `link` does live: at the
    /// cap the guest now meets the account's refusal and its upgrade prompt,
    /// not the sign-in prompt, which another guest still gets.
    @Test("a link in the log makes the guest an account from that line on")
    func linking() async throws {
        var steps = (1...5).map { put("2026-11-01T10:0\($0):00Z", "guest", "sub-\($0)") }
        steps += [
            put("2026-11-01T10:06:00Z", "guest", "sub-6", status: 10),
            ReplayStep(
                time: "2026-11-02T11:00:00Z", user: "guest",
                live: ["link", "$user", "--provider", "apple", "--subject", "apple-1", "--email", "ada@example.com"],
                line:
                    #"{"type":"link","user":"$user","provider":"apple","subject":"apple-1","email":"ada@example.com","at":"$at"}"#
            ),
            // An account's cap is premium's to lift (exit 11), and its prompt is the upgrade's.
            put("2026-11-03T10:00:00Z", "guest", "sub-6", status: 11),
        ]
        steps += (1...6).map { put("2026-11-03T11:0\($0):00Z", "other", "o-\($0)", status: $0 == 6 ? 10 : 0) }
        let shown = try await compare(profile: "subscriptions", steps: steps)
        #expect(
            shown.map { $0.split(separator: " ").prefix(2).joined(separator: " ") } == [
                "guest guest_cap_reached", "guest account_cap_reached", "other guest_cap_reached",
            ])
    }

    /// A link line is checked as `link` checks its arguments: an unknown
    /// provider or a missing subject makes the log bad (exit 65, the line
    /// named, nothing replayed), and an identity another user of the log
    /// already holds is refused as live (exit 14). The store is never written.
    @Test("bad link lines: 65 with the line, a taken identity 14")
    func badLinkLines() async throws {
        let sandbox = try await Sandbox.withStore("subscriptions")
        let before = try await sandbox.run("db", "status", "--json")
        func replay(_ lines: [String]) async throws -> (status: Int32, stderr: String) {
            try (lines.joined(separator: "\n") + "\n").write(
                toFile: sandbox.path("links.ndjson"), atomically: true, encoding: .utf8)
            let ran = try await sandbox.run("replay", "links.ndjson", "--quiet")
            return (ran.status, ran.stderr)
        }
        let opened = #"{"user":"a","action":"app_opened","at":"2026-11-01T10:00:00Z"}"#
        let unknown = try await replay([
            opened, #"{"type":"link","user":"a","provider":"myspace","subject":"s","at":"2026-11-01T11:00:00Z"}"#,
        ])
        #expect(unknown.status == 65, "\(unknown.stderr)")
        #expect(unknown.stderr.contains("links.ndjson:2:") && unknown.stderr.contains("unknown provider 'myspace'"))
        let subjectless = try await replay([
            opened, #"{"type":"link","user":"a","provider":"apple","at":"2026-11-01T11:00:00Z"}"#,
        ])
        #expect(subjectless.status == 65, "\(subjectless.stderr)")
        #expect(subjectless.stderr.contains("links.ndjson:2:") && subjectless.stderr.contains("'subject'"))
        let taken = try await replay([
            #"{"type":"link","user":"a","provider":"apple","subject":"s-1","at":"2026-11-01T11:00:00Z"}"#,
            #"{"type":"link","user":"b","provider":"apple","subject":"s-1","at":"2026-11-01T12:00:00Z"}"#,
        ])
        #expect(taken.status == 14, "\(taken.stderr)")
        #expect(taken.stderr.contains("links.ndjson:2:"))
        let after = try await sandbox.run("db", "status", "--json")
        #expect(after.stdout == before.stdout, "the store is never written")
    }
}
