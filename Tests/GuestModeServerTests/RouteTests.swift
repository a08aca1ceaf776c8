import Crypto
import Foundation
import GuestModeArchive
import GuestModeKit
import HTTPTypes
import Hummingbird
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import GuestModeServer

/// Route logic in process (`RouteTester`): the answers, statuses and refusals of each route group, in
/// milliseconds. The contract over a socket (HTTP parsing, the connection guard, the process's log and
/// exit) stays with Tests/EndToEndTests.
@Suite("routes in process")
struct RouteTests {
    @Test("sign-in: a session for a new guest each time, whatever device; a malformed body spends nothing")
    func signIn() async throws {
        let server = try await RouteTester(profile: "subscriptions")
        let first = try await server.request(.post, "/v1/guests", body: #"{"device":"phone-1"}"#)
        #expect(first.status == 201, "\(first.body)")
        #expect(first.object["token_type"] as? String == "bearer")
        #expect(first.object["new"] as? Bool == true)
        let second = try await server.request(.post, "/v1/guests", body: #"{"device":"phone-1"}"#)
        #expect(second.status == 201)
        #expect(second.object["user_id"] as? String != first.object["user_id"] as? String)
        #expect(try await server.request(.post, "/v1/guests", body: #"{"device":""}"#).errorCode == "invalid_device")
        let typed = try await server.request(.post, "/v1/guests", body: #"{"device":5}"#)
        #expect(typed.status == 422 && typed.errorCode == "invalid_json", "\(typed.body)")
        #expect(try await server.request(.post, "/v1/guests", body: "[1]").status == 422)
    }

    @Test("refresh: a token works once; its reuse revokes the family")
    func refresh() async throws {
        let server = try await RouteTester(profile: "subscriptions")
        let created = try await server.request(.post, "/v1/guests")
        let token = try #require(created.object["refresh_token"] as? String)
        let refreshed = try await server.request(.post, "/v1/sessions/refresh", body: #"{"refresh_token":"\#(token)"}"#)
        #expect(refreshed.status == 200, "\(refreshed.body)")
        let next = try #require(refreshed.object["refresh_token"] as? String)
        let reused = try await server.request(.post, "/v1/sessions/refresh", body: #"{"refresh_token":"\#(token)"}"#)
        #expect(reused.status == 401 && reused.errorCode == "refresh_token_reused")
        let revoked = try await server.request(.post, "/v1/sessions/refresh", body: #"{"refresh_token":"\#(next)"}"#)
        #expect(revoked.status == 401, "the family is revoked: \(revoked.body)")
        let missing = try await server.request(.post, "/v1/sessions/refresh", body: "{}")
        #expect(missing.status == 400 && missing.errorCode == "usage", "\(missing.body)")
    }

    @Test("records: to the cap, the refusal with its prompt, reads, deletes; the text rule on reads")
    func records() async throws {
        let server = try await RouteTester(profile: "subscriptions")
        let (user, token) = try await server.signIn()
        for index in 1...5 {
            let put = try await server.request(
                .put, "/v1/users/\(user)/records/subscriptions/s\(index)", token: token, body: #"{"price":\#(index)}"#)
            #expect(put.status == 201, "\(put.body)")
        }
        let refused = try await server.request(
            .put, "/v1/users/\(user)/records/subscriptions/s6", token: token, body: "{}")
        #expect(refused.status == 403 && refused.errorCode == "needs_account", "\(refused.body)")
        let error = try #require(refused.object["error"] as? [String: Any])
        #expect((error["prompt"] as? [String: Any])?["context"] as? String == "guest_cap_reached")
        #expect((refused.object["result"] as? [String: Any])?["outcome"] as? String == "needs-account")
        #expect(
            try await server.request(.get, "/v1/users/\(user)/records/subscriptions", token: token).array.count == 5)
        let deleted = try await server.request(.delete, "/v1/users/\(user)/records/subscriptions/s5", token: token)
        #expect(deleted.object["deleted"] as? Bool == true)
        #expect(
            try await server.request(.get, "/v1/users/\(user)/records/subscriptions/s5", token: token).status == 404)
        let nul = try await server.request(.get, "/v1/users/\(user)/records/subscriptions/s1%00", token: token)
        #expect(nul.status == 422 && nul.errorCode == "nul_in_text")
        // A byte that is not UTF-8 is refused, not read as U+FFFD (Foundation's decoding made `%A9` the key
        // `%EF%BF%BD` names), on writes as on reads.
        for method in [HTTPRequest.Method.put, .get] {
            let lossy = try await server.request(
                method, "/v1/users/\(user)/records/subscriptions/s%A9", token: token, body: method == .put ? "{}" : nil)
            #expect(lossy.status == 400 && lossy.errorCode == "usage", "\(method): \(lossy.body)")
        }
        let replacement = try await server.request(
            .get, "/v1/users/\(user)/records/subscriptions/s%EF%BF%BD", token: token)
        #expect(replacement.status == 404, "the refused write stored nothing, under U+FFFD or otherwise")
        #expect(
            try await server.request(.get, "/v1/users/\(user)/records/subscriptions", token: token).array.count == 4,
            "s1 to s4, as before the refused write")
        let unknown = try await server.request(.put, "/v1/users/\(user)/records/nope/k", token: token, body: "{}")
        #expect(unknown.status == 400 && unknown.errorCode == "unknown_collection")
        let (other, _) = try await server.signIn()
        #expect(try await server.request(.get, "/v1/users/\(other)", token: token).status == 404, "another guest")
    }

    @Test("meters: use to the allowance, the gate's 402, exact amounts, one use per key")
    func meters() async throws {
        let server = try await RouteTester(profile: "voice")
        let (user, token) = try await server.signIn()
        let path = "/v1/users/\(user)/meters/api_minutes"
        let used = try await server.request(.post, "\(path)/use", token: token, body: #"{"amount":45.5}"#)
        #expect(used.status == 200, "\(used.body)")
        let gate = try await server.request(.get, "\(path)/check?amount=20", token: token)
        #expect(gate.status == 402 && gate.errorCode == "meter_exhausted", "\(gate.body)")
        let exact = try await server.request(.post, "\(path)/use", token: token, body: #"{"amount":"0.000001"}"#)
        #expect(exact.status == 200, "\(exact.body)")
        let headers: HTTPFields = [HTTPField.Name("Idempotency-Key")!: "call-1"]
        let once = try await server.request(
            .post, "\(path)/use", token: token, body: #"{"amount":1}"#, headers: headers)
        let again = try await server.request(
            .post, "\(path)/use", token: token, body: #"{"amount":1}"#, headers: headers)
        #expect(once.status == 200 && again.status == 200)
        #expect(again.headers[HTTPField.Name("Idempotent-Replayed")!] == "true")
        let reused = try await server.request(
            .post, "\(path)/use", token: token, body: #"{"amount":2}"#, headers: headers)
        #expect(reused.status == 422 && reused.errorCode == "idempotency_key_reused")
        #expect(!reused.body.contains("call-1"), "the key is echoed: \(reused.body)")
        let status = try await server.request(.get, path, token: token)
        #expect(status.object["used"] as? Double == 46.500001, "\(status.body)")
        let noAmount = try await server.request(.post, "\(path)/use", token: token, body: "{}")
        #expect(noAmount.status == 400, "\(noAmount.body)")
        let badOverage = try await server.request(
            .post, "\(path)/use", token: token, body: #"{"amount":1,"overage":true}"#)
        #expect(badOverage.status == 422 && badOverage.errorCode == "invalid_json", "\(badOverage.body)")
    }

    @Test("meter check: the GET only reads, twice refused it changes nothing; the POST raises the prompt")
    func meterGate() async throws {
        let server = try await RouteTester(profile: "voice")
        let (user, token) = try await server.signIn()
        let path = "/v1/users/\(user)/meters/api_minutes"
        #expect(try await server.request(.post, "\(path)/use", token: token, body: #"{"amount":58}"#).status == 200)
        let engine = server.services.engine
        let tables = try engine.store.tableCounts()
        let prompt = try await server.request(.get, "/v1/users/\(user)/prompts/next", token: token)
        for _ in 1...2 {
            let gate = try await server.request(.get, "\(path)/check?amount=5", token: token)
            #expect(gate.status == 402 && gate.errorCode == "meter_exhausted", "\(gate.body)")
            let offer = gate.error["prompt"] as? [String: Any]
            #expect(offer?["context"] as? String == prompt.object["context"] as? String, "the prompt already due")
        }
        #expect(try engine.store.tableCounts() == tables, "a GET writes nothing")
        let after = try await server.request(.get, "/v1/users/\(user)/prompts/next", token: token)
        #expect(after.status == prompt.status && after.body == prompt.body)

        let allowed = try await server.request(.post, "\(path)/check", token: token, body: #"{"amount":2}"#)
        #expect(allowed.status == 200 && allowed.object["allowed"] as? Bool == true, "\(allowed.body)")
        let raised = try await server.request(.post, "\(path)/check?amount=5", token: token)
        #expect(raised.status == 402 && raised.errorCode == "meter_exhausted", "\(raised.body)")
        let offer = raised.error["prompt"] as? [String: Any]
        #expect(offer?["context"] as? String == "session_refused", "\(raised.body)")
        #expect(offer?["trigger"] as? String == "minutes_refused")
        // Now the GET names the prompt that waits, still without writing.
        let counts = try engine.store.tableCounts()
        let pending = try await server.request(.get, "\(path)/check?amount=5", token: token)
        let due = try await server.request(.get, "/v1/users/\(user)/prompts/next", token: token)
        #expect((pending.error["prompt"] as? [String: Any])?["context"] as? String == due.object["context"] as? String)
        #expect(due.object["context"] != nil)
        #expect(try engine.store.tableCounts() == counts)
        let both = try await server.request(.post, "\(path)/check?amount=5", token: token, body: #"{"amount":5}"#)
        #expect(both.status == 400 && both.errorCode == "usage", "\(both.body)")
    }

    @Test("events: a count is a JSON number; props are strings and numbers")
    func events() async throws {
        let server = try await RouteTester(profile: "subscriptions")
        let (user, token) = try await server.signIn()
        let path = "/v1/users/\(user)/events"
        let string = try await server.request(.post, path, token: token, body: #"{"action":"app_opened","count":"5"}"#)
        #expect(string.status == 422 && string.errorCode == "invalid_json", "\(string.body)")
        let fraction = try await server.request(
            .post, path, token: token, body: #"{"action":"app_opened","count":1.5}"#)
        #expect(fraction.status == 422, "\(fraction.body)")
        let zero = try await server.request(.post, path, token: token, body: #"{"action":"app_opened","count":0}"#)
        #expect(zero.status == 400 && zero.errorCode == "invalid_event", "\(zero.body)")
        let nested = try await server.request(
            .post, path, token: token, body: #"{"action":"app_opened","props":{"screen":["a"]}}"#)
        #expect(nested.status == 400 && nested.errorCode == "invalid_event", "\(nested.body)")
        let counted = try await server.request(
            .post, path, token: token, body: #"{"action":"app_opened","count":5,"props":{"screen":"home","n":2}}"#)
        #expect(counted.status == 200 && counted.object["total"] as? Int == 5, "\(counted.body)")
    }

    @Test("credentials and scopes: 401 with WWW-Authenticate, 403 for a key without the scope, 404 for no route")
    func credentials() async throws {
        let server = try await RouteTester(profile: "subscriptions")
        let (user, token) = try await server.signIn()
        let none = try await server.request(.get, "/v1/users/\(user)")
        #expect(none.status == 401 && none.headers[.wwwAuthenticate] == "Bearer")
        let forged = try await server.request(.get, "/v1/users/\(user)", token: token + "x")
        #expect(forged.status == 401)
        // Two Authorization fields name no one credential, even when both are good.
        let twice = HTTPFields(Array(repeating: HTTPField(name: .authorization, value: "Bearer \(token)"), count: 2))
        let doubled = try await server.request(.get, "/v1/users/\(user)", headers: twice)
        #expect(doubled.status == 401 && doubled.errorCode == "unauthorized", "\(doubled.body)")
        let userData = try await server.key(.userData)
        let keyAndToken = HTTPFields([
            HTTPField(name: .authorization, value: "Bearer \(userData)"),
            HTTPField(name: .authorization, value: "Bearer \(token)"),
        ])
        #expect(try await server.request(.get, "/v1/users/\(user)", headers: keyAndToken).status == 401)
        #expect(try await server.request(.get, "/v1/users", token: userData).status == 403)
        #expect(try await server.request(.get, "/v1/users/\(user)", token: userData).status == 200)
        let admin = try await server.key(.admin, named: "ops")
        #expect(try await server.request(.get, "/v1/users", token: admin).array.count == 1)
        let route = try await server.request(.get, "/v1/nothing-here")
        #expect(route.status == 404 && route.errorCode == "route_not_found")
    }

    @Test(
        "a server key is checked in the answer's own transaction: revoked, it opens no route at once, and writes nothing"
    )
    func revokedKeyOnOneTransactionRoutes() async throws {
        let server = try await RouteTester(profile: "voice")
        let (user, _) = try await server.signIn()
        let key = try await server.key(.userData, named: "backend")
        let meter = "/v1/users/\(user)/meters/api_minutes"
        let record = "/v1/users/\(user)/records/commands/k1"
        let body = #"{"phrase": "lights on", "seconds": 2}"#
        #expect(try await server.request(.put, record, token: key, body: body).status == 201)
        #expect(try await server.request(.get, record, token: key).status == 200)
        #expect(try await server.request(.get, "\(meter)/check?amount=1", token: key).status == 200)
        #expect(try await server.request(.post, "\(meter)/use", token: key, body: #"{"amount":1}"#).status == 200)
        let path = try await server.request(.get, "/v1/users/\(user)x/meters/api_minutes/check", token: key)
        #expect(path.status == 404 && path.errorCode == "user_not_found", "\(path.body)")

        _ = try await server.services.perform { engine, now in try engine.revokeServerKey(named: "backend", now: now) }
        let tables = try server.services.engine.store.tableCounts()
        let refused: [(HTTPRequest.Method, String, String?)] = [
            (.get, "\(meter)/check?amount=1", nil), (.get, meter, nil), (.get, "/v1/users/\(user)/meters", nil),
            (.post, "\(meter)/use", #"{"amount":1}"#), (.post, "\(meter)/use", "not json"),
            (.get, record, nil), (.put, "/v1/users/\(user)/records/commands/k2", body),
            (.get, "/v1/users/\(user)/prompts/next", nil), (.get, "/v1/users/nobody%ZZ/records/commands/k1", nil),
        ]
        for (method, path, body) in refused {
            let reply = try await server.request(method, path, token: key, body: body)
            #expect(reply.status == 401 && reply.errorCode == "unauthorized", "\(method) \(path): \(reply.body)")
        }
        #expect(try server.services.engine.store.tableCounts() == tables, "a refused key wrote nothing")
        let unknown = try await server.request(.get, record, token: "gmk_" + String(repeating: "0", count: 64))
        #expect(unknown.status == 401)
    }

    @Test("an access token checked once is still refused once it expires (the server keeps what it checked)")
    func verifiedTokenExpires() async throws {
        let start = Date(timeIntervalSince1970: 1_793_527_200)
        let clock = MovableClock(start)
        let server = try await RouteTester(profile: "voice", now: start, clock: { clock.now })
        let (user, token) = try await server.signIn()
        let path = "/v1/users/\(user)/meters/api_minutes/check?amount=1"
        #expect(try await server.request(.get, path, token: token).status == 200)
        #expect(try await server.request(.get, path, token: token).status == 200, "the second, from what was kept")
        let (other, _) = try await server.signIn()
        let stranger = try await server.request(.get, "/v1/users/\(other)/meters/api_minutes/check", token: token)
        #expect(stranger.status == 404, "a kept token still reaches only its own user: \(stranger.body)")
        clock.now = start.addingTimeInterval(2 * 3600)
        let expired = try await server.request(.get, path, token: token)
        #expect(expired.status == 401 && expired.errorCode == "unauthorized", "\(expired.body)")
    }

    @Test("sessions by identity: a key's subject signs up then in; /v1/me; sign-out; deletion ends everything")
    func sessionsByIdentity() async throws {
        let server = try await RouteTester(profile: "subscriptions")
        let key = try await server.key(.userData)
        let body = #"{"provider":"apple","subject":"001234.abcd"}"#
        #expect(try await server.request(.post, "/v1/sessions", body: body).status == 401, "a subject needs a key")
        let first = try await server.request(.post, "/v1/sessions", token: key, body: body)
        #expect(first.status == 201 && first.object["new"] as? Bool == true, "\(first.body)")
        let second = try await server.request(.post, "/v1/sessions", token: key, body: body)
        #expect(second.status == 200 && second.object["user_id"] as? String == first.object["user_id"] as? String)
        let user = try #require(second.object["user_id"] as? String)
        let token = try #require(second.object["access_token"] as? String)
        let refresh = try #require(second.object["refresh_token"] as? String)
        #expect(try await server.request(.get, "/v1/me", token: token).status == 200)
        let unknown = try await server.request(
            .post, "/v1/sessions", token: key, body: #"{"provider":"myspace","subject":"x"}"#)
        #expect(unknown.status == 400 && unknown.errorCode == "unknown_provider", "\(unknown.body)")
        let out = try await server.request(.post, "/v1/sessions/revoke", body: #"{"refresh_token":"\#(refresh)"}"#)
        #expect(out.status == 200, "\(out.body)")
        #expect(
            try await server.request(.post, "/v1/sessions/refresh", body: #"{"refresh_token":"\#(refresh)"}"#).status
                == 401)
        let (guest, guestToken) = try await server.signIn()
        #expect(try await server.request(.delete, "/v1/users/\(user)", token: guestToken).status == 404, "another's")
        #expect(try await server.request(.delete, "/v1/users/\(guest)", token: guestToken).status == 200)
        #expect(try await server.request(.get, "/v1/me", token: guestToken).status == 404)
        let everywhere = try await server.request(.delete, "/v1/users/\(user)/sessions", token: key)
        #expect(
            everywhere.status == 200 && everywhere.object["revoked"] as? Int == 1,
            "the first sign-in's: \(everywhere.body)")
    }

    @Test("finding a user: GET /v1/users with one of identity, email or device, for admin keys only")
    func findUsers() async throws {
        let server = try await RouteTester(profile: "subscriptions")
        let userData = try await server.key(.userData)
        let admin = try await server.key(.admin, named: "ops")
        let account = try await server.request(
            .post, "/v1/sessions", token: userData,
            body: #"{"provider":"apple","subject":"001234.abcd","email":"Ana@Example.com"}"#)
        let person = try #require(account.object["user_id"] as? String)
        let accountToken = try #require(account.object["access_token"] as? String)
        let phone = try await server.request(.post, "/v1/guests", body: #"{"device":"shared-ipad"}"#)
        let tablet = try await server.request(.post, "/v1/guests", body: #"{"device":"shared-ipad"}"#)
        let guests = [phone, tablet].compactMap { $0.object["user_id"] as? String }

        let byIdentity = try await server.request(.get, "/v1/users?identity=apple:001234.abcd", token: admin)
        #expect(byIdentity.status == 200 && byIdentity.array.map { $0["user_id"] as? String } == [person])
        #expect(byIdentity.array.first?["identities"] as? Int == 1, "the user list's document: \(byIdentity.body)")
        let byEmail = try await server.request(.get, "/v1/users?email=ana%40example.COM", token: admin)
        #expect(byEmail.array.map { $0["user_id"] as? String } == [person], "\(byEmail.body)")
        let byDevice = try await server.request(.get, "/v1/users?device=shared-ipad", token: admin)
        #expect(
            byDevice.array.compactMap { $0["user_id"] as? String } == guests.sorted(),
            "a shared device: both guests, signed in at one time so in the order of their ids")
        let unknown = try await server.request(.get, "/v1/users?email=nobody@example.com", token: admin)
        #expect(unknown.status == 200 && unknown.body.filter { !$0.isWhitespace } == "[]", "none: an empty list")
        #expect(
            try await server.request(.get, "/v1/users", token: admin).array.count == 3, "no query: every user")

        for path in ["/v1/users?identity=apple:001234.abcd", "/v1/users?device=shared-ipad"] {
            let asUser = try await server.request(.get, path, token: accountToken)
            #expect(asUser.status == 403 && asUser.errorCode == "insufficient_scope", "\(asUser.body)")
            #expect(try await server.request(.get, path, token: userData).status == 403)
            #expect(try await server.request(.get, path).status == 401)
        }
        for (path, words) in [
            ("/v1/users?email=a@example.com&device=x", "not several"),
            ("/v1/users?email=a@example.com&email=b@example.com", "not several"),
            ("/v1/users?emial=a@example.com", "and no other"),
            ("/v1/users?identity=apple", "PROVIDER:SUBJECT"),
            ("/v1/users?email=", "must not be empty"),
            ("/v1/users?device", "must not be empty"),
        ] {
            let refused = try await server.request(.get, path, token: admin)
            let message = (refused.object["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(
                refused.status == 400 && refused.errorCode == "usage" && message.contains(words),
                "\(path): \(refused.body)")
        }
        let nul = try await server.request(.get, "/v1/users?device=a%00b", token: admin)
        #expect(nul.status == 422 && nul.errorCode == "nul_in_text", "\(nul.body)")
    }

    @Test("merges: only a live token of the guest proves it; a refused merge changes nothing")
    func mergeNeedsProofOfTheGuest() async throws {
        let server = try await RouteTester(profile: "subscriptions")
        let key = try await server.key(.userData)
        let account = try await server.request(
            .post, "/v1/sessions", token: key, body: #"{"provider":"apple","subject":"001234.abcd"}"#)
        let accountID = try #require(account.object["user_id"] as? String)
        let accountToken = try #require(account.object["access_token"] as? String)
        let (guest, guestToken) = try await server.signIn()
        #expect(
            try await server.request(.put, "/v1/users/\(guest)/records/subscriptions/k", token: guestToken, body: "{}")
                .status == 201)
        let path = "/v1/users/\(accountID)/merges"
        for proof in [#""guest_token":"\#(guestToken)x""#, #""guest_token":"gmr_nothing""#] {
            let refused = try await server.request(
                .post, path, token: accountToken, body: "{\(proof),\"policy\":\"keep-account\"}")
            #expect(refused.status == 401 && refused.errorCode == "unauthorized", "\(proof): \(refused.body)")
        }
        let badPolicy = try await server.request(
            .post, path, token: accountToken, body: #"{"guest_token":"\#(guestToken)","policy":"mine"}"#)
        #expect(badPolicy.status == 400, "\(badPolicy.body)")
        let (other, otherToken) = try await server.signIn()
        let notYours = try await server.request(
            .post, "/v1/users/\(other)/merges", token: accountToken,
            body: #"{"guest_token":"\#(guestToken)","policy":"union"}"#)
        #expect(notYours.status == 404, "another user's account: \(notYours.body)")
        #expect(
            try await server.request(.get, "/v1/users/\(guest)/records/subscriptions", token: guestToken).array.count
                == 1)
        #expect(try await server.request(.get, "/v1/me", token: otherToken).status == 200)
        let merged = try await server.request(
            .post, path, token: accountToken, body: #"{"guest_token":"\#(guestToken)","policy":"union"}"#)
        #expect(merged.status == 200, "\(merged.body)")
        #expect(
            try await server.request(.get, "/v1/users/\(accountID)/records/subscriptions", token: accountToken).array
                .count == 1)
    }

    @Test("jwks: the keys not retired, public, cacheable; a rotation and a retirement reach the server")
    func jwks() async throws {
        let server = try await RouteTester(profile: "subscriptions") { $0.signingKeyRefresh = .zero }
        let published = try await server.request(.get, "/.well-known/jwks.json")
        #expect(published.status == 200, "no credential needed: \(published.body)")
        #expect(published.headers[.cacheControl] == "public, max-age=300")
        let keys = try #require(published.object["keys"] as? [[String: Any]])
        #expect(keys.count == 1)
        let key = try #require(keys.first)
        #expect(Set(key.keys) == ["kty", "crv", "use", "alg", "kid", "x", "y"], "a public key, nothing more: \(key)")
        #expect(key["kty"] as? String == "EC" && key["crv"] as? String == "P-256" && key["alg"] as? String == "ES256")
        #expect(
            key["use"] as? String == "sig" && (key["x"] as? String)?.count == 43 && (key["y"] as? String)?.count == 43)
        let first = try #require(key["kid"] as? String)

        let (user, before) = try await server.signIn()
        let header = try #require(Base64URL.decode(before.split(separator: ".")[0]))
        let fields = try #require(try JSONSerialization.jsonObject(with: header) as? [String: String])
        #expect(fields == ["alg": "ES256", "typ": "JWT", "kid": first])
        let payload = try #require(Base64URL.decode(before.split(separator: ".")[1]))
        let claims = try #require(try JSONSerialization.jsonObject(with: payload) as? [String: Any])
        #expect(claims["iss"] as? String == "guestmode" && claims["aud"] as? String == "authenticated")
        #expect(claims["sub"] as? String == user)

        let second = try await server.services.perform { engine, now in
            try engine.rotateSigningKey(seal: RouteTester.seal, now: now)
        }
        // A copy of the keys past its refresh answers while the next one is read in the background (no
        // request waits on the store for keys): a change shows within a few requests, here each one a read.
        func kids() async throws -> [String]? {
            let listed = try await server.request(.get, "/.well-known/jwks.json")
            return (listed.object["keys"] as? [[String: Any]])?.compactMap { $0["kid"] as? String }
        }
        func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
            for _ in 0..<100 {
                if try await condition() { return true }
                try await Task.sleep(for: .milliseconds(10))
            }
            return false
        }
        #expect(try await eventually { try await kids() == [first, second.kid] })
        let newHeader = Base64URL.encode(Data(#"{"alg":"ES256","kid":"\#(second.kid)","typ":"JWT"}"#.utf8))
        #expect(try await eventually { try await server.signIn().1.hasPrefix(newHeader) })
        #expect(try await server.request(.get, "/v1/users/\(user)", token: before).status == 200)

        _ = try await server.services.perform { engine, now in try engine.retireSigningKey(kid: first, now: now) }
        #expect(
            try await eventually {
                let retired = try await server.request(.get, "/v1/users/\(user)", token: before)
                return retired.status == 401 && retired.errorCode == "unauthorized"
            })
        #expect(try await eventually { try await kids() == [second.kid] })
    }

    @Test("a token of another issuer or audience is refused, though signed with the store's own key")
    func issuerAndAudience() async throws {
        let seal = RouteTester.seal
        let server = try await RouteTester(profile: "subscriptions") {
            $0.issuer = "https://api.example.com"
            $0.audience = "app"
        }
        let (user, token) = try await server.signIn()
        #expect(try await server.request(.get, "/v1/users/\(user)", token: token).status == 200)
        let ring = try #require(
            try await server.services.perform { engine, _ in try engine.signingKeyRing(seal: seal) })
        func signed(_ claims: String) throws -> String {
            let input =
                Base64URL.encode(Data(#"{"alg":"ES256","typ":"JWT","kid":"\#(ring.current.kid)"}"#.utf8)) + "."
                + Base64URL.encode(Data(claims.utf8))
            return input + "." + Base64URL.encode(try ring.signer.signature(for: Data(input.utf8)).rawRepresentation)
        }
        let exp = 1_793_527_200 + 600
        let good = #""sub":"\#(user)","is_anonymous":true,"iat":1793527200,"exp":\#(exp)"#
        #expect(
            try await server.request(
                .get, "/v1/users/\(user)", token: signed(#"{"iss":"https://api.example.com","aud":"app",\#(good)}"#)
            ).status == 200, "the control: the same claims as the server's, signed as it signs")
        #expect(
            try await server.request(
                .get, "/v1/users/\(user)",
                token: signed(#"{"iss":"https://api.example.com","aud":["other","app"],\#(good)}"#)
            ).status == 200, "aud may be an array naming the audience")
        for claims in [
            #"{"iss":"https://evil.example.com","aud":"app",\#(good)}"#,
            #"{"iss":"https://api.example.com","aud":"other",\#(good)}"#,
            #"{"aud":"app",\#(good)}"#, #"{"iss":"https://api.example.com",\#(good)}"#,
            #"{"iss":"https://api.example.com","aud":"app","sub":"\#(user)","iat":1793527200,"exp":1793527200}"#,
        ] {
            let refused = try await server.request(.get, "/v1/users/\(user)", token: signed(claims))
            #expect(refused.status == 401, "\(claims): \(refused.status)")
        }
    }

    @Test("the routes the router registers, the OpenAPI document's and guestmode-serve(1)'s ROUTES are one list")
    func oneRouteTable() async throws {
        let router = try await RouteTester.everyRoute()
        let registered = Set(
            router.routes.map { route in
                "\(route.method.rawValue) "
                    + route.path.description.split(separator: "/", omittingEmptySubsequences: false)
                    .map { $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0) }.joined(separator: "/")
            }.filter { $0 != "GET /metrics" })
        let root = RouteTester.templates.deletingLastPathComponent()
        let document =
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: root.appendingPathComponent("schemas/openapi.json"))) as? [String: Any]
        let paths = try #require(document?["paths"] as? [String: [String: Any]])
        var documented = Set<String>()
        for (path, operations) in paths {
            for method in operations.keys where !["parameters", "summary", "description"].contains(method) {
                documented.insert("\(method == "x-move" ? "MOVE" : method.uppercased()) \(path)")
            }
        }
        documented.remove("GET /metrics")
        let page = try String(contentsOf: root.appendingPathComponent("man/guestmode-serve.1"), encoding: .utf8)
        let section = page.components(separatedBy: "\n.Sh ROUTES\n").last?.components(separatedBy: "\n.Sh ").first ?? ""
        let manual = Set(
            section.split(separator: "\n").filter { $0.hasPrefix(".It Li ") }.map { line in
                line.dropFirst(".It Li ".count).components(separatedBy: " Ns ").map { token in
                    token.hasPrefix("Ar ")
                        ? "{\(token.dropFirst(3))}" : token.hasPrefix("Li ") ? String(token.dropFirst(3)) : token
                }.joined()
            }.filter { $0 != "GET /metrics" })
        #expect(registered.count > 35, "\(registered.sorted())")
        #expect(
            registered == documented,
            "router only: \(registered.subtracting(documented).sorted()); document only: \(documented.subtracting(registered).sorted())"
        )
        #expect(
            registered == manual,
            "router only: \(registered.subtracting(manual).sorted()); guestmode-serve(1) only: \(manual.subtracting(registered).sorted())"
        )
    }

    @Test(
        "a store call's deadline is let go when the call is answered, a refused one included: none is kept until --store-wait passes"
    )
    func deadlinesLetGo() async throws {
        let server = try await RouteTester(profile: "voice")
        let (user, token) = try await server.signIn()
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<32 {
                group.addTask { try await server.request(.get, "/v1/users/\(user)/meters", token: token).status }
            }
            for try await status in group { #expect(status == 200) }
        }
        #expect(server.services.armedDeadlines == 0)
        // Both pool threads held: a call queued behind them is refused at its deadline, which is let go too.
        // The held calls' deadlines are far off, so a loaded machine cannot see them pass before the count
        // (a CI run under load did with the default --store-wait of 10 s).
        let (held, release) = await Self.holdPoolThreads(of: server, waitingAtMost: .seconds(3600))
        await Self.expectRefusedAtItsDeadline(by: server, held: release)
        #expect(server.services.armedDeadlines == 2, "the two held calls' deadlines, not the refused one's")
        // One callback serves every deadline: a second call queued after the first was refused is refused too.
        await Self.expectRefusedAtItsDeadline(by: server, held: release)
        for _ in held { release.signal() }
        for call in held { try await call.value }
        #expect(server.services.armedDeadlines == 0)
    }

    @Test("a queued call is refused at its deadline after every deadline before it passed and was let go")
    func deadlinesAfterOthersPassed() async throws {
        let server = try await RouteTester(profile: "voice")
        // Both pool threads held by calls whose deadlines pass while they run.
        let (held, release) = await Self.holdPoolThreads(of: server, waitingAtMost: .milliseconds(20))
        // A deadline that passed is let go though its call still runs, as an answered one is.
        while server.services.armedDeadlines > 0 { try await Task.sleep(for: .milliseconds(5)) }
        await Self.expectRefusedAtItsDeadline(by: server, held: release)
        await Self.expectRefusedAtItsDeadline(by: server, held: release)
        for _ in held { release.signal() }
        for call in held { try await call.value }
        #expect(server.services.armedDeadlines == 0)
    }

    @Test(
        "a pushed backup is written, flushed and checked on the store's pool, not on the threads every request is answered on"
    )
    func pushedBackupWaitsForThePool() async throws {
        let (server, folder, user, token, archive) = try await Self.shelfServer()
        defer { try? FileManager.default.removeItem(at: folder) }
        let (held, release) = await Self.holdPoolThreads(of: server, waitingAtMost: .seconds(3600))
        let answered = Atomic<Bool>(false)
        let push = Task {
            defer { answered.store(true, ordering: .sequentiallyConsistent) }
            return try await server.request(.put, "/v1/users/\(user)/backups/up", token: token, bytes: archive)
        }
        // Ample time for an upload of a few kilobytes that does not wait for the pool.
        try await Task.sleep(for: .milliseconds(500))
        let answeredWhileHeld = answered.load(ordering: .sequentiallyConsistent)
        for _ in held { release.signal() }
        for call in held { try await call.value }
        #expect(!answeredWhileHeld, "the upload was written and checked while every pool thread was busy")
        #expect(try await push.value.status == 201)
        // A refused upload (not an archive) leaves nothing behind either.
        let refused = try await server.request(
            .put, "/v1/users/\(user)/backups/junk", token: token, bytes: Array(repeating: 0x2a, count: 4096))
        #expect(refused.status >= 400 && refused.status < 500, "\(refused.status) \(refused.body)")
        let incoming = try FileManager.default.contentsOfDirectory(atPath: Self.incoming(of: user, in: folder).path)
        #expect(incoming == ["up"])
    }

    @Test("the pushed-backup routes wait for a pool thread no longer than an engine call may (--store-wait): 503")
    func pushedBackupRoutesWaitAtMostTheStoreWait() async throws {
        let (server, folder, user, token, archive) = try await Self.shelfServer { $0.storeWait = .milliseconds(200) }
        defer { try? FileManager.default.removeItem(at: folder) }
        let (held, release) = await Self.holdPoolThreads(of: server, waitingAtMost: .seconds(3600))
        let calls: [(HTTPRequest.Method, String, [UInt8]?)] = [
            (.get, "/v1/users/\(user)/backups", nil),
            (.put, "/v1/users/\(user)/backups/up", archive),
            (.get, "/v1/users/\(user)/backups/latest", nil),
            (.delete, "/v1/users/\(user)", nil),
        ]
        for (method, path, bytes) in calls {
            let answered = DispatchSemaphore(value: 0)
            let call = Task {
                defer { answered.signal() }
                return try await server.request(method, path, token: token, bytes: bytes)
            }
            // Waited for on a thread of its own, as the held calls are; a call left waiting fails within 30 s.
            let inTime = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
                Thread.detachNewThread { done.resume(returning: answered.wait(timeout: .now() + 30) == .success) }
            }
            #expect(inTime, "\(method) \(path) waited for a pool thread past --store-wait")
            if !inTime { for _ in held { release.signal() } }
            let reply = try await call.value
            #expect(reply.status == 503 && reply.errorCode == "pool_exhausted", "\(method) \(path): \(reply.body)")
        }
        for _ in held { release.signal() }
        for call in held { try await call.value }
        // Nothing was written, and the user refused deletion is still there with its session.
        #expect(!FileManager.default.fileExists(atPath: Self.incoming(of: user, in: folder).path))
        #expect(try await server.request(.get, "/v1/me", token: token).status == 200)
    }

    @Test("an archive is answered a chunk at a time: an export and a pull hold one chunk in memory, never the archive")
    func archivesAreAnsweredInChunks() async throws {
        let key = BackupKey.generate()
        let (server, folder, user, token, _) = try await Self.shelfServer {
            $0.backupKey = key
            $0.fileChunkSize = 256
        }
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(
            try await server.request(
                .put, "/v1/users/\(user)/records/habits/h1", token: token, body: #"{"name":"Read"}"#
            ).status == 201)
        let exported = try await server.request(.get, "/v1/users/\(user)/backup", token: token)
        try #require(exported.status == 200, "\(exported.body)")
        #expect(exported.headers[.contentLength] == String(exported.bytes.count))
        #expect(exported.chunkSizes.count > 1 && exported.chunkSizes.allSatisfy { $0 <= 256 }, "\(exported.chunkSizes)")
        let file = folder.appendingPathComponent("exported.tar.zst")
        try Data(exported.bytes).write(to: file)
        #expect(try BackupArchive.requireIntact(path: file.path, keys: BackupKeys(deployment: key)) == .thisDeployment)
        // Pushed, kept, and pulled back byte for byte, in pieces too.
        let pushed = try await server.request(.put, "/v1/users/\(user)/backups/up", token: token, bytes: exported.bytes)
        #expect(pushed.status == 201, "\(pushed.body)")
        let kept = try await server.request(
            .move, "/v1/users/\(user)/backups/up", token: token,
            headers: [.destination: "/v1/users/\(user)/backups/phone"])
        #expect(kept.status == 201, "\(kept.body)")
        let pulled = try await server.request(.get, "/v1/users/\(user)/backups/latest", token: token)
        #expect(pulled.status == 200 && pulled.bytes == exported.bytes)
        #expect(pulled.headers[.contentLength] == String(exported.bytes.count))
        #expect(pulled.chunkSizes.count > 1 && pulled.chunkSizes.allSatisfy { $0 <= 256 }, "\(pulled.chunkSizes)")
    }

    /// A guest's history has no end, and an answer is built whole in memory: `GET …/events` with no limit
    /// answered every event, so a guest that tracked millions could make the server build hundreds of
    /// megabytes for one request, and again for each at once.
    @Test("events over HTTP: the latest 1000 at most, and by default; a larger limit is 400")
    func eventPages() async throws {
        let server = try await RouteTester(profile: "habits")
        let (user, token) = try await server.signIn()
        try await server.services.perform { engine, now in
            for second in 0..<1005 {
                _ = try engine.track(
                    TrackedEvent(user: user, action: "app_opened", at: now.addingTimeInterval(Double(second))),
                    now: now.addingTimeInterval(Double(second)))
            }
        }
        let path = "/v1/users/\(user)/events"
        let all = try await server.request(.get, path, token: token)
        #expect(all.status == 200 && all.array.count == 1000, "\(all.array.count) events")
        // The latest, listed oldest first: the first five tracked are the ones left out.
        let times = all.array.compactMap { $0["at"] as? String }
        #expect(times.count == 1000 && times == times.sorted(), "\(times.prefix(3))")
        let latest = try await server.request(.get, "\(path)?limit=1", token: token)
        #expect(latest.array.count == 1 && latest.array.first?["at"] as? String == times.last, "\(latest.body)")
        let tooMany = try await server.request(.get, "\(path)?limit=1001", token: token)
        #expect(tooMany.status == 400 && tooMany.errorCode == "invalid_limit", "\(tooMany.body)")
        #expect((tooMany.error["message"] as? String)?.hasSuffix("is in the user's backup export") == true)
    }

    /// A collection without a cap has no end, and a record may be up to the body cap: a list answered
    /// every record, built whole in memory. It is answered a page at a time now.
    @Test("record lists: pages of at most 1000 by key, ?after= the last key of the page before")
    func recordPages() async throws {
        let server = try await RouteTester(profile: "habits")
        let (user, token) = try await server.signIn()
        let path = "/v1/users/\(user)/records/habits"
        for key in ["c", "a", "b"] {
            let put = try await server.request(.put, "\(path)/\(key)", token: token, body: #"{"name":"x"}"#)
            #expect(put.status == 201, "\(put.body)")
        }
        func keys(_ query: String) async throws -> [String] {
            let reply = try await server.request(.get, path + query, token: token)
            #expect(reply.status == 200, "\(query): \(reply.body)")
            return reply.array.compactMap { $0["key"] as? String }
        }
        #expect(try await keys("") == ["a", "b", "c"])
        #expect(try await keys("?limit=2") == ["a", "b"])
        #expect(try await keys("?after=b&limit=2") == ["c"])
        #expect(try await keys("?after=c") == [])
        for bad in ["?limit=1001", "?limit=0", "?limit=x"] {
            let refused = try await server.request(.get, path + bad, token: token)
            #expect(refused.status == 400 && refused.errorCode == "invalid_limit", "\(bad): \(refused.body)")
        }
        // Without ?limit=, a page of 1000.
        try await server.services.perform { engine, now in
            for index in 0..<1001 {
                _ = try engine.putRecord(user: user, collection: "progress", key: "k\(index)", json: "{}", now: now)
            }
        }
        let page = try await server.request(.get, "/v1/users/\(user)/records/progress", token: token)
        #expect(page.array.count == 1000)
    }

    /// An upload waits in `incoming/` for the MOVE that keeps it, and a client may push under any name:
    /// names never moved piled up without end, a guest's own export pushed again and again.
    @Test("uploads waiting for their MOVE: the newest --keep-backups stay, the older go")
    func waitingUploadsAreBounded() async throws {
        let (server, folder, user, token, archive) = try await Self.shelfServer { $0.keptBackups = 2 }
        defer { try? FileManager.default.removeItem(at: folder) }
        for name in ["a", "b", "c", "d"] {
            let pushed = try await server.request(
                .put, "/v1/users/\(user)/backups/\(name)", token: token, bytes: archive)
            #expect(pushed.status == 201, "\(name): \(pushed.body)")
        }
        let waiting = try FileManager.default.contentsOfDirectory(atPath: Self.incoming(of: user, in: folder).path)
        #expect(waiting.sorted() == ["c", "d"], "\(waiting)")
        let gone = try await server.request(
            .move, "/v1/users/\(user)/backups/a", token: token, headers: [.destination: "/v1/users/\(user)/backups/k"])
        #expect(gone.status == 404 && gone.errorCode == "archive_not_found", "\(gone.body)")
        let kept = try await server.request(
            .move, "/v1/users/\(user)/backups/c", token: token, headers: [.destination: "/v1/users/\(user)/backups/k"])
        #expect(kept.status == 201, "\(kept.body)")
    }

    /// An upload is written to disk as it comes and checked once whole: `--max-requests` uploads of the
    /// archive cap, unsigned ones too, could take the disk together before any was refused.
    @Test("uploads together past --upload-space: 503 server_busy, nothing written; the space comes back")
    func uploadSpace() async throws {
        let (server, folder, user, token, archive) = try await Self.shelfServer {
            $0.backupSizeLimit = 100_000
            $0.uploadSpace = 100_000
        }
        defer { try? FileManager.default.removeItem(at: folder) }
        let space = try #require(server.services.backupShelf).space
        let path = "/v1/users/\(user)/backups/up"
        // Declared at 60,000 bytes, not sent yet: they are taken before a byte is written.
        let (slowBody, slowSource) = RequestBody.makeStream()
        let slow = Task {
            try await server.request(
                .put, path, token: token, streamedBody: slowBody, headers: [.contentLength: "60000"])
        }
        try await Self.waitFor("the slow upload's bytes taken") { space.bytesHeld == 60_000 }
        let refused = try await server.request(.put, path, token: token, bytes: Array(repeating: 0, count: 60_000))
        #expect(refused.status == 503 && refused.errorCode == "server_busy", "\(refused.body)")
        let incoming = Self.incoming(of: user, in: folder).path
        // What fits is received as ever.
        let pushed = try await server.request(.put, path, token: token, bytes: archive)
        #expect(pushed.status == 201, "\(pushed.body)")
        await slowSource.yield(ByteBuffer(repeating: 0, count: 60_000))
        slowSource.finish()
        let unsigned = try await slow.value
        #expect(unsigned.status == 422, "\(unsigned.body)")
        #expect(space.bytesHeld == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: incoming) == ["up"])
    }

    /// An archive's answer waits for its client at each write, and Hummingbird's idle timeout is off while
    /// an answer is in progress: a client that stopped reading held the request for as long as it stayed
    /// connected. Each write now has `--idle-timeout`, past which the connection is closed; a client that
    /// takes every write in time is answered in full however long the whole answer takes. The clock is
    /// the test connection's event loop's, moved by the reader itself: no real time passes.
    @Test("an archive's writes: each may wait --idle-timeout, the whole answer any time")
    func archiveWritesWaitAtMostTheIdleTimeout() async throws {
        let (server, folder, user, token, archive) = try await Self.shelfServer {
            $0.fileChunkSize = 64
            $0.idleTimeout = .seconds(1)
        }
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(archive.count > 12 * 64, "an archive of \(archive.count) bytes")
        // Steady: each write taken 0.9 s after it is made, the whole answer many seconds.
        let steady = try await PacedReader.connection()
        let taken = try await server.respond(.get, "/v1/users/\(user)/backup", token: token, on: steady)
        let steadyReader = PacedReader(taking: .milliseconds(900), stallAfter: nil, connection: steady)
        try await taken.body.write(steadyReader)
        #expect(steadyReader.bytes == archive)
        #expect(steadyReader.closed == false, "a reader taking every write in time was cut off")
        // Stalled after its first write: 1.1 s later its connection is closed, and the answer fails.
        let stalled = try await PacedReader.connection()
        let cut = try await server.respond(.get, "/v1/users/\(user)/backup", token: token, on: stalled)
        let stalledReader = PacedReader(taking: .milliseconds(1100), stallAfter: 1, connection: stalled)
        let failure = await #expect(throws: GuestModeError.self) { try await cut.body.write(stalledReader) }
        #expect(failure?.code == .requestTimeout)
        #expect(stalledReader.closed == true && stalledReader.bytes.count == 64)
    }

    /// Takes each write once `taking` has passed on its connection's event loop (a test loop, whose time
    /// it moves); after `stallAfter` writes it takes nothing more, and its write fails, as a real
    /// connection's does, once that connection is closed.
    private final class PacedReader: ResponseBodyWriter, Sendable {
        let taking: TimeAmount
        let stallAfter: Int?
        let connection: NIOAsyncTestingChannel
        private let received = Mutex<[UInt8]>([])
        private let writes = Atomic<Int>(0)
        private let isClosed = Atomic<Bool>(false)

        /// A connection on a test event loop, connected so that it can be closed.
        static func connection() async throws -> NIOAsyncTestingChannel {
            let channel = NIOAsyncTestingChannel()
            try await channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).get()
            return channel
        }

        init(taking: TimeAmount, stallAfter: Int?, connection: NIOAsyncTestingChannel) {
            self.taking = taking
            self.stallAfter = stallAfter
            self.connection = connection
            connection.closeFuture.whenComplete { [weak self] _ in self?.isClosed.store(true, ordering: .relaxed) }
        }

        var bytes: [UInt8] { received.withLock { $0 } }
        var closed: Bool { isClosed.load(ordering: .relaxed) }

        func write(_ buffer: ByteBuffer) async throws {
            let stalls = stallAfter.map { writes.add(1, ordering: .relaxed).newValue > $0 } ?? false
            await connection.testingEventLoop.advanceTime(by: taking)
            // The watch's callback runs on the loop as its time passes; the close it makes lands there too.
            await connection.testingEventLoop.run()
            if stalls || closed { throw ChannelError.ioOnClosedChannel }
            received.withLock { $0 += buffer.readableBytesView }
        }

        func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }

    /// A body is read whole before its route decodes it, and one may come slowly: without a bound on
    /// every request's bodies together, `--max-requests` of them at the body cap (512 MiB) could be held
    /// at once by slow clients of a few addresses.
    @Test("bodies together past --body-memory: 503 server_busy before the body is read; given back once answered")
    func bodyMemory() async throws {
        let server = try await RouteTester(profile: "habits") { $0.bodyMemory = 1 << 20 }
        let budget = server.services.bodyBudget
        let (user, token) = try await server.signIn()
        let path = "/v1/users/\(user)/events"
        let event = #"{"action":"app_opened"}"#
        let padded = event + String(repeating: " ", count: 600_000 - event.utf8.count)
        // A body declared at 600,000 bytes that has not come yet holds them all from the start.
        let (slowBody, slowSource) = RequestBody.makeStream()
        let slow = Task {
            try await server.request(
                .post, path, token: token, streamedBody: slowBody, headers: [.contentLength: "600000"])
        }
        try await Self.waitFor("the slow body's bytes taken") { budget.bytesHeld == 600_000 }
        let refused = try await server.request(.post, path, token: token, body: padded)
        #expect(refused.status == 503 && refused.errorCode == "server_busy", "\(refused.body)")
        #expect(refused.headers[.retryAfter] == "1")
        // A chunked body is counted as it comes: refused at the piece that would pass the bound.
        let (chunked, chunkedSource) = RequestBody.makeStream()
        let feeding = Task {
            for _ in 0..<10 { await chunkedSource.yield(ByteBuffer(repeating: UInt8(ascii: " "), count: 100_000)) }
            chunkedSource.finish()
        }
        let cut = try await server.request(.post, path, token: token, streamedBody: chunked)
        feeding.cancel()
        #expect(cut.status == 503 && cut.errorCode == "server_busy", "\(cut.body)")
        // What fits is answered as ever, and gives its bytes back.
        let small = try await server.request(.post, path, token: token, body: event)
        #expect(small.status == 200, "\(small.body)")
        #expect(budget.bytesHeld == 600_000)
        await slowSource.yield(ByteBuffer(string: padded))
        slowSource.finish()
        let answered = try await slow.value
        #expect(answered.status == 200, "\(answered.body)")
        #expect(budget.bytesHeld == 0)
        let again = try await server.request(.post, path, token: token, body: padded)
        #expect(again.status == 200, "\(again.body)")
        #expect(budget.bytesHeld == 0)
        let counted = try await server.request(.get, "/v1/users/\(user)/counters", token: token)
        #expect((counted.object["counters"] as? [String: Any])?["app_opened"] as? Int == 3, "\(counted.body)")
    }

    @Test("a chunked body takes from --body-memory what its array reserves as it grows, not only what came")
    func chunkedBodyTakesWhatItReserves() async throws {
        let server = try await RouteTester(profile: "habits") { $0.bodyMemory = 1 << 20 }
        let budget = server.services.bodyBudget
        let (user, token) = try await server.signIn()
        let (chunked, source) = RequestBody.makeStream()
        let posting = Task {
            try await server.request(.post, "/v1/users/\(user)/events", token: token, streamedBody: chunked)
        }
        // Leading spaces, then the event: three pieces of 100,000 bytes grow the array to 400,000 (100,000,
        // then twice that, then twice again), and that is what the body holds.
        for held in [100_000, 200_000, 400_000] {
            await source.yield(ByteBuffer(repeating: UInt8(ascii: " "), count: 100_000))
            try await Self.waitFor("\(held) bytes taken") { budget.bytesHeld == held }
        }
        await source.yield(ByteBuffer(string: #"{"action":"app_opened"}"#))
        #expect(budget.bytesHeld == 400_000, "the last piece fits in what the array reserved")
        source.finish()
        let answered = try await posting.value
        #expect(answered.status == 200, "\(answered.body)")
        #expect(budget.bytesHeld == 0)
    }

    /// Polls `condition` every 10 ms for at most 30 s; fails the test if it never holds.
    private static func waitFor(_ what: String, _ condition: () -> Bool) async throws {
        for _ in 0..<3000 {
            if condition() { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("\(what): not within 30 s")
    }

    /// A server keeping pushed backups under a new temporary folder, which the caller removes; a guest
    /// signed in; and the guest's archive as `GET /v1/users/{user}/backup` answers it.
    private static func shelfServer(
        _ configure: @escaping (inout ServerConfiguration) -> Void = { _ in }
    ) async throws -> (server: RouteTester, folder: URL, user: String, token: String, archive: [UInt8]) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "guestmode-shelf-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let server = try await RouteTester(profile: "habits") {
            $0.backupsDirectory = folder.appendingPathComponent("shelf").path
            $0.backupKey = BackupKey.generate()
            configure(&$0)
        }
        let (user, token) = try await server.signIn()
        let archive = try await server.request(.get, "/v1/users/\(user)/backup", token: token)
        try #require(archive.status == 200, "\(archive.body)")
        return (server, folder, user, token, archive.bytes)
    }

    /// Where `shelfServer`'s server keeps the user's uploads.
    private static func incoming(of user: String, in folder: URL) -> URL {
        folder.appendingPathComponent("shelf").appendingPathComponent(GuestMode.fileName(for: user))
            .appendingPathComponent("incoming")
    }

    /// A call queued behind held pool threads is answered `pool_exhausted` at its deadline. A call left
    /// waiting fails the test within 30 s instead of hanging it: the held calls are let go, so it runs.
    private static func expectRefusedAtItsDeadline(
        by server: RouteTester, held release: DispatchSemaphore
    ) async {
        let answered = DispatchSemaphore(value: 0)
        let call = Task {
            defer { answered.signal() }
            try await server.services.perform(waitingAtMost: .milliseconds(1)) { _, _ in }
        }
        // Waited for on a thread of its own, as the held calls are.
        let inTime = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            Thread.detachNewThread { done.resume(returning: answered.wait(timeout: .now() + 30) == .success) }
        }
        #expect(inTime, "a call queued behind held threads was not answered at its deadline")
        if !inTime { for _ in 0..<2 { release.signal() } }
        let refused = await #expect(throws: GuestModeError.self) { try await call.value }
        #expect(refused?.code == .poolExhausted)
    }

    /// Two calls holding the server's two pool threads until `release` is signalled once for each; returns
    /// once both run. A call refused at its deadline before a thread took it (a short `wait` on a loaded
    /// machine) is replaced by another, instead of being waited for forever.
    private static func holdPoolThreads(
        of server: RouteTester, waitingAtMost wait: Duration
    ) async -> (held: [Task<Void, any Error>], release: DispatchSemaphore) {
        let settled = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let ran = DispatchSemaphore(value: 0)
        var held: [Task<Void, any Error>] = []
        for _ in 0..<1000 where held.count < 2 {
            let call = Task {
                do {
                    try await server.services.perform(waitingAtMost: wait) { _, _ in
                        ran.signal()
                        settled.signal()
                        release.wait()
                    }
                } catch {
                    settled.signal()
                    throw error
                }
            }
            // Waited for on a thread of its own: a blocked cooperative thread could starve the task that submits.
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                Thread.detachNewThread {
                    settled.wait()
                    done.resume()
                }
            }
            if ran.wait(timeout: .now()) == .success { held.append(call) }
        }
        #expect(held.count == 2, "the pool's two threads could not be held")
        return (held, release)
    }
}

/// The strict request decoder: JSON types as the OpenAPI document gives them, nothing coerced.
@Suite("request bodies")
struct RequestBodyTests {
    struct Body: Decodable {
        var name: String
        var count: Int?
        var amount: DecimalText?
        var flag: Bool?
    }

    @Test func typesAreExact() throws {
        let body = try StrictRequestDecoder.decode(
            Body.self, from: Array(#"{"name":"a","count":3,"amount":"12.000001","flag":true,"extra":[1]}"#.utf8))
        #expect(body.name == "a" && body.count == 3 && body.amount?.text == "12.000001" && body.flag == true)
        #expect(
            try StrictRequestDecoder.decode(Body.self, from: Array(#"{"name":"a","amount":0.1}"#.utf8)).amount?.text
                == "0.1")
        for (text, code) in [
            (#"{"name":5}"#, "invalid_json"), (#"{"name":"a","count":"3"}"#, "invalid_json"),
            (#"{"name":"a","count":3.0}"#, "invalid_json"), (#"{"name":"a","flag":1}"#, "invalid_json"),
            (#"{"count":3}"#, "usage"), (#"{"name":"a","name":"b"}"#, "invalid_json"), ("[]", "invalid_json"),
        ] {
            #expect(throws: GuestModeError.self, "\(text)") {
                do {
                    _ = try StrictRequestDecoder.decode(Body.self, from: Array(text.utf8))
                } catch let error as GuestModeError {
                    #expect(error.code.rawValue == code, "\(text): \(error.code) \(error.message)")
                    throw error
                }
            }
        }
    }
}

/// What a caller is told of a failure names nothing of the server.
@Suite("public error messages")
struct PublicMessageTests {
    @Test func serverFailuresAreWordedForTheCaller() {
        let busy = GuestModeError(.storeBusy, "the store '/var/lib/guestmode/store.sqlite' is busy; try again later")
        #expect(!busy.publicMessage.contains("/var"))
        let unreachable = GuestModeError(
            .storeUnreachable, "cannot reach the PostgreSQL store postgresql://u:…@127.0.0.1:5432/db: refused")
        #expect(!unreachable.publicMessage.contains("127.0.0.1") && !unreachable.publicMessage.contains("postgresql"))
        let failure = GuestModeError(.ioError, "cannot write '/tmp/x/y': No space left")
        #expect(!failure.publicMessage.contains("/tmp"))
    }

    @Test func requestFailuresKeepTheirSentenceWithoutPathsOrAddresses() {
        let archive = GuestModeError(
            .notAnArchive, "'/tmp/guestmode-serve-1.gmbackup' is not a guestmode backup: its content is not zstd")
        #expect(
            archive.publicMessage
                == "'(a file on the server)' is not a guestmode backup: its content is not zstd")
        let address = GuestModeError(.usage, "host=10.1.2.3 and [::1]:5432 and localhost:80, with http://x/y.")
        #expect(
            address.publicMessage == "(an address) and (an address) and (an address), with (a location on the server).")
        let plain = GuestModeError(.recordNotFound, "no record 'a/b' in subscriptions")
        #expect(plain.publicMessage == plain.message)
    }

    /// Each rule at the edges of a word: the quotes and punctuation around it kept, its case, its port, text
    /// that is not ASCII beside it, and the words that look alike but name nothing.
    @Test(arguments: [
        ("cannot open \"~/store.sqlite\";", "cannot open \"(a file on the server)\";"),
        ("at (/srv/a/b), then", "at ((a file on the server)), then"),
        ("café /a/b né", "café (a file on the server) né"),
        ("LocalHost:8080 refused.", "(an address) refused."),
        ("from [fe80::1]:443", "from (an address)"),
        ("dir=/var/x/y", "(a file on the server)"),
        ("url=https://example.com/a;", "(a location on the server);"),
        ("1.2.3.4:5432, 10.0.0.1.", "(an address), (an address)."),
        ("the cap is 1.5 minutes: wait", "the cap is 1.5 minutes: wait"),
        ("version 1.2.3.4.5 and /root and a:b", "version 1.2.3.4.5 and /root and a:b"),
        ("localhostx and ١٢٧.٠.٠.١", "localhostx and ١٢٧.٠.٠.١"),
        ("two  spaces /a/b ", "two  spaces (a file on the server) "),
    ])
    func eachRuleAtTheEdgesOfAWord(message: String, scrubbed: String) {
        #expect(GuestModeError(.usage, message).publicMessage == scrubbed)
    }
}

/// A clock a test moves.
private final class MovableClock: Sendable {
    private let moment: Mutex<Date>

    init(_ start: Date) { moment = Mutex(start) }

    var now: Date {
        get { moment.withLock { $0 } }
        set { moment.withLock { $0 = newValue } }
    }
}
