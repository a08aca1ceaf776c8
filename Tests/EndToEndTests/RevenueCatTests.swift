import Foundation
import Testing

/// RevenueCat's webhooks end to end: `guestmode serve --revenuecat-authorization-file` on loopback, curl
/// as RevenueCat, and the binary reading the plans back, on both backends.
@Suite("RevenueCat webhooks and plan import")
struct RevenueCatTests {
    /// What RevenueCat's dashboard would hold as the Authorization header value.
    static let authorization = "Bearer rc-7f3e9a1c-webhook"
    /// 2026-11-01T10:00:00Z, the sandbox's clock; events are timed from it.
    static let start: Int64 = 1_793_527_200_000
    static let day: Int64 = 86_400_000

    /// A voice store (its premium plan is RevenueCat's `premium` entitlement) at `start`, with the
    /// Authorization value in ./revenuecat.secret.
    static func store(_ backend: String) async throws -> Sandbox {
        let sandbox = backend == "sqlite" ? try Sandbox() : try Sandbox.onPostgres()
        try sandbox.write("revenuecat.secret", authorization + "\n")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let created = try await sandbox.run("init", "--profile", "voice")
        #expect(created.status == 0, "init failed: \(created.stderr)")
        return sandbox
    }

    static func serve(_ sandbox: Sandbox, _ extra: [String] = []) async throws -> Server {
        try await Server.start(
            in: sandbox, options: ["--revenuecat-authorization-file", "revenuecat.secret"] + extra)
    }

    /// One webhook body as RevenueCat documents it, with a member it adds without notice.
    static func event(
        _ type: String, id: String = UUID().uuidString, user: String, at offset: Int64, expires: Int64? = nil,
        transaction: String = "2000000000000001", extra: [String: Any] = [:]
    ) throws -> String {
        var event: [String: Any] = [
            "id": id, "type": type, "app_user_id": user, "original_app_user_id": "$RCAnonymousID:87c6049c58",
            "aliases": ["$RCAnonymousID:87c6049c58", user], "entitlement_ids": ["premium"],
            "entitlement_id": NSNull(), "product_id": "voice_premium_monthly", "period_type": "NORMAL",
            "purchased_at_ms": start + offset, "event_timestamp_ms": start + offset,
            "environment": "PRODUCTION", "original_transaction_id": transaction,
            "transaction_id": "\(transaction)-\(offset)", "store": "APP_STORE", "price": 4.99,
            "subscriber_attributes": ["$email": ["value": "a@example.com", "updated_at_ms": start]],
        ]
        if let expires { event["expiration_at_ms"] = start + expires }
        for (key, value) in extra { event[key] = value }
        let body: [String: Any] = ["api_version": "1.0", "event": event]
        let data = try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }

    static func post(
        _ server: Server, _ body: String, authorization: String? = Self.authorization
    ) async throws
        -> Server.Reply
    {
        try await server.request(
            "POST", "/v1/integrations/revenuecat", body: body,
            headers: authorization.map { ["Authorization": $0] } ?? [:])
    }

    /// The user's premium plan as `plan status --json` prints it; empty when the user never held it.
    static func premium(_ sandbox: Sandbox, _ user: String) async throws -> [String: Any] {
        let status = try await sandbox.run("plan", "status", user, "--json")
        let plans = status.object["plans"] as? [[String: Any]] ?? []
        return plans.first { $0["plan"] as? String == "premium" } ?? [:]
    }

    static func time(_ offset: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: Double(start + offset) / 1000))
    }

    @Test("each event type changes the plan as guestmode-plan(1) says", arguments: ["sqlite", "postgres"])
    func eachType(backend: String) async throws {
        let sandbox = try await Self.store(backend)
        let user = try await sandbox.newGuest()
        let server = try await Self.serve(sandbox)
        func send(_ body: String, _ outcome: String, sourceLocation: SourceLocation = #_sourceLocation) async throws {
            let reply = try await Self.post(server, body)
            #expect(reply.status == 200, "\(reply.body)", sourceLocation: sourceLocation)
            #expect(reply.object["outcome"] as? String == outcome, "\(reply.body)", sourceLocation: sourceLocation)
        }
        func expectPremium(
            _ state: String, ends: Int64?, sourceLocation: SourceLocation = #_sourceLocation
        ) async throws {
            let plan = try await Self.premium(sandbox, user)
            #expect(plan["state"] as? String == state, "\(plan)", sourceLocation: sourceLocation)
            if let ends {
                #expect(plan["ends_at"] as? String == Self.time(ends), "\(plan)", sourceLocation: sourceLocation)
            }
        }
        let month = 30 * Self.day
        try await send(
            try Self.event("INITIAL_PURCHASE", user: user, at: 0, expires: month, extra: ["period_type": "TRIAL"]),
            "applied")
        try await expectPremium("trial", ends: month)
        try await send(try Self.event("RENEWAL", user: user, at: 1000, expires: 2 * month), "applied")
        try await expectPremium("active", ends: 2 * month)
        try await send(try Self.event("PRODUCT_CHANGE", user: user, at: 2000, expires: 2 * month), "applied")
        try await expectPremium("active", ends: 2 * month)
        // Cancelled, but paid until its end: still in force until then.
        try await send(
            try Self.event(
                "CANCELLATION", user: user, at: 3000, expires: 2 * month, extra: ["cancel_reason": "UNSUBSCRIBE"]),
            "applied")
        try await expectPremium("active", ends: 2 * month)
        try await send(try Self.event("UNCANCELLATION", user: user, at: 4000, expires: 2 * month), "applied")
        try await expectPremium("active", ends: 2 * month)
        try await send(try Self.event("SUBSCRIPTION_EXTENDED", user: user, at: 5000, expires: 3 * month), "applied")
        try await expectPremium("active", ends: 3 * month)
        try await send(
            try Self.event(
                "BILLING_ISSUE", user: user, at: 6000, expires: 3 * month,
                extra: ["grace_period_expiration_at_ms": Self.start + 3 * month + 16 * Self.day]),
            "applied")
        try await expectPremium("active", ends: 3 * month + 16 * Self.day)
        // Without a grace period the plan keeps its end.
        try await send(try Self.event("BILLING_ISSUE", user: user, at: 7000, expires: 3 * month), "ignored")
        try await expectPremium("active", ends: 3 * month + 16 * Self.day)
        try await send(try Self.event("TEST", user: user, at: 7500), "ignored")
        try await expectPremium("active", ends: 3 * month + 16 * Self.day)
        try await send(try Self.event("EXPIRATION", user: user, at: 8000, expires: 8000), "applied")
        try await expectPremium("expired", ends: nil)
        #expect(try await sandbox.run("plan", "status", user, "--json").object["tier"] as? String == "guest")
        // A lifetime purchase, then its refund.
        try await send(
            try Self.event("NON_RENEWING_PURCHASE", user: user, at: 9000, transaction: "2000000000000009"), "applied")
        try await expectPremium("active", ends: nil)
        #expect(try await Self.premium(sandbox, user)["ends_at"] is NSNull)
        try await send(
            try Self.event(
                "CANCELLATION", user: user, at: 10000, expires: 10000, transaction: "2000000000000009",
                extra: ["cancel_reason": "CUSTOMER_SUPPORT"]),
            "applied")
        try await expectPremium("revoked", ends: nil)
        // A type RevenueCat added later is acknowledged, so RevenueCat does not retry it.
        try await send(try Self.event("SUBSCRIPTION_PAUSED", user: user, at: 11000), "ignored")
        #expect(try await server.stop() == 0)
        // Each event is on its access line with RevenueCat's type and id and the outcome, never its body.
        let log = String(decoding: try sandbox.read("serve.log"), as: UTF8.self)
        #expect(
            log.contains(#""event_type":"SUBSCRIPTION_EXTENDED""#) && log.contains(#""outcome":"applied""#), "\(log)")
        #expect(!log.contains(user) && !log.contains("rc-7f3e9a1c"), "\(log)")
    }

    @Test(
        "a missing or wrong Authorization is 401 and changes nothing; so is a body of the wrong types",
        arguments: ["sqlite", "postgres"])
    func authorization(backend: String) async throws {
        let sandbox = try await Self.store(backend)
        let user = try await sandbox.newGuest()
        let server = try await Self.serve(sandbox)
        let body = try Self.event("INITIAL_PURCHASE", user: user, at: 0, expires: 30 * Self.day)
        for header in [nil, "Bearer rc-7f3e9a1c-webhoo", "Bearer rc-7f3e9a1c-webhook2", "rc-7f3e9a1c-webhook", ""] {
            let reply = try await Self.post(server, body, authorization: header)
            #expect(reply.status == 401, "\(header ?? "none"): \(reply.body)")
            #expect((reply.object["error"] as? [String: Any])?["code"] as? String == "unauthorized")
        }
        let wrongType = try Self.event(
            "INITIAL_PURCHASE", user: user, at: 0, extra: ["expiration_at_ms": "1796205600000"])
        let refused = try await Self.post(server, wrongType)
        #expect(refused.status == 422, "\(refused.body)")
        #expect(refused.body.contains("'event.expiration_at_ms' must be a number of milliseconds, not a string"))
        #expect(try await Self.premium(sandbox, user).isEmpty)
        // The secret is in no log line.
        #expect(try await server.stop() == 0)
        let log = String(decoding: try sandbox.read("serve.log"), as: UTF8.self)
        #expect(!log.contains("rc-7f3e9a1c"))
        // A server without the setting answers the route 404 revenuecat_not_configured.
        let plain = try await Server.start(in: sandbox)
        let unconfigured = try await Self.post(plain, body)
        #expect(unconfigured.status == 404, "\(unconfigured.body)")
        #expect(unconfigured.body.contains("revenuecat_not_configured"))
        #expect(try await plain.stop() == 0)
        #expect(try await Self.premium(sandbox, user).isEmpty)
    }

    @Test(
        "a TRANSFER moves the plan from one user to another and the meter gate follows",
        arguments: ["sqlite", "postgres"])
    func transfer(backend: String) async throws {
        let sandbox = try await Self.store(backend)
        let first = try await sandbox.newGuest()
        let second = try await sandbox.newGuest()
        for user in [first, second] {
            #expect(try await sandbox.run("meter", "use", user, "api_minutes", "60").status == 0)
            #expect(try await sandbox.run("meter", "check", user, "api_minutes", "10").status == 12)
        }
        let server = try await Self.serve(sandbox)
        let bought = try await Self.post(
            server, try Self.event("INITIAL_PURCHASE", user: first, at: 0, expires: 30 * Self.day))
        #expect(bought.object["outcome"] as? String == "applied", "\(bought.body)")
        #expect(try await sandbox.run("meter", "check", first, "api_minutes", "10").status == 0)
        #expect(try await sandbox.run("meter", "check", second, "api_minutes", "10").status == 12)
        let transfer = try JSONSerialization.data(withJSONObject: [
            "api_version": "1.0",
            "event": [
                "id": "CD489E0E-5D52-4E03-966B-A7F17788E432", "type": "TRANSFER", "store": "APP_STORE",
                "app_id": "1234567890", "event_timestamp_ms": Self.start + 60_000, "environment": "PRODUCTION",
                "transferred_from": ["$RCAnonymousID:0001", first], "transferred_to": [second],
            ],
        ])
        let moved = try await Self.post(server, String(decoding: transfer, as: UTF8.self))
        #expect(moved.status == 200, "\(moved.body)")
        #expect(moved.object["outcome"] as? String == "applied", "\(moved.body)")
        #expect(moved.object["user_id"] as? String == second, "\(moved.body)")
        #expect(try await sandbox.run("meter", "check", first, "api_minutes", "10").status == 12)
        #expect(try await sandbox.run("meter", "check", second, "api_minutes", "10").status == 0)
        #expect(try await Self.premium(sandbox, second)["ends_at"] as? String == Self.time(30 * Self.day))
        // Delivered again, it changes nothing.
        let again = try await Self.post(server, String(decoding: transfer, as: UTF8.self))
        #expect(again.object["outcome"] as? String == "duplicate", "\(again.body)")
        #expect(try await sandbox.run("meter", "check", second, "api_minutes", "10").status == 0)
        #expect(try await server.stop() == 0)
    }

    @Test(
        "the same event twice, or an older one after a newer one, changes nothing the second time",
        arguments: ["sqlite", "postgres"])
    func retriesAndReordering(backend: String) async throws {
        let sandbox = try await Self.store(backend)
        let user = try await sandbox.newGuest()
        let server = try await Self.serve(sandbox)
        let month = 30 * Self.day
        let purchase = try Self.event("INITIAL_PURCHASE", id: "evt-1", user: user, at: 0, expires: month)
        #expect(try await Self.post(server, purchase).object["outcome"] as? String == "applied")
        let first = try await Self.premium(sandbox, user)
        let repeated = try await Self.post(server, purchase)
        #expect(repeated.status == 200)
        #expect(repeated.object["outcome"] as? String == "duplicate", "\(repeated.body)")
        #expect(try await Self.premium(sandbox, user) as NSDictionary == first as NSDictionary)
        let renewal = try Self.event("RENEWAL", id: "evt-3", user: user, at: 20_000, expires: 2 * month)
        #expect(try await Self.post(server, renewal).object["outcome"] as? String == "applied")
        // Delivered late: an expiration and a renewal older than the renewal applied.
        for late in [
            try Self.event("EXPIRATION", id: "evt-2", user: user, at: 10_000, expires: 10_000),
            try Self.event("RENEWAL", id: "evt-2b", user: user, at: 15_000, expires: 5 * Self.day),
        ] {
            let reply = try await Self.post(server, late)
            #expect(reply.status == 200)
            #expect(reply.object["outcome"] as? String == "superseded", "\(reply.body)")
        }
        let plan = try await Self.premium(sandbox, user)
        #expect(plan["state"] as? String == "active", "\(plan)")
        #expect(plan["ends_at"] as? String == Self.time(2 * month), "\(plan)")
        // An event for nobody here is answered 200, so RevenueCat does not retry it.
        let stranger = try await Self.post(
            server,
            try Self.event(
                "INITIAL_PURCHASE", user: "not-a-guestmode-user", at: 0, expires: month,
                transaction: "2000000000000777"))
        #expect(stranger.status == 200)
        #expect(stranger.object["outcome"] as? String == "unknown_user", "\(stranger.body)")
        #expect(try await server.stop() == 0)
    }

    @Test(
        "a SANDBOX event is ignored unless the server or the import is told to take it",
        arguments: ["sqlite", "postgres"])
    func sandboxEvents(backend: String) async throws {
        let sandbox = try await Self.store(backend)
        let user = try await sandbox.newGuest()
        let body = try Self.event(
            "INITIAL_PURCHASE", user: user, at: 0, expires: 30 * Self.day, extra: ["environment": "SANDBOX"])
        let server = try await Self.serve(sandbox)
        let ignored = try await Self.post(server, body)
        #expect(ignored.status == 200)
        #expect(ignored.object["outcome"] as? String == "ignored", "\(ignored.body)")
        #expect(try await server.stop() == 0)
        #expect(try await Self.premium(sandbox, user).isEmpty)
        try sandbox.write("sandbox.ndjson", body + "\n")
        let skipped = try await sandbox.run("plan", "import", "--from", "sandbox.ndjson", "--format", "revenuecat")
        #expect(skipped.status == 0, "\(skipped.stderr)")
        #expect(skipped.stdout.contains("ignored"), "\(skipped.stdout)")
        #expect(try await Self.premium(sandbox, user).isEmpty)
        let taking = try await Self.serve(sandbox, ["--revenuecat-sandbox"])
        let applied = try await Self.post(taking, body)
        #expect(applied.object["outcome"] as? String == "applied", "\(applied.body)")
        #expect(try await taking.stop() == 0)
        #expect(try await Self.premium(sandbox, user)["state"] as? String == "active")
        // The import finds it applied: the same event id, whichever way it came.
        let imported = try await sandbox.run(
            "plan", "import", "--from", "sandbox.ndjson", "--format", "revenuecat", "--sandbox", "--json")
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.object["duplicate"] as? Int == 1, "\(imported.stdout)")
    }

    @Test(
        "plan import: a bad line is named with its line number and nothing is applied",
        arguments: ["sqlite", "postgres"])
    func importFile(backend: String) async throws {
        let sandbox = try await Self.store(backend)
        let user = try await sandbox.newGuest()
        let month = 30 * Self.day
        let lines = [
            try Self.event("INITIAL_PURCHASE", id: "imp-1", user: user, at: 0, expires: month),
            try Self.event("RENEWAL", id: "imp-2", user: user, at: 5000, extra: ["expiration_at_ms": "soon"]),
            "",
            try Self.event("RENEWAL", id: "imp-3", user: user, at: 9000, expires: 2 * month),
            try Self.event(
                "RENEWAL", id: "imp-4", user: "someone-else", at: 9500, expires: 2 * month,
                transaction: "2000000000000555"),
        ]
        try sandbox.write("events.ndjson", lines.joined(separator: "\n") + "\n")
        let refused = try await sandbox.run("plan", "import", "--from", "events.ndjson", "--format", "revenuecat")
        #expect(refused.status == 65, "\(refused.stdout)\(refused.stderr)")
        #expect(
            refused.stderr.contains(
                "events.ndjson:2: 'event.expiration_at_ms' must be a number of milliseconds, not a string"),
            "\(refused.stderr)")
        #expect(refused.stderr.contains("nothing was applied"), "\(refused.stderr)")
        #expect(try await Self.premium(sandbox, user).isEmpty)
        let json = try await sandbox.run(
            "plan", "import", "--from", "events.ndjson", "--format", "revenuecat", "--json")
        #expect(json.status == 65)
        #expect(json.stdout.isEmpty)
        #expect(json.errorDocument.contains("invalid_import_file"), "\(json.stderr)")

        let skipped = try await sandbox.run(
            "plan", "import", "--from", "events.ndjson", "--format", "revenuecat", "--skip-invalid", "--json")
        #expect(skipped.status == 0, "\(skipped.stderr)")
        #expect(skipped.object["applied"] as? Int == 2, "\(skipped.stdout)")
        #expect(skipped.object["unknown_user"] as? Int == 1, "\(skipped.stdout)")
        #expect(skipped.object["invalid"] as? Int == 1, "\(skipped.stdout)")
        let problems = skipped.object["problems"] as? [[String: Any]] ?? []
        #expect(problems.first?["line"] as? Int == 2, "\(problems)")
        #expect(try await Self.premium(sandbox, user)["ends_at"] as? String == Self.time(2 * month))
        // Replayed: every line already applied.
        let replayed = try await sandbox.run(
            "plan", "import", "--from", "-", "--format", "revenuecat", input: lines[0] + "\n" + lines[3] + "\n")
        #expect(replayed.status == 0, "\(replayed.stderr)")
        #expect(replayed.stdout.contains("2 lines: 0 applied, 2 duplicate"), "\(replayed.stdout)")
        #expect(replayed.stdout.contains("<stdin>:1: INITIAL_PURCHASE imp-1 duplicate"), "\(replayed.stdout)")
        let missing = try await sandbox.run("plan", "import", "--from", "nope.ndjson", "--format", "revenuecat")
        #expect(missing.status == 66, "\(missing.stderr)")
    }
}
