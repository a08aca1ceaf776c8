import Foundation
import Testing

/// App Store purchases over HTTP on both backends: a StoreKit 2 transaction the app sends and the App Store's
/// notifications, signed by the test's own chain and verified as Apple specifies; what does not verify is 401
/// and changes nothing; a notification applies once and never over a newer one.
@Suite("guestmode serve: App Store purchases and notifications")
struct PurchaseTests {
    static let now = "2026-11-01T10:05:00Z"

    /// A voice store served with the chain's root, the time fixed at `now`.
    private func serve(
        _ backend: ServerTests.Backend, chain: AppStoreChain, sandboxToo: Bool = false
    ) async throws
        -> (Sandbox, Server)
    {
        let sandbox = try await backend.sandbox("voice")
        sandbox.environment["GUESTMODE_NOW"] = Self.now
        try sandbox.write("root.pem", try chain.rootPEM())
        let server = try await Server.start(
            in: sandbox,
            options: ["--app-store-root-ca", "root.pem", "--app-store-bundle-id", AppStoreChain.bundleID]
                + (sandboxToo ? ["--app-store-sandbox"] : []))
        return (sandbox, server)
    }

    private func purchase(
        _ server: Server, _ user: String, _ token: String, _ jws: String
    ) async throws
        -> Server.Reply
    {
        try await server.request(
            "POST", "/v1/users/\(user)/purchases", token: token, body: #"{"signed_transaction":"\#(jws)"}"#)
    }

    private func notify(_ server: Server, _ jws: String) async throws -> Server.Reply {
        try await server.request("POST", "/v1/integrations/app-store", body: #"{"signedPayload":"\#(jws)"}"#)
    }

    private func plans(_ server: Server, _ user: String, _ token: String) async throws -> [String: Any] {
        let reply = try await server.request("GET", "/v1/users/\(user)/plans", token: token)
        #expect(reply.status == 200, "\(reply.body)")
        return reply.object
    }

    private func premium(_ document: [String: Any]) -> [String: Any]? {
        (document["plans"] as? [[String: Any]])?.first { $0["plan"] as? String == "premium" }
    }

    private func code(_ reply: Server.Reply) -> String? {
        (reply.object["error"] as? [String: Any])?["code"] as? String
    }

    @Test(
        "a signed transaction grants the plan; a forged, tampered, foreign, expired, other app's or non-ES256 one is 401 and changes nothing",
        arguments: ServerTests.Backend.allCases)
    func transactionFromTheApp(_ backend: ServerTests.Backend) async throws {
        let chain = try AppStoreChain()
        let (_, server) = try await serve(backend, chain: chain)
        let (buyer, buyerToken) = try await server.signIn()
        let (other, otherToken) = try await server.signIn()

        let bought = try await purchase(
            server, buyer, buyerToken, try chain.sign(AppStoreChain.transaction(user: buyer, freeTrial: true)))
        #expect(bought.status == 200, "\(bought.body)")
        #expect(bought.object["tier"] as? String == "premium")
        let plan = try #require(premium(bought.object))
        #expect(plan["state"] as? String == "trial")
        #expect(plan["ends_at"] as? String == "2026-12-01T10:00:00.000Z")
        #expect(plan["source"] as? String == "app_store")
        #expect(plan["source_id"] as? String == "2000000000000001")

        // Every attack on the other user's plan: 401, and the user still holds nothing.
        let valid = try chain.sign(AppStoreChain.transaction(id: "3", original: "3", user: other))
        let parts = valid.split(separator: ".").map(String.init)
        let richer = AppStoreChain.base64URL(
            try JSONSerialization.data(
                withJSONObject: AppStoreChain.transaction(
                    id: "3", original: "3", user: other, expires: "2036-12-01T10:00:00Z"), options: [.sortedKeys]))
        let elsewhere = try AppStoreChain()
        let expiredLeaf = try AppStoreChain(leafUntil: AppStoreChain.date("2026-06-01T00:00:00Z"))
        let attacks: [(String, String)] = [
            ("tampered payload", parts[0] + "." + richer + "." + parts[2]),
            (
                "chain to another root",
                try elsewhere.sign(AppStoreChain.transaction(id: "3", original: "3", user: other))
            ),
            ("expired leaf", try expiredLeaf.sign(AppStoreChain.transaction(id: "3", original: "3", user: other))),
            (
                "wrong bundle id",
                try chain.sign(
                    AppStoreChain.transaction(id: "3", original: "3", user: other, bundle: "com.example.other"))
            ),
            (
                "ES384 in the header",
                try chain.sign(AppStoreChain.transaction(id: "3", original: "3", user: other), alg: "ES384")
            ),
            ("alg none", AppStoreChain.base64URL(Data(#"{"alg":"none"}"#.utf8)) + "." + parts[1] + "."),
            ("not a JWS", "not-a-jws"),
        ]
        for (attack, jws) in attacks {
            let refused = try await purchase(server, other, otherToken, jws)
            #expect(refused.status == 401, "\(attack): \(refused.body)")
            #expect(code(refused) == "purchase_invalid", "\(attack): \(refused.body)")
        }
        let untouched = try await plans(server, other, otherToken)
        #expect((untouched["plans"] as? [Any])?.isEmpty == true, "\(untouched)")
        #expect(untouched["tier"] as? String == "guest")

        // Bought for someone else, in the Sandbox, with a member the route does not take.
        let mismatch = try await purchase(
            server, other, otherToken, try chain.sign(AppStoreChain.transaction(id: "4", original: "4", user: buyer)))
        #expect(mismatch.status == 409 && code(mismatch) == "purchase_user_mismatch", "\(mismatch.body)")
        let sandboxed = try await purchase(
            server, other, otherToken,
            try chain.sign(AppStoreChain.transaction(id: "5", original: "5", user: other, environment: "Sandbox")))
        #expect(sandboxed.status == 403 && code(sandboxed) == "store_environment_refused", "\(sandboxed.body)")
        let extra = try await server.request(
            "POST", "/v1/users/\(other)/purchases", token: otherToken,
            body: #"{"signed_transaction":"\#(valid)","plan":"premium"}"#)
        #expect(extra.status == 400, "\(extra.body)")
        // Another user's session cannot post to this user.
        let foreign = try await purchase(server, other, buyerToken, valid)
        #expect(foreign.status == 404, "\(foreign.body)")
        #expect((try await plans(server, other, otherToken))["tier"] as? String == "guest")

        // The genuine one is taken once; sending it again changes nothing.
        let taken = try await purchase(server, other, otherToken, valid)
        #expect(taken.status == 200, "\(taken.status): \(taken.body)")
        let again = try await purchase(server, other, otherToken, valid)
        #expect(again.status == 200 && again.object["tier"] as? String == "premium", "\(again.body)")
        #expect(try await server.stop() == 0)
    }

    @Test("without --app-store-root-ca both routes answer 404 app_store_not_configured")
    func notConfigured() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let server = try await Server.start(in: sandbox)
        let (user, token) = try await server.signIn()
        let purchase = try await server.request(
            "POST", "/v1/users/\(user)/purchases", token: token, body: #"{"signed_transaction":"x.y.z"}"#)
        #expect(purchase.status == 404 && code(purchase) == "app_store_not_configured", "\(purchase.body)")
        let notification = try await notify(server, "x.y.z")
        #expect(notification.status == 404 && code(notification) == "app_store_not_configured")
        #expect(try await server.stop() == 0)
    }

    @Test(
        "each notification type changes the plan as documented, once, never over a newer one; forged is 401",
        arguments: ServerTests.Backend.allCases)
    func notifications(_ backend: ServerTests.Backend) async throws {
        let chain = try AppStoreChain()
        let (sandbox, server) = try await serve(backend, chain: chain)
        let (user, token) = try await server.signIn()
        let subscription = "2000000000000777"
        func transaction(
            _ signed: String, expires: String = "2026-12-01T10:00:00Z", trial: Bool = false
        )
            -> [String: Any]
        {
            AppStoreChain.transaction(
                id: "7\(signed.filter(\.isNumber).suffix(6))", original: subscription, user: user, expires: expires,
                signed: signed, freeTrial: trial)
        }
        func renewal(_ signed: String, grace: String? = nil) -> [String: Any] {
            AppStoreChain.renewal(original: subscription, signed: signed, graceUntil: grace)
        }
        // (type, subtype, signed at, expires, grace until) → (outcome, state, ends_at)
        let steps: [(String, String?, String, String, String?, String, String, String?)] = [
            (
                "SUBSCRIBED", "INITIAL_BUY", "2026-11-01T10:00:00Z", "2026-12-01T10:00:00Z", nil,
                "applied", "trial", "2026-12-01T10:00:00.000Z"
            ),
            (
                "DID_RENEW", nil, "2026-11-01T10:00:10Z", "2027-01-01T10:00:00Z", nil,
                "applied", "active", "2027-01-01T10:00:00.000Z"
            ),
            (
                "RENEWAL_EXTENDED", nil, "2026-11-01T10:00:20Z", "2027-01-08T10:00:00Z", nil,
                "applied", "active", "2027-01-08T10:00:00.000Z"
            ),
            (
                "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", "2026-11-01T10:00:30Z", "2027-01-08T10:00:00Z", nil,
                "applied", "active", "2027-01-08T10:00:00.000Z"
            ),
            (
                "DID_FAIL_TO_RENEW", "GRACE_PERIOD", "2026-11-01T10:00:40Z", "2026-11-01T10:00:40Z",
                "2026-11-17T10:00:00Z", "applied", "active", "2026-11-17T10:00:00.000Z"
            ),
            (
                "GRACE_PERIOD_EXPIRED", nil, "2026-11-01T10:00:50Z", "2026-11-01T10:00:40Z", nil,
                "applied", "expired", "2026-11-01T10:05:00.000Z"
            ),
            (
                "SUBSCRIBED", "RESUBSCRIBE", "2026-11-01T10:01:00Z", "2026-12-01T10:01:00Z", nil,
                "applied", "active", "2026-12-01T10:01:00.000Z"
            ),
            (
                "DID_FAIL_TO_RENEW", nil, "2026-11-01T10:01:10Z", "2026-12-01T10:01:00Z", nil,
                "applied", "expired", "2026-11-01T10:05:00.000Z"
            ),
            (
                "DID_RENEW", "BILLING_RECOVERY", "2026-11-01T10:01:20Z", "2027-01-01T10:01:00Z", nil,
                "applied", "active", "2027-01-01T10:01:00.000Z"
            ),
            (
                "PRICE_INCREASE", "PENDING", "2026-11-01T10:01:25Z", "2027-01-01T10:01:00Z", nil,
                "acknowledged", "active", "2027-01-01T10:01:00.000Z"
            ),
            (
                "EXPIRED", "VOLUNTARY", "2026-11-01T10:01:30Z", "2027-01-01T10:01:00Z", nil,
                "applied", "expired", "2026-11-01T10:05:00.000Z"
            ),
            (
                "SUBSCRIBED", "RESUBSCRIBE", "2026-11-01T10:01:40Z", "2026-12-01T10:01:40Z", nil,
                "applied", "active", "2026-12-01T10:01:40.000Z"
            ),
            (
                "REFUND", nil, "2026-11-01T10:01:50Z", "2026-12-01T10:01:40Z", nil,
                "applied", "revoked", "2026-12-01T10:01:40.000Z"
            ),
            (
                "SUBSCRIBED", "RESUBSCRIBE", "2026-11-01T10:02:00Z", "2026-12-01T10:02:00Z", nil,
                "applied", "active", "2026-12-01T10:02:00.000Z"
            ),
            (
                "REVOKE", nil, "2026-11-01T10:02:10Z", "2026-12-01T10:02:00Z", nil,
                "applied", "revoked", "2026-12-01T10:02:00.000Z"
            ),
        ]
        var delivered: [String] = []
        for (index, step) in steps.enumerated() {
            let (type, subtype, signed, expires, grace, outcome, state, ends) = step
            let jws = try chain.notification(
                type, subtype: subtype, signed: signed,
                transaction: transaction(signed, expires: expires, trial: index == 0),
                renewal: renewal(signed, grace: grace))
            delivered.append(jws)
            let reply = try await notify(server, jws)
            #expect(reply.status == 200 && reply.object["outcome"] as? String == outcome, "\(type): \(reply.body)")
            let plan = premium(try await plans(server, user, token))
            #expect(plan?["state"] as? String == state, "\(type) \(subtype ?? ""): \(String(describing: plan))")
            #expect(plan?["ends_at"] as? String == ends, "\(type) \(subtype ?? ""): \(String(describing: plan))")
        }
        let before = try await plans(server, user, token)
        // The same notification again, and an older one after newer ones: nothing changes.
        #expect(try await notify(server, delivered[1]).object["outcome"] as? String == "duplicate")
        let older = try chain.notification(
            "DID_RENEW", signed: "2026-11-01T10:00:15Z",
            transaction: transaction("2026-11-01T10:00:15Z", expires: "2027-06-01T10:00:00Z"))
        #expect(try await notify(server, older).object["outcome"] as? String == "superseded")
        // Forged, tampered, another app's: 401.
        let forged = try AppStoreChain().notification(
            "DID_RENEW", signed: "2026-11-01T10:03:00Z",
            transaction: transaction("2026-11-01T10:03:00Z", expires: "2027-06-01T10:00:00Z"))
        #expect(try await notify(server, forged).status == 401)
        let inner = try AppStoreChain().sign(transaction("2026-11-01T10:03:00Z", expires: "2027-06-01T10:00:00Z"))
        let wrapped = try chain.sign([
            "notificationType": "DID_RENEW", "notificationUUID": UUID().uuidString.lowercased(), "version": "2.0",
            "signedDate": AppStoreChain.milliseconds("2026-11-01T10:03:00Z"),
            "data": ["bundleId": AppStoreChain.bundleID, "environment": "Production", "signedTransactionInfo": inner],
        ])
        #expect(try await notify(server, wrapped).status == 401, "an inner transaction of another chain")
        let parts = delivered[2].split(separator: ".").map(String.init)
        #expect(try await notify(server, parts[0] + "." + parts[1] + "x." + parts[2]).status == 401)
        let otherApp = try chain.notification(
            "DID_RENEW", signed: "2026-11-01T10:03:00Z",
            transaction: transaction("2026-11-01T10:03:00Z", expires: "2027-06-01T10:00:00Z"),
            bundle: "com.example.other")
        #expect(try await notify(server, otherApp).status == 401)
        let after = try await plans(server, user, token)
        #expect(NSDictionary(dictionary: after) == NSDictionary(dictionary: before))

        // Nobody known: 200, nothing changes; a notification without a transaction is acknowledged.
        let stranger = try chain.notification(
            "SUBSCRIBED", subtype: "INITIAL_BUY", signed: "2026-11-01T10:03:00Z",
            transaction: AppStoreChain.transaction(
                id: "9", original: "9", user: UUID().uuidString.lowercased(), signed: "2026-11-01T10:03:00Z"))
        #expect(try await notify(server, stranger).object["outcome"] as? String == "unknown_user")
        let test = try chain.sign([
            "notificationType": "TEST", "notificationUUID": UUID().uuidString.lowercased(), "version": "2.0",
            "signedDate": AppStoreChain.milliseconds("2026-11-01T10:03:00Z"),
            "data": ["bundleId": AppStoreChain.bundleID, "environment": "Production"],
        ])
        #expect(try await notify(server, test).object["outcome"] as? String == "acknowledged")
        #expect(try await server.stop() == 0)
        // Each verified notification is on its access line with Apple's ids and the outcome, never its payload.
        let log = try String(contentsOfFile: sandbox.path("serve.log"), encoding: .utf8)
        #expect(log.contains(#""outcome":"unknown_user""#) && log.contains(#""notification_type":"TEST""#), "\(log)")
        #expect(log.contains(#""notification_subtype":"GRACE_PERIOD""#), "\(log)")
        #expect(!log.contains(String(delivered[0].prefix(40))) && !log.contains(user), "\(log)")
    }

    @Test(
        "the voice journey: 45 minutes, the warning, the paywall, premium bought in the app, allowed, EXPIRED, refused again",
        arguments: ServerTests.Backend.allCases)
    func voiceJourney(_ backend: ServerTests.Backend) async throws {
        let chain = try AppStoreChain()
        let (_, server) = try await serve(backend, chain: chain)
        let (guest, token) = try await server.signIn()
        let used = try await server.request(
            "POST", "/v1/users/\(guest)/meters/api_minutes/use", token: token, body: #"{"amount":45}"#)
        #expect(used.status == 200, "\(used.body)")
        #expect((used.object["status"] as? [String: Any])?["level"] as? String == "warning", "\(used.body)")
        let paywall = try await server.request(
            "GET", "/v1/users/\(guest)/meters/api_minutes/check?amount=30", token: token)
        #expect(paywall.status == 402 && code(paywall) == "meter_exhausted", "\(paywall.body)")

        let bought = try await purchase(
            server, guest, token,
            try chain.sign(AppStoreChain.transaction(original: "2000000000000042", user: guest, freeTrial: true)))
        #expect(bought.status == 200 && bought.object["tier"] as? String == "premium", "\(bought.body)")
        let allowed = try await server.request(
            "GET", "/v1/users/\(guest)/meters/api_minutes/check?amount=30", token: token)
        #expect(allowed.status == 200, "\(allowed.body)")

        // The App Store's EXPIRED names the subscription, not the user: the user is found by it.
        let expired = try chain.notification(
            "EXPIRED", subtype: "VOLUNTARY", signed: "2026-11-01T10:04:00Z",
            transaction: AppStoreChain.transaction(
                original: "2000000000000042", user: nil, signed: "2026-11-01T10:04:00Z"))
        #expect(try await notify(server, expired).object["outcome"] as? String == "applied")
        let refused = try await server.request(
            "GET", "/v1/users/\(guest)/meters/api_minutes/check?amount=30", token: token)
        #expect(refused.status == 402 && code(refused) == "meter_exhausted", "\(refused.body)")
        #expect(try await server.stop() == 0)
    }
}
