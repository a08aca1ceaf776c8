import Foundation
import Testing

/// A habits store whose profile sends every event type to a receiver on
/// loopback at `port`, with the secret in ./hook.secret.
private func webhookStore(port: Int, profile: String = "habits") async throws -> Sandbox {
    let sandbox = try Sandbox()
    try await sandbox.initialise(profile, sendingEventsTo: port)
    return sandbox
}

/// The same with its receiver started first, on a port it bound itself (`down`: held without listening
/// until `bringReceiverUp()`), so no other process can take the port before the receiver has it.
private func webhookStoreWithReceiver(down: Bool = false) async throws -> (Sandbox, Receiver) {
    let sandbox = try Sandbox()
    let receiver = try await sandbox.startReceiver(down: down)
    try await sandbox.initialise("habits", sendingEventsTo: receiver.port)
    return (sandbox, receiver)
}

@Suite("Webhooks end to end: a receiver on loopback")
struct WebhookTests {
    /// Down, then timing out, then 500, then recovering: every event arrives, with one id and one body
    /// on every attempt, and every signature verifies with Python's hmac.
    @Test func everyEventArrivesThroughOutagesWithItsIdAndAValidSignature() async throws {
        let clockStart = Date()
        let (sandbox, receiver) = try await webhookStoreWithReceiver(down: true)
        defer { receiver.stop() }
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-25T10:00:00Z"
        var users: [String] = []
        for index in 1...3 {
            let user = try await sandbox.newGuest()
            users.append(user)
            #expect(try await sandbox.run("link", user, "--provider", "apple", "--subject", "s-\(index)").status == 0)
        }
        #expect(try await sandbox.run("plan", "grant", users[0], "premium").status == 0)
        #expect(try await sandbox.run("prompt", "record", users[1], "protect_streak", "dismissed").status == 0)
        #expect(try await sandbox.run("user", "delete", users[2], "--yes").status == 0)
        #expect(try await sandbox.run("backup", "push", "--to", sandbox.path(".")).status == 0)
        // Changes rolled back write nothing: a merge into an account that does not exist, a second link.
        let before = try await sandbox.outbox().count
        #expect(try await sandbox.run("merge", users[0], "--into", "nobody", "--policy", "union").status == 66)
        #expect(try await sandbox.run("plan", "revoke", users[1], "premium").status == 66)
        #expect(try await sandbox.outbox().count == before)
        let events = try await sandbox.outbox()
        #expect(
            Set(events.map(\.type)).isSuperset(of: [
                "account_upgrade.started", "account_upgrade.succeeded", "identity.linked", "plan.granted",
                "prompt.outcome", "user.deleted", "backup.pushed",
            ]), "\(events.map(\.type))")

        func deliver(_ minute: Int, expecting status: Int32) async throws {
            let result = try await sandbox.run(
                arguments: ["webhook", "deliver", "--timeout", "1", "--json"],
                environment: ["GUESTMODE_NOW": "2026-11-25T10:\(String(format: "%02d", minute)):00Z"])
            #expect(result.status == status, "minute \(minute): \(result.stdout)\(result.stderr)")
        }
        // Down: nothing listens; each user's oldest event fails and waits (backoff), nothing is lost.
        try await deliver(1, expecting: 75)
        let afterDown = try await sandbox.run("webhook", "list", "--json")
        let queue = try #require((afterDown.json as? [[String: Any]])?.first)
        #expect(queue["pending"] as? Int == events.count && queue["delivered"] as? Int == 0)
        try await deliver(1, expecting: 0)  // Nothing is due before the retry time: nothing is sent, nothing fails.
        try await sandbox.bringReceiverUp()
        for (minute, mode) in [(5, "timeout"), (10, "500"), (20, "redirect")] {
            try sandbox.write("receiver.mode", mode)
            try await deliver(minute, expecting: 75)
        }
        try sandbox.write("receiver.mode", "ok")
        try await deliver(40, expecting: 0)
        try await deliver(41, expecting: 0)

        let received = try sandbox.received()
        let outbox = try await sandbox.outbox()
        #expect(outbox.allSatisfy { $0.status == "delivered" }, "\(outbox)")
        let accepted = Set(received.filter { $0.status == 200 && $0.mode == "ok" }.map(\.id))
        #expect(accepted == Set(outbox.map(\.id)), "every event arrives")
        #expect(received.allSatisfy { $0.isVerified }, "every signature verifies with Python's hmac")
        #expect(received.allSatisfy { $0.id == $0.headerID })
        for (id, attempts) in Dictionary(grouping: received, by: \.id) {
            #expect(Set(attempts.map(\.bodySHA256)).count == 1, "event \(id) was sent with different bodies")
        }
        let failedModes = Set(received.filter { $0.mode != "ok" }.map(\.mode))
        #expect(failedModes == ["timeout", "500", "redirect"])
        // The delivery figures of this run, for the record.
        let byMode = Dictionary(grouping: received, by: \.mode).mapValues(\.count)
        print(
            "webhook fault test: \(outbox.count) events, \(received.count) requests received (\(byMode)), \(received.count - accepted.count) retried, \(String(format: "%.1f", Date().timeIntervalSince(clockStart))) s"
        )
    }

    /// `webhook deliver` killed with SIGKILL at random points loses no event; duplicates keep their id.
    @Test func aKilledDeliveryLosesNoEvent() async throws {
        let (sandbox, receiver) = try await webhookStoreWithReceiver()
        defer { receiver.stop() }
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-25T10:00:00Z"
        var log: [String] = []
        for _ in 1...3 {
            let user = try await sandbox.newGuest()
            for minute in 0..<15 {
                let outcome = ["shown", "dismissed", "later"][minute % 3]
                log.append(
                    #"{"user":"\#(user)","context":"protect_streak","outcome":"\#(outcome)","at":"2026-11-25T09:\#(String(format: "%02d", minute)):00Z"}"#
                )
            }
        }
        try sandbox.write("outcomes.ndjson", log.joined(separator: "\n") + "\n")
        #expect(try await sandbox.run("prompt", "record", "--from", "outcomes.ndjson").status == 0)
        #expect(try await sandbox.outbox().count == 45)
        try sandbox.write("receiver.mode", "slow")
        // Deterministic pauses, so a failure replays.
        let killed = try await sandbox.shell(
            """
            for pause in 0.05 0.31 0.12 0.43 0.08 0.27 0.19 0.36; do
                '\(Sandbox.binary.path)' webhook deliver --timeout 2 >/dev/null 2>&1 &
                pid=$!
                sleep $pause
                kill -9 $pid 2>/dev/null
                wait $pid 2>/dev/null
            done
            true
            """)
        #expect(killed.status == 0)
        let final = try await sandbox.run("webhook", "deliver", "--timeout", "2")
        #expect(final.status == 0, "\(final.stdout)\(final.stderr)")
        let outbox = try await sandbox.outbox()
        #expect(outbox.allSatisfy { $0.status == "delivered" })
        let received = try sandbox.received()
        #expect(Set(received.map(\.id)) == Set(outbox.map(\.id)), "no event lost")
        #expect(received.allSatisfy { $0.isVerified })
        for (id, attempts) in Dictionary(grouping: received, by: \.id) {
            #expect(Set(attempts.map(\.bodySHA256)).count == 1, "event \(id) changed between attempts")
        }
        // Per user, the first arrival of each event follows the events' order.
        var firstSeen: [String] = []
        for entry in received where !firstSeen.contains(entry.id) { firstSeen.append(entry.id) }
        for user in Set(received.map(\.userID)) {
            let order = outbox.map(\.id).filter { id in received.contains { $0.id == id && $0.userID == user } }
            #expect(firstSeen.filter { order.contains($0) } == order, "user \(user)'s events out of order")
        }
        print(
            "webhook kill test: \(outbox.count) events, \(received.count) requests, \(received.count - outbox.count) duplicates"
        )
    }

    /// A refused cap writes only its refusal (`limit.refused`), never the record's change.
    @Test func aRefusedCapSendsOnlyItsRefusal() async throws {
        let sandbox = try await webhookStore(port: 9, profile: "subscriptions")
        let user = try await sandbox.newGuest()
        for index in 1...5 {
            #expect(
                try await sandbox.run("record", "put", user, "subscriptions", "s\(index)", "--data", "{}").status == 0)
        }
        let before = try await sandbox.outbox()
        #expect(try await sandbox.run("record", "put", user, "subscriptions", "s6", "--data", "{}").status == 10)
        let after = try await sandbox.outbox()
        #expect(after.count == before.count + 1 && after.last?.type == "limit.refused")
    }

    /// `guestmode serve` delivers in the background, within seconds of the change.
    @Test func serveDeliversInTheBackground() async throws {
        let (sandbox, receiver) = try await webhookStoreWithReceiver()
        defer { receiver.stop() }
        // One script: the server is stopped (and waited for) by the shell that started it.
        let gm = Sandbox.binary.path
        let waited = try await sandbox.shell(
            """
            '\(gm)' serve --listen 127.0.0.1:0 >serve.out 2>serve.err </dev/null &
            server=$!
            until grep -q listening serve.out; do sleep 0.1; done
            user=$('\(gm)' guest new -q)
            '\(gm)' link "$user" --provider apple --subject s-1 >/dev/null
            for i in $(seq 100); do
                [ "$(grep -c identity.linked received.ndjson 2>/dev/null)" = 1 ] && break
                sleep 0.1
            done
            kill -TERM $server && wait $server
            grep -c '"status": 200' received.ndjson
            """)
        #expect(
            waited.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "3", "\(waited.stdout)\(waited.stderr)")
        #expect(try await sandbox.outbox().allSatisfy { $0.status == "delivered" })
    }
}
