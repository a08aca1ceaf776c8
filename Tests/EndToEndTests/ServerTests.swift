import Foundation
import Testing

/// `guestmode serve` as an app meets it: the built binary listening on
/// 127.0.0.1 and a free port, spoken to with curl, on both backends.
@Suite("guestmode serve over HTTP")
struct ServerTests {
    enum Backend: String, CaseIterable, CustomTestStringConvertible {
        case sqlite, postgres
        var testDescription: String { rawValue }

        func sandbox(_ profile: String) async throws -> Sandbox {
            switch self {
            case .sqlite: try await Sandbox.withStore(profile)
            case .postgres: try await Sandbox.withPostgresStore(profile)
            }
        }
    }

    @Test(
        "a guest's journey: sign in, records to the cap, the refusal and its prompt, the rest of the routes",
        arguments: Backend.allCases)
    func guestJourney(_ backend: Backend) async throws {
        let sandbox = try await backend.sandbox("subscriptions")
        let server = try await Server.start(in: sandbox)
        let created = try await server.request("POST", "/v1/guests", body: #"{"device":"phone-1"}"#)
        #expect(created.status == 201, "\(created.body)")
        let guest = try #require(created.object["user_id"] as? String)
        let token = try #require(created.object["access_token"] as? String)
        #expect(created.object["new"] as? Bool == true)
        #expect(created.object["token_type"] as? String == "bearer")
        #expect(created.object["expires_in"] as? Int == 3600)
        #expect((created.object["refresh_token"] as? String)?.isEmpty == false)

        // A device id is no credential: the same device signing in again is a new guest, never the first.
        let again = try await server.request("POST", "/v1/guests", body: #"{"device":"phone-1"}"#)
        #expect(again.status == 201)
        #expect(again.object["user_id"] as? String != guest)
        #expect(again.object["new"] as? Bool == true)

        for index in 1...5 {
            let put = try await server.request(
                "PUT", "/v1/users/\(guest)/records/subscriptions/s\(index)", token: token, body: #"{"cost":\#(index)}"#)
            #expect(put.status == 201, "\(put.body)")
        }
        let replaced = try await server.request(
            "PUT", "/v1/users/\(guest)/records/subscriptions/s1", token: token, body: #"{"cost":9}"#)
        #expect(replaced.status == 200)
        #expect(replaced.object["replacement"] as? Bool == true)

        let refused = try await server.request(
            "PUT", "/v1/users/\(guest)/records/subscriptions/s6", token: token, body: "{}")
        #expect(refused.status == 403, "\(refused.body)")
        let error = try #require(refused.object["error"] as? [String: Any])
        #expect(error["code"] as? String == "needs_account")
        #expect((error["message"] as? String)?.contains("5/5 subscriptions") == true)
        let prompt = try #require(error["prompt"] as? [String: Any], "the refusal names the prompt it raised")
        #expect(prompt["context"] as? String == "guest_cap_reached")
        #expect((refused.object["result"] as? [String: Any])?["outcome"] as? String == "needs-account")

        let next = try await server.request(
            "GET", "/v1/users/\(guest)/prompts/next?trigger=guest_cap_refused", token: token)
        #expect(next.status == 200)
        #expect(next.object["context"] as? String == "guest_cap_reached")

        let record = try await server.request("GET", "/v1/users/\(guest)/records/subscriptions/s1", token: token)
        #expect(record.status == 200)
        // The object PUT took, not a string holding it.
        #expect((record.object["data"] as? [String: Any])?["cost"] as? Int == 9)
        #expect(record.body.contains(#""data" : {"#), "\(record.body)")
        let list = try await server.request("GET", "/v1/users/\(guest)/records/subscriptions", token: token)
        #expect(list.array.count == 5)
        let deleted = try await server.request("DELETE", "/v1/users/\(guest)/records/subscriptions/s5", token: token)
        #expect(deleted.status == 200)
        #expect(deleted.object["deleted"] as? Bool == true)
        let missing = try await server.request("GET", "/v1/users/\(guest)/records/subscriptions/s5", token: token)
        #expect(missing.status == 404)
        #expect((missing.object["error"] as? [String: Any])?["code"] as? String == "record_not_found")
        let bad = try await server.request(
            "PUT", "/v1/users/\(guest)/records/subscriptions/s5", token: token, body: "[1]")
        #expect(bad.status == 422)
        let unknown = try await server.request("PUT", "/v1/users/\(guest)/records/nope/k", token: token, body: "{}")
        #expect(unknown.status == 400)
        #expect((unknown.object["error"] as? [String: Any])?["code"] as? String == "unknown_collection")

        // An uncapped collection counts nothing: `limit.used` is null, as schemas/record-put.json says
        // (schemathesis found the schema claiming a number; `stop()` checks this answer against it).
        let uncapped = try await server.request(
            "PUT", "/v1/users/\(guest)/records/settings/theme", token: token, body: #"{"dark":true}"#)
        #expect(uncapped.status == 201, "\(uncapped.body)")
        #expect((uncapped.object["limit"] as? [String: Any])?["used"] is NSNull)

        let limits = try await server.request("GET", "/v1/users/\(guest)/limits", token: token)
        #expect(limits.array.first?["used"] as? Int == 4)
        let shown = try await server.request("GET", "/v1/users/\(guest)", token: token)
        #expect((shown.object["user"] as? [String: Any])?["user_id"] as? String == guest)
        let quiet = try await server.request("GET", "/v1/users/\(guest)/prompts/next", token: token)
        #expect(quiet.object["due"] as? Bool == false)
        let tracked = try await server.request(
            "POST", "/v1/users/\(guest)/events", token: token,
            body: #"{"action":"app_opened","props":{"screen":"home"}}"#)
        #expect(tracked.status == 200, "\(tracked.body)")
        #expect(tracked.object["total"] as? Int == 1)

        let route = try await server.request("GET", "/v1/nothing-here")
        #expect(route.status == 404)
        #expect((route.object["error"] as? [String: Any])?["code"] as? String == "route_not_found")
        #expect(try await server.request("GET", "/healthz").status == 200)
        #expect(try await server.request("GET", "/readyz").object["status"] as? String == "ready")
        #expect(try await server.stop() == 0)
    }

    @Test("a metered guest: use to the allowance, the gate, and the refusal with 402", arguments: Backend.allCases)
    func meters(_ backend: Backend) async throws {
        let sandbox = try await backend.sandbox("voice")
        let server = try await Server.start(in: sandbox)
        let (guest, token) = try await server.signIn()
        let used = try await server.request(
            "POST", "/v1/users/\(guest)/meters/api_minutes/use", token: token, body: #"{"amount":46}"#)
        #expect(used.status == 200, "\(used.body)")
        #expect(used.object["recorded"] as? Bool == true)
        let gate = try await server.request(
            "GET", "/v1/users/\(guest)/meters/api_minutes/check?amount=20", token: token)
        #expect(gate.status == 402)
        #expect((gate.object["error"] as? [String: Any])?["code"] as? String == "meter_exhausted")
        let rest = try await server.request(
            "POST", "/v1/users/\(guest)/meters/api_minutes/use", token: token, body: #"{"amount":"14"}"#)
        #expect(rest.status == 200, "\(rest.body)")
        let over = try await server.request(
            "POST", "/v1/users/\(guest)/meters/api_minutes/use", token: token, body: #"{"amount":0.5}"#)
        #expect(over.status == 402, "\(over.body)")
        #expect((over.object["result"] as? [String: Any])?["recorded"] as? Bool == false)
        let status = try await server.request("GET", "/v1/users/\(guest)/meters/api_minutes", token: token)
        #expect((status.object["used"] as? NSNumber)?.doubleValue == 60)
        #expect((status.object["remaining"] as? NSNumber)?.doubleValue == 0)
        let all = try await server.request("GET", "/v1/users/\(guest)/meters", token: token)
        #expect(all.array.count >= 1)
        let negative = try await server.request(
            "POST", "/v1/users/\(guest)/meters/api_minutes/use", token: token, body: #"{"amount":-3}"#)
        #expect(negative.status == 400)
        #expect(try await server.stop() == 0)
    }

    @Test(
        "meter grants over HTTP: an admin grants, the guest lists, a key reused with another grant is 422",
        arguments: Backend.allCases)
    func grants(_ backend: Backend) async throws {
        let sandbox = try await backend.sandbox("voice")
        let admin = try #require(
            try await sandbox.run("serve", "key", "create", "ops", "--scope", "admin", "--json").object["secret"]
                as? String)
        let server = try await Server.start(in: sandbox)
        let (guest, token) = try await server.signIn()
        let path = "/v1/users/\(guest)/meters/api_minutes/grants"
        let bonus = #"{"amount":30,"expires":"P30D","reason":"referral","id":"referral-1"}"#
        #expect(try await server.request("POST", path, token: token, body: bonus).status == 403)
        let granted = try await server.request("POST", path, token: admin, body: bonus)
        #expect(granted.status == 200, "\(granted.body)")
        #expect((granted.object["status"] as? [String: Any])?["allowance"] as? Double == 90)
        let again = try await server.request("POST", path, token: admin, body: bonus)
        #expect(again.status == 200 && again.object["changed"] as? Bool == false, "\(again.body)")
        let reused = try await server.request(
            "POST", path, token: admin, body: #"{"amount":60,"expires":"P30D","reason":"referral","id":"referral-1"}"#)
        #expect(reused.status == 422, "\(reused.body)")
        #expect((reused.object["error"] as? [String: Any])?["code"] as? String == "idempotency_key_reused")
        let listed = try await server.request("GET", path, token: token)
        #expect(listed.status == 200 && listed.array.map { $0["remaining"] as? Double } == [30], "\(listed.body)")
        #expect(try await server.stop() == 0)
    }

    @Test(
        "a session reaches only its own user; bad tokens are 401, a key without the scope 403",
        arguments: Backend.allCases)
    func whoMayDoWhat(_ backend: Backend) async throws {
        let sandbox = try await backend.sandbox("voice")
        let server = try await Server.start(in: sandbox)
        let (alice, aliceToken) = try await server.signIn()
        let (bob, _) = try await server.signIn()
        for path in [
            "/v1/users/\(bob)", "/v1/users/\(bob)/records/notes/a", "/v1/users/\(bob)/meters/api_minutes",
            "/v1/users/\(bob)/prompts/next", "/v1/users/nobody-at-all",
        ] {
            let reply = try await server.request("GET", path, token: aliceToken)
            #expect(reply.status == 404, "\(path): \(reply.status)")
            #expect((reply.object["error"] as? [String: Any])?["code"] as? String == "user_not_found")
        }
        // Another user's id and an id nobody has read the same: nothing tells which exist.
        let other = try await server.request("GET", "/v1/users/\(bob)", token: aliceToken)
        let nobody = try await server.request("GET", "/v1/users/x\(bob)", token: aliceToken)
        #expect(
            other.body.replacingOccurrences(of: bob, with: "")
                == nobody.body.replacingOccurrences(of: "x\(bob)", with: ""))

        let parts = aliceToken.split(separator: ".").map(String.init)
        #expect(parts.count == 3)
        let forgedPayload = Self.base64URL(#"{"sub":"\#(bob)","is_anonymous":true,"iat":1,"exp":4102444800}"#)
        let unsigned = Self.base64URL(#"{"alg":"none","typ":"JWT"}"#)
        let otherSandbox = try await backend.sandbox("voice")
        let otherServer = try await Server.start(in: otherSandbox)
        let (_, foreignToken) = try await otherServer.signIn()
        #expect(try await otherServer.stop() == 0)
        for (what, token) in [
            ("forged", "\(parts[0]).\(forgedPayload).\(parts[2])"), ("alg none", "\(unsigned).\(parts[1])."),
            ("another deployment's key", foreignToken), ("garbage", "not-a-token"), ("empty", ""),
        ] {
            let reply = try await server.request("GET", "/v1/users/\(alice)", token: token)
            #expect(reply.status == 401, "\(what): \(reply.status) \(reply.body)")
            #expect((reply.object["error"] as? [String: Any])?["code"] as? String == "unauthorized")
            #expect(reply.headers["www-authenticate"] == "Bearer")
        }
        #expect(try await server.request("GET", "/v1/users/\(alice)").status == 401)
        #expect(try await server.request("GET", "/v1/users/\(alice)", token: aliceToken).status == 200)
        #expect(try await server.stop() == 0)

        // Two hours later the same token has expired.
        sandbox.environment["GUESTMODE_NOW"] = "+2h"
        let later = try await Server.start(in: sandbox)
        let expired = try await later.request("GET", "/v1/users/\(alice)", token: aliceToken)
        #expect(expired.status == 401)

        let backendKey = try await sandbox.run(
            "serve", "key", "create", "app-backend", "--scope", "user-data", "--json")
        #expect(backendKey.status == 0, "\(backendKey.stderr)")
        let secret = try #require(backendKey.object["secret"] as? String)
        #expect(backendKey.object["scope"] as? String == "user-data")
        let admin = try #require(
            try await sandbox.run("serve", "key", "create", "ops", "--scope", "admin", "--json").object["secret"]
                as? String)
        #expect(try await sandbox.run("serve", "key", "create", "ops", "--scope", "admin").status == 14)

        let (carol, carolToken) = try await later.signIn()
        let listed = try await later.request("GET", "/v1/users", token: secret)
        #expect(listed.status == 403)
        #expect((listed.object["error"] as? [String: Any])?["code"] as? String == "insufficient_scope")
        #expect(try await later.request("GET", "/v1/users", token: admin).array.count == 3)
        #expect(try await later.request("GET", "/v1/users", token: carolToken).status == 403)
        #expect(try await later.request("GET", "/v1/users/\(bob)", token: secret).status == 200)

        let link = #"{"provider":"apple","subject":"s-1"}"#
        let linkedBySession = try await later.request(
            "POST", "/v1/users/\(carol)/identities", token: carolToken, body: link)
        #expect(linkedBySession.status == 403, "a guest cannot vouch for its own identity")
        let linked = try await later.request("POST", "/v1/users/\(alice)/identities", token: secret, body: link)
        #expect(linked.status == 201, "\(linked.body)")
        #expect(linked.object["state"] as? String == "linked")
        let taken = try await later.request("POST", "/v1/users/\(bob)/identities", token: secret, body: link)
        #expect(taken.status == 409)
        #expect((taken.object["error"] as? [String: Any])?["code"] as? String == "identity_already_exists")

        let keys = try await sandbox.run("serve", "key", "list", "--json")
        #expect((keys.json as? [[String: Any]])?.map { $0["name"] as? String } == ["app-backend", "ops"])
        #expect(!keys.stdout.contains(secret), "a listing never shows a secret")
        let meter = "/v1/users/\(bob)/meters/api_minutes"
        #expect(try await later.request("GET", "\(meter)/check?amount=1", token: secret).status == 200)
        #expect(try await sandbox.run("serve", "key", "revoke", "app-backend").status == 0)
        #expect(try await sandbox.run("serve", "key", "revoke", "nope").status == 66)
        #expect(try await later.request("GET", "/v1/users/\(bob)", token: secret).status == 401)
        // Revoked by another process, the key opens nothing on this running server from the next request
        // on, the routes that check it in their own transaction included.
        let refused: [(String, String, String?)] = [
            ("GET", "\(meter)/check?amount=1", nil), ("POST", "\(meter)/use", #"{"amount":1}"#),
            ("GET", "/v1/users/\(bob)/records/notes/a", nil), ("PUT", "/v1/users/\(bob)/records/notes/a", #"{"a":1}"#),
            ("GET", "/v1/users/\(bob)/prompts/next", nil),
        ]
        for (method, path, body) in refused {
            let reply = try await later.request(method, path, token: secret, body: body)
            #expect(reply.status == 401, "\(method) \(path) with a revoked key: \(reply.status) \(reply.body)")
        }
        let used = try await later.request("GET", meter, token: admin)
        #expect(used.status == 200 && used.object["used"] as? Double == 0, "\(used.body)")
        #expect(try await later.stop() == 0)
    }

    @Test("a refresh token works once; a reused one revokes its whole family", arguments: Backend.allCases)
    func refreshRotation(_ backend: Backend) async throws {
        let sandbox = try await backend.sandbox("voice")
        let server = try await Server.start(in: sandbox)
        let created = try await server.request("POST", "/v1/guests", body: "")
        let first = try #require(created.object["refresh_token"] as? String)
        let rotated = try await server.request("POST", "/v1/sessions/refresh", body: #"{"refresh_token":"\#(first)"}"#)
        #expect(rotated.status == 200, "\(rotated.body)")
        let second = try #require(rotated.object["refresh_token"] as? String)
        #expect(second != first)
        #expect(rotated.object["user_id"] as? String == created.object["user_id"] as? String)
        let token = try #require(rotated.object["access_token"] as? String)
        #expect(
            try await server.request("GET", "/v1/users/\(rotated.object["user_id"] as? String ?? "")", token: token)
                .status == 200)

        let reused = try await server.request("POST", "/v1/sessions/refresh", body: #"{"refresh_token":"\#(first)"}"#)
        #expect(reused.status == 401)
        #expect((reused.object["error"] as? [String: Any])?["code"] as? String == "refresh_token_reused")
        let revoked = try await server.request("POST", "/v1/sessions/refresh", body: #"{"refresh_token":"\#(second)"}"#)
        #expect(revoked.status == 401, "the family was revoked, the latest token with it")
        let unknown = try await server.request("POST", "/v1/sessions/refresh", body: #"{"refresh_token":"gmr_00"}"#)
        #expect(unknown.status == 401)
        #expect((unknown.object["error"] as? [String: Any])?["code"] as? String == "refresh_token_invalid")
        #expect(try await server.stop() == 0)
    }

    @Test(
        "Idempotency-Key: the same request gets the first answer, another request with the key 422",
        arguments: Backend.allCases)
    func idempotency(_ backend: Backend) async throws {
        let sandbox = try await backend.sandbox("voice")
        let server = try await Server.start(in: sandbox)
        let (guest, token) = try await server.signIn()
        let event = #"{"action":"app_opened"}"#
        let first = try await server.request(
            "POST", "/v1/users/\(guest)/events", token: token, body: event, headers: ["Idempotency-Key": "k-1"])
        #expect(first.status == 200)
        #expect(first.object["total"] as? Int == 1)
        let retry = try await server.request(
            "POST", "/v1/users/\(guest)/events", token: token, body: event, headers: ["Idempotency-Key": "k-1"])
        #expect(retry.status == 200)
        #expect(retry.body == first.body)
        #expect(retry.headers["idempotent-replayed"] == "true")
        let reused = try await server.request(
            "POST", "/v1/users/\(guest)/events", token: token, body: #"{"action":"app_opened","count":2}"#,
            headers: ["Idempotency-Key": "k-1"])
        #expect(reused.status == 422)
        #expect((reused.object["error"] as? [String: Any])?["code"] as? String == "idempotency_key_reused")
        let next = try await server.request(
            "POST", "/v1/users/\(guest)/events", token: token, body: event, headers: ["Idempotency-Key": "k-2"])
        #expect(next.object["total"] as? Int == 2, "one count per key")

        // A refusal is an answer too: the retry of a refused meter use is refused alike, never recorded.
        let use = #"{"amount":61}"#
        let refused = try await server.request(
            "POST", "/v1/users/\(guest)/meters/api_minutes/use", token: token, body: use,
            headers: ["Idempotency-Key": "m-1"])
        #expect(refused.status == 402)
        let again = try await server.request(
            "POST", "/v1/users/\(guest)/meters/api_minutes/use", token: token, body: use,
            headers: ["Idempotency-Key": "m-1"])
        #expect(again.status == 402)
        #expect(again.body == refused.body)
        #expect(try await server.stop() == 0)
    }

    @Test(
        "64 concurrent clients: a meter used to exactly its allowance, each key counted once; a cap holds exactly 5",
        arguments: Backend.allCases)
    func concurrentClients(_ backend: Backend) async throws {
        let voice = try await backend.sandbox("voice")
        let server = try await Server.start(in: voice)
        let (guest, token) = try await server.signIn()
        // 32 keys, each sent twice, all 64 in flight at once, 2 minutes each: 30 fit the 60-minute allowance.
        let keys = (0..<64).map { "use-\($0 / 2)" }
        let replies = try await server.requestsAtOnce(
            keys.map { key in
                Server.PlannedRequest(
                    method: "POST", path: "/v1/users/\(guest)/meters/api_minutes/use", token: token,
                    body: #"{"amount":2}"#, headers: ["Idempotency-Key": key])
            })
        var answers: [String: [(Int, String)]] = [:]
        for (key, reply) in zip(keys, replies) { answers[key, default: []].append((reply.status, reply.body)) }
        #expect(answers.count == 32)
        for (key, pair) in answers {
            #expect(pair.count == 2 && pair[0].0 == pair[1].0 && pair[0].1 == pair[1].1, "\(key): \(pair)")
        }
        #expect(answers.values.filter { $0[0].0 == 200 }.count == 30)
        #expect(answers.values.filter { $0[0].0 == 402 }.count == 2)
        let status = try await server.request("GET", "/v1/users/\(guest)/meters/api_minutes", token: token)
        #expect((status.object["used"] as? NSNumber)?.doubleValue == 60)
        #expect(try await server.stop() == 0)

        let subscriptions = try await backend.sandbox("subscriptions")
        let capped = try await Server.start(in: subscriptions)
        let (owner, session) = try await capped.signIn()
        let statuses = try await capped.requestsAtOnce(
            (0..<64).map { index in
                Server.PlannedRequest(
                    method: "PUT", path: "/v1/users/\(owner)/records/subscriptions/s\(index)", token: session,
                    body: "{}")
            }
        ).map(\.status)
        #expect(statuses.filter { $0 == 201 }.count == 5)
        #expect(statuses.filter { $0 == 403 }.count == 59)
        #expect(try await capped.stop() == 0)
        let listed = try await subscriptions.run("record", "list", owner, "subscriptions", "--json")
        #expect((listed.json as? [Any])?.count == 5)
    }

    @Test("the 31st guest in an hour from one address is 429 with Retry-After; another address is fine")
    func signInRateLimit() async throws {
        let sandbox = try await Backend.sqlite.sandbox("voice")
        // The bucket refills with the server's clock: a fixed one, so a slow machine refills nothing.
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-03T10:00:00Z"
        let server = try await Server.start(in: sandbox, options: ["--trusted-proxy", "127.0.0.1"])
        for index in 1...30 {
            let created = try await server.request(
                "POST", "/v1/guests", body: #"{"device":"d-\#(index)"}"#,
                headers: ["X-Forwarded-For": "192.0.2.1, 10.0.0.1"])
            #expect(created.status == 201, "guest \(index): \(created.body)")
        }
        let refused = try await server.request(
            "POST", "/v1/guests", body: #"{"device":"d-31"}"#, headers: ["X-Forwarded-For": "10.0.0.1"])
        #expect(refused.status == 429)
        #expect(refused.headers["retry-after"] == "120", "a token every 120 s at 30 an hour")
        #expect((refused.object["error"] as? [String: Any])?["code"] as? String == "rate_limited")
        let other = try await server.request(
            "POST", "/v1/guests", body: #"{"device":"d-32"}"#, headers: ["X-Forwarded-For": "10.0.0.2"])
        #expect(other.status == 201)
        #expect(try await server.stop() == 0)

        // Without the proxy trusted, X-Forwarded-For is the client's say and counts for nothing.
        let limited = try await Server.start(in: sandbox, options: ["--guests-per-hour", "1"])
        #expect(try await limited.request("POST", "/v1/guests", headers: ["X-Forwarded-For": "10.0.0.3"]).status == 201)
        #expect(try await limited.request("POST", "/v1/guests", headers: ["X-Forwarded-For": "10.0.0.4"]).status == 429)
        #expect(try await limited.stop() == 0)
    }

    @Test("a client that stops sending mid-request is cut after --idle-timeout; a whole request is answered")
    func slowClientCut() async throws {
        let sandbox = try await Backend.sqlite.sandbox("voice")
        let server = try await Server.start(in: sandbox, options: ["--idle-timeout", "1"])
        let port = server.address.split(separator: ":").last.map(String.init) ?? ""
        try sandbox.write(
            "slow.py",
            """
            import socket, sys, time
            s = socket.create_connection(("127.0.0.1", \(port)))
            s.sendall(b"GET /healthz HTTP/1.1\\r\\nHost: x\\r\\n")
            time.sleep(3)
            s.settimeout(5)
            try:
                data = s.recv(1024)
            except (ConnectionResetError, socket.timeout) as error:
                data = repr(error).encode()
            print("closed" if data == b"" else "open: %r" % data)
            """)
        let slow = try await sandbox.shell("python3 slow.py")
        #expect(slow.stdout.contains("closed"), "\(slow.stdout)\(slow.stderr)")
        #expect(try await server.request("GET", "/healthz").status == 200)
        #expect(try await server.stop() == 0)
    }

    @Test("past --max-requests in flight a request is 503 server_busy with Retry-After at once; health still answers")
    func inFlightCap() async throws {
        let sandbox = try await Backend.sqlite.sandbox("voice")
        let server = try await Server.start(in: sandbox, options: ["--max-requests", "1"])
        let (guest, token) = try await server.signIn()
        let port = server.address.split(separator: ":").last.map(String.init) ?? ""
        // The first request is in flight while its body is half sent; the second is turned away, a health
        // check is not; once the first is whole it is answered and stored, and the next request is served.
        try sandbox.write(
            "held.py",
            """
            import http.client, json, socket, sys
            body = b'{"action": "app_opened", "id": "held-1"}'
            held = socket.create_connection(("127.0.0.1", \(port)))
            held.sendall(b"POST /v1/users/\(guest)/events HTTP/1.1\\r\\nHost: x\\r\\nAuthorization: Bearer \(token)\\r\\n"
                         b"Content-Type: application/json\\r\\nContent-Length: %d\\r\\n\\r\\n" % len(body) + body[:10])
            def ask(path, method="GET"):
                connection = http.client.HTTPConnection("127.0.0.1", \(port), timeout=10)
                connection.request(method, path, headers={"Authorization": "Bearer \(token)"})
                response = connection.getresponse()
                return response.status, response.getheader("Retry-After"), response.read().decode()
            import time; time.sleep(0.5)
            busy = ask("/v1/users/\(guest)/counters")
            health = ask("/healthz")
            held.sendall(body[10:])
            answer = held.recv(65536).split(b"\\r\\n")[0].decode()
            held.close()
            after = ask("/v1/users/\(guest)/counters")
            print(json.dumps({"busy": busy, "health": health[0], "held": answer, "after": after[0]}))
            """)
        let result = try await sandbox.shell("python3 held.py")
        let answers = try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result.stderr)")
        let busy = try #require(answers["busy"] as? [Any])
        #expect(busy.first as? Int == 503)
        #expect(busy.dropFirst().first as? String == "1")
        let refusal =
            try JSONSerialization.jsonObject(with: Data(((busy.last as? String) ?? "").utf8)) as? [String: Any]
        #expect((refusal?["error"] as? [String: Any])?["code"] as? String == "server_busy", "\(busy)")
        #expect(answers["health"] as? Int == 200)
        #expect(answers["held"] as? String == "HTTP/1.1 200 OK", "\(answers)")
        #expect(answers["after"] as? Int == 200)
        #expect(try await server.stop() == 0)
        let events = try await sandbox.run("user", "events", guest, "--json")
        #expect(events.stdout.contains("held-1"), "\(events.stdout)")
    }

    @Test(
        "a request that waits past --store-wait for a store connection is 503 with Retry-After; the rest are done",
        arguments: Backend.allCases)
    func poolExhausted(_ backend: Backend) async throws {
        let sandbox = try await backend.sandbox("voice")
        let server = try await Server.start(in: sandbox, options: ["--threads", "1", "--store-wait", "0.001"])
        let (guest, token) = try await Self.signInUntilAdmitted(server)
        let replies = try await withThrowingTaskGroup(of: Server.Reply.self) { group in
            for index in 0..<64 {
                group.addTask {
                    try await server.request(
                        "POST", "/v1/users/\(guest)/events", token: token,
                        body: #"{"action":"app_opened","id":"e\#(index)"}"#)
                }
            }
            var replies: [Server.Reply] = []
            for try await reply in group { replies.append(reply) }
            return replies
        }
        let busy = replies.filter { $0.status == 503 }
        #expect(!busy.isEmpty, "64 requests on one thread with 1 ms to wait: some wait longer")
        #expect(busy.allSatisfy { $0.headers["retry-after"] == "1" && $0.body.contains("pool_exhausted") })
        #expect(replies.allSatisfy { $0.status == 200 || $0.status == 503 })
        // /metrics counted each answer under its status, and once all are done nothing holds or waits
        // for the pool: the gauges came back down on every path, the refused ones included.
        let metrics = try await server.request("GET", "/metrics").body.split(separator: "\n")
        func value(_ prefix: String) -> Int? {
            metrics.first { $0.hasPrefix(prefix) }.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
                .map { Int($0) }
        }
        let events = #"guestmode_http_requests_total{route="/v1/users/{user}/events",method="POST",status="#
        #expect(value(events + #""503"}"#) == busy.count, "\(metrics)")
        #expect(value(events + #""200"}"#) == replies.count - busy.count)
        #expect(value("guestmode_store_pool_in_use ") == 0)
        #expect(value("guestmode_store_pool_waiting ") == 0)
        #expect(value("guestmode_store_pool_size ") == 1)
        #expect(try await server.stop() == 0)
        let counted = try await sandbox.run("counters", guest, "--json")
        let done = replies.filter { $0.status == 200 }.count
        let total = (counted.object["counters"] as? [String: Int])?["app_opened"] ?? 0
        #expect(total == done, "every 200 was counted, no 503 was: \(counted.stdout)")
    }

    /// Signs a guest in, retrying while the server answers 503 (a pool that lets nothing wait).
    static func signInUntilAdmitted(_ server: Server) async throws -> (String, String) {
        for _ in 0..<50 {
            let created = try await server.request("POST", "/v1/guests")
            if created.status == 201, let user = created.object["user_id"] as? String,
                let token = created.object["access_token"] as? String
            {
                return (user, token)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw CancellationError()
    }

    @Test(
        "plans, prompts, experiments, counters, unlink and reports over HTTP, with their scopes",
        arguments: Backend.allCases)
    func moreRoutes(_ backend: Backend) async throws {
        let sandbox = try await backend.sandbox("subscriptions")
        let admin = try #require(
            try await sandbox.run("serve", "key", "create", "ops", "--scope", "admin", "--json").object["secret"]
                as? String)
        let backendKey = try #require(
            try await sandbox.run("serve", "key", "create", "app", "--scope", "user-data", "--json").object["secret"]
                as? String)
        let server = try await Server.start(in: sandbox)
        let (guest, token) = try await server.signIn()
        let errorCode = { (reply: Server.Reply) in (reply.object["error"] as? [String: Any])?["code"] as? String }

        let grant = #"{"plan":"premium","trial":"P7D"}"#
        let byGuest = try await server.request("POST", "/v1/users/\(guest)/plans", token: token, body: grant)
        #expect(byGuest.status == 403 && errorCode(byGuest) == "insufficient_scope", "granting is admin work")
        let byApp = try await server.request("POST", "/v1/users/\(guest)/plans", token: backendKey, body: grant)
        #expect(byApp.status == 403)
        let granted = try await server.request("POST", "/v1/users/\(guest)/plans", token: admin, body: grant)
        #expect(granted.status == 200, "\(granted.body)")
        #expect(granted.object["plan"] as? String == "premium")
        var plans = try await server.request("GET", "/v1/users/\(guest)/plans", token: token)
        #expect(plans.object["tier"] as? String == "premium" && plans.object["user_id"] as? String == guest)
        let both = try await server.request(
            "POST", "/v1/users/\(guest)/plans", token: admin,
            body: #"{"plan":"premium","trial":"P7D","until":"2030-01-01T00:00:00Z"}"#)
        #expect(both.status == 400)
        // A trial is granted once: 409, a status schemathesis found the OpenAPI document lacked.
        let again = try await server.request("POST", "/v1/users/\(guest)/plans", token: admin, body: grant)
        #expect(again.status == 409 && errorCode(again) == "trial_already_used", "\(again.body)")
        #expect(try await server.request("DELETE", "/v1/users/\(guest)/plans/premium", token: token).status == 403)
        #expect(try await server.request("DELETE", "/v1/users/\(guest)/plans/premium", token: admin).status == 200)
        plans = try await server.request("GET", "/v1/users/\(guest)/plans", token: token)
        #expect(plans.object["tier"] as? String == "guest")

        let recorded = try await server.request(
            "POST", "/v1/users/\(guest)/prompts", token: token,
            body: #"{"context":"guest_cap_reached","outcome":"dismissed"}"#)
        #expect(recorded.status == 200, "\(recorded.body)")
        let badOutcome = try await server.request(
            "POST", "/v1/users/\(guest)/prompts", token: token,
            body: #"{"context":"guest_cap_reached","outcome":"maybe"}"#)
        #expect(badOutcome.status == 400)
        let history = try await server.request("GET", "/v1/users/\(guest)/prompts/history", token: token)
        #expect((history.object["outcomes"] as? [Any])?.count == 1, "\(history.body)")
        #expect(try await server.request("POST", "/v1/users/\(guest)/prompts/reset", token: token).status == 200)
        let explained = try await server.request("GET", "/v1/users/\(guest)/prompts/next?explain=true", token: token)
        #expect(explained.status == 200)

        let assigned = try await server.request("POST", "/v1/users/\(guest)/experiments", token: token)
        #expect(assigned.status == 200 && assigned.object["user_id"] as? String == guest, "\(assigned.body)")
        let unknown = try await server.request("POST", "/v1/users/\(guest)/experiments?experiment=nope", token: token)
        #expect(unknown.status >= 400 && unknown.status < 500)

        _ = try await server.request(
            "POST", "/v1/users/\(guest)/events", token: token, body: #"{"action":"subscription_added","count":2}"#)
        let counters = try await server.request("GET", "/v1/users/\(guest)/counters", token: token)
        #expect((counters.object["counters"] as? [String: Int])?["subscription_added"] == 2, "\(counters.body)")

        let linked = try await server.request(
            "POST", "/v1/users/\(guest)/identities", token: backendKey, body: #"{"provider":"apple","subject":"s-1"}"#)
        #expect(linked.status == 201, "\(linked.body)")
        #expect(try await server.request("DELETE", "/v1/users/\(guest)/identities/apple", token: token).status == 403)
        let unlinked = try await server.request("DELETE", "/v1/users/\(guest)/identities/apple", token: backendKey)
        #expect(unlinked.status == 200 && unlinked.object["state"] as? String == "anonymous", "\(unlinked.body)")

        let profile = try await server.request("GET", "/v1/profile", token: token)
        #expect(profile.status == 200 && profile.object["name"] as? String == "subscriptions", "\(profile.body)")
        let shown = try await sandbox.run("profile", "show", "--json")
        #expect(profile.body == shown.stdout, "the same document as profile show --json")
        #expect(try await server.request("GET", "/v1/profile").status == 401)

        for report in ["funnel", "prompts", "experiments", "usage", "migrations"] {
            let answer = try await server.request("GET", "/v1/reports/\(report)", token: admin)
            #expect(answer.status == 200, "\(report)")
            let cli = try await sandbox.run("report", report, "--json")
            #expect(answer.body == cli.stdout, "\(report): the same document as report \(report) --json")
        }
        let funnel = try await server.request("GET", "/v1/reports/funnel?since=2000-01-01T00:00:00Z", token: admin)
        #expect(funnel.object["guests"] as? Int == 1, "\(funnel.body)")
        #expect(try await server.request("GET", "/v1/reports/funnel", token: token).status == 403)
        #expect(try await server.request("GET", "/v1/reports/nope", token: admin).status == 404)
        #expect(try await server.request("GET", "/v1/reports/funnel?since=yesterday", token: admin).status == 400)
        #expect(try await server.stop() == 0)
    }

    @Test("bulk NDJSON events and records (admin), all or nothing; a user's events", arguments: Backend.allCases)
    func bulkRoutes(_ backend: Backend) async throws {
        let sandbox = try await backend.sandbox("subscriptions")
        let admin = try #require(
            try await sandbox.run("serve", "key", "create", "ops", "--scope", "admin", "--json").object["secret"]
                as? String)
        let server = try await Server.start(in: sandbox)
        let (guest, token) = try await server.signIn()
        let log = """
            {"user":"\(guest)","action":"app_opened","id":"o-1"}
            {"user":"\(guest)","action":"app_opened","id":"o-2","count":3}
            {"user":"fresh-1","action":"app_opened"}

            """
        #expect(try await server.request("POST", "/v1/events/bulk", token: token, body: log).status == 403)
        let missing = try await server.request("POST", "/v1/events/bulk", token: admin, body: log)
        #expect(missing.status == 422, "fresh-1 does not exist: \(missing.body)")
        #expect((missing.object["error"] as? [String: Any])?["code"] as? String == "invalid_event_log")
        let applied = try await server.request("POST", "/v1/events/bulk?create_users=true", token: admin, body: log)
        #expect(applied.status == 200 && applied.object["applied"] as? Int == 3, "\(applied.body)")
        let again = try await server.request("POST", "/v1/events/bulk?create_users=true", token: admin, body: log)
        #expect(again.object["duplicates"] as? Int == 2, "ids count once: \(again.body)")
        let events = try await server.request(
            "GET", "/v1/users/\(guest)/events?action=app_opened&limit=5", token: token)
        #expect(events.status == 200 && events.array.count == 2, "\(events.body)")
        #expect(try await server.request("GET", "/v1/users/\(guest)/events?limit=lots", token: token).status == 400)

        let records = """
            {"user_id":"\(guest)","collection":"subscriptions","key":"a","data":{"price":1}}
            {"user_id":"\(guest)","collection":"subscriptions","key":"b","data":{"price":2}}

            """
        let put = try await server.request("POST", "/v1/records/bulk", token: admin, body: records)
        #expect(put.status == 200 && put.object["added"] as? Int == 2, "\(put.body)")
        let retried = try await server.request("POST", "/v1/records/bulk?on_conflict=fail", token: admin, body: records)
        #expect(retried.status == 200 && retried.object["unchanged"] as? Int == 2, "a retry: \(retried.body)")
        let changed = records.replacingOccurrences(of: #""price":"#, with: #""price":1"#)
        let skipped = try await server.request("POST", "/v1/records/bulk?on_conflict=skip", token: admin, body: changed)
        #expect(skipped.object["skipped"] as? Int == 2, "\(skipped.body)")
        let twice = """
            {"user_id":"\(guest)","collection":"subscriptions","key":"c","data":{"price":3}}
            {"user_id":"\(guest)","collection":"subscriptions","key":"c","data":{"price":4}}
            """
        let reused = try await server.request("POST", "/v1/records/bulk", token: admin, body: twice)
        #expect(reused.status == 422 && reused.body.contains("idempotency_key_reused"), "\(reused.body)")
        #expect(
            try await server.request("POST", "/v1/records/bulk?on_conflict=maybe", token: admin, body: records).status
                == 400)
        let taken = try await server.request("POST", "/v1/records/bulk?on_conflict=fail", token: admin, body: changed)
        #expect(taken.status == 409, "keys that exist with other data, refused whole: \(taken.body)")
        #expect((taken.object["error"] as? [String: Any])?["code"] as? String == "record_exists")
        let nobody = try await server.request(
            "POST", "/v1/records/bulk", token: admin,
            body: #"{"user_id":"nobody-at-all","collection":"subscriptions","key":"a","data":{}}"#)
        #expect(nobody.status == 404, "a line naming no user: \(nobody.body)")
        #expect((nobody.object["error"] as? [String: Any])?["code"] as? String == "user_not_found")
        let listed = try await server.request("GET", "/v1/users/\(guest)/records/subscriptions", token: token)
        #expect(listed.array.count == 2)
        #expect(try await server.stop() == 0)
    }

    @Test(
        "a user's backup: exported signed by its session, imported back with an admin key", arguments: Backend.allCases)
    func backupRoutes(_ backend: Backend) async throws {
        let sandbox = try await backend.sandbox("subscriptions")
        let admin = try #require(
            try await sandbox.run("serve", "key", "create", "ops", "--scope", "admin", "--json").object["secret"]
                as? String)
        let server = try await Server.start(in: sandbox)
        let (guest, token) = try await server.signIn()
        let (_, other) = try await server.signIn()
        #expect(
            try await server.request(
                "PUT", "/v1/users/\(guest)/records/subscriptions/s1", token: token, body: #"{"n":1}"#
            )
            .status == 201)
        let base = "http://\(server.address)"
        let exported = try await sandbox.shell(
            "curl -s -o mine.tar.zst -w '%{http_code} %{content_type}' -H 'Authorization: Bearer \(token)' \(base)/v1/users/\(guest)/backup"
        )
        #expect(exported.stdout == "200 application/zstd", "\(exported.stdout)")
        let inspected = try await sandbox.run("backup", "inspect", "mine.tar.zst", "--json")
        #expect((inspected.object["header"] as? [String: Any])?["users"] as? [String] == [guest], "\(inspected.stdout)")
        #expect(inspected.object["signature"] as? String == "this-deployment")
        let foreign = try await server.request("GET", "/v1/users/\(guest)/backup", token: other)
        #expect(foreign.status == 404, "another session's user does not exist for it")

        let put = { (token: String, query: String) in
            try await sandbox.shell(
                "curl -s -o put.json -w '%{http_code}' -X PUT --data-binary @mine.tar.zst -H 'Authorization: Bearer \(token)' '\(base)/v1/backup\(query)'"
            )
        }
        #expect(try await put(token, "").stdout == "403", "importing is admin work")
        #expect(try await put(admin, "").stdout == "409", "the user exists: refused by default")
        #expect(try await put(admin, "?on_conflict=replace").stdout == "200")
        #expect(try await put(admin, "?on_conflict=maybe").stdout == "400")
        let listed = try await server.request("GET", "/v1/users/\(guest)/records/subscriptions", token: token)
        #expect(listed.array.count == 1)
        #expect(try await server.stop() == 0)
    }

    @Test("a body over 1 MiB is 413 and stores nothing", arguments: Backend.allCases)
    func bodyCap(_ backend: Backend) async throws {
        let sandbox = try await backend.sandbox("subscriptions")
        let server = try await Server.start(in: sandbox)
        let (guest, token) = try await server.signIn()
        let large = #"{"note":""# + String(repeating: "x", count: 1 << 20) + #""}"#
        let refused = try await server.request(
            "PUT", "/v1/users/\(guest)/records/subscriptions/big", token: token, body: large)
        #expect(refused.status == 413)
        #expect((refused.object["error"] as? [String: Any])?["code"] as? String == "body_too_large")
        let fits = #"{"note":""# + String(repeating: "x", count: (1 << 20) - 20) + #""}"#
        #expect(
            try await server.request("PUT", "/v1/users/\(guest)/records/subscriptions/big", token: token, body: fits)
                .status == 201)
        #expect(try await server.stop() == 0)
    }

    @Test(
        "SIGTERM: the server finishes, closes the store and exits 0; what it acknowledged is stored",
        arguments: Backend.allCases)
    func gracefulShutdown(_ backend: Backend) async throws {
        let sandbox = try await backend.sandbox("subscriptions")
        let server = try await Server.start(in: sandbox, json: true)
        #expect(server.address.hasPrefix("127.0.0.1:"))
        let (guest, token) = try await server.signIn()
        for index in 1...3 {
            #expect(
                try await server.request(
                    "PUT", "/v1/users/\(guest)/records/subscriptions/s\(index)", token: token, body: "{}"
                ).status == 201)
        }
        #expect(try await server.stop() == 0)
        let listed = try await sandbox.run("record", "list", guest, "subscriptions", "--json")
        #expect((listed.json as? [Any])?.count == 3)
        // This server answers no more: its port is closed, or (the tests run in parallel) another test's server
        // took the freed port, which does not know this session (a check of /healthz once got that server's 200).
        let after = try await server.request(
            "GET", "/v1/users/\(guest)/records/subscriptions/s1", token: token)
        #expect(after.status != 200, "\(after.status)")
    }

    @Test(
        "SIGTERM among 64 writes in flight: the server exits 0, every acknowledged write is stored, none is half-written",
        arguments: Backend.allCases)
    func shutdownDuringWrites(_ backend: Backend) async throws {
        let sandbox = try await backend.sandbox("subscriptions")
        let server = try await Server.start(in: sandbox)
        let (guest, token) = try await server.signIn()
        // 64 writes in flight at once; SIGTERM lands among them.
        let keys = (0..<64).map { "k\($0)" }
        let replies = try await server.requestsAtOnce(
            keys.enumerated().map { index, key in
                Server.PlannedRequest(
                    method: "PUT", path: "/v1/users/\(guest)/records/settings/\(key)", token: token,
                    body: #"{"n":\#(index)}"#)
            }, terminatingAfter: 0.005)
        let statuses = Dictionary(uniqueKeysWithValues: zip(keys, replies.map(\.status)))
        #expect(try await server.stop() == 0)
        let listed = try await sandbox.run("record", "list", guest, "settings", "--json")
        let rows = (listed.json as? [[String: Any]]) ?? []
        let stored = Set(rows.compactMap { $0["key"] as? String })
        for (key, status) in statuses {
            // An answer is 201 and its write is there, or the request was refused whole before it began.
            #expect(status == 201 || status == 0 || status == 503, "\(key): \(status)")
            if status == 201 { #expect(stored.contains(key), "\(key) was acknowledged but is not stored") }
        }
        // Whatever is stored (an unanswered write may have committed) is whole: the data it was sent.
        for row in rows {
            let key = try #require(row["key"] as? String)
            let data = row["data"] as? [String: Any]
            #expect((data?["n"] as? Int).map { "k\($0)" } == key, "\(key) holds \(row)")
        }
        #expect(try await sandbox.run("db", "check").status == 0)
    }

    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
}
