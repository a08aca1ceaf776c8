import Foundation
import Testing

/// Support finding a person, and signing a person out, as a shell and an admin's HTTP client do it:
/// `user find`, `GET /v1/users?…`, `serve session list|revoke` against sessions made over HTTP.
@Suite("user find, GET /v1/users?identity|email|device, serve session list|revoke")
struct UserFindTests {
    @Test(
        "a person found by identity, email or device; none exits 66; the admin route answers the same list",
        arguments: ServerTests.Backend.allCases)
    func findAPerson(_ backend: ServerTests.Backend) async throws {
        let sandbox = try await backend.sandbox("subscriptions")
        func id(_ result: Sandbox.Result) -> String { result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) }
        let admin = try await sandbox.run("serve", "key", "create", "ops", "--scope", "admin").stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let server = try await Server.start(in: sandbox)
        // `guest new --device` finds the device's guest; every sign-in over HTTP is a new one.
        let first = id(try await sandbox.run("guest", "new", "--device", "shared-ipad", "-q"))
        let signedIn = try await server.request("POST", "/v1/guests", body: #"{"device":"shared-ipad"}"#)
        let second = try #require(signedIn.object["user_id"] as? String)
        let ana = id(try await sandbox.run("guest", "new", "-q"))
        #expect(
            try await sandbox.run(
                "link", ana, "--provider", "apple", "--subject", "001234.abcd", "--email", "Ana@Example.com"
            ).status == 0)

        let table = try await sandbox.run("user", "find", "--identity", "apple:001234.abcd")
        #expect(table.status == 0 && table.stdout.contains("USER ID") && table.stdout.contains(ana), "\(table.stdout)")
        let quiet = try await sandbox.run("user", "find", "--email", "ana@EXAMPLE.com", "-q")
        #expect(quiet.stdout == "\(ana)\n", "\(quiet.stdout)\(quiet.stderr)")
        let shared = try await sandbox.run("user", "find", "--device", "shared-ipad", "--json")
        let listed = (shared.json as? [[String: Any]])?.compactMap { $0["user_id"] as? String }
        #expect(listed == [first, second], "a shared device: every guest on it, oldest first: \(shared.stdout)")
        let tsv = try await sandbox.run("user", "find", "--identity", "apple:001234.abcd", "--format", "tsv")
        #expect(tsv.stdout.hasPrefix("user_id\tstate\t"), "\(tsv.stdout)")

        let none = try await sandbox.run("user", "find", "--identity", "apple:nobody")
        #expect(none.status == 66 && none.stdout.isEmpty, "\(none.stderr)")
        #expect(none.stderr.contains("no user holds the apple identity 'nobody'"), "\(none.stderr)")
        let noneJSON = try await sandbox.run("user", "find", "--device", "lost-phone", "--json")
        #expect(noneJSON.status == 66 && noneJSON.errorJSON["code"] as? String == "user_not_found")
        for arguments in [
            ["user", "find"], ["user", "find", "--email", "a@example.com", "--device", "x"],
            ["user", "find", "--identity", "apple"],
        ] {
            let refused = try await sandbox.run(arguments: arguments)
            #expect(refused.status == 64, "\(arguments): \(refused.stderr)")
        }

        let found = try await server.request("GET", "/v1/users?email=ANA%40example.com", token: admin)
        #expect(found.status == 200 && found.array.map { $0["user_id"] as? String } == [ana], "\(found.body)")
        let cli = try await sandbox.run("user", "find", "--email", "ANA@example.com", "--json")
        #expect(
            (try JSONSerialization.jsonObject(with: Data(found.body.utf8)) as? NSArray)
                == (cli.json as? NSArray), "the route answers what user find --json prints")
        let nobody = try await server.request("GET", "/v1/users?device=lost-phone", token: admin)
        #expect(nobody.status == 200 && nobody.array.isEmpty, "\(nobody.body)")
        let two = try await server.request("GET", "/v1/users?device=x&email=y", token: admin)
        #expect(two.status == 400, "\(two.body)")
        let (_, guestToken) = try await server.signIn()
        #expect(try await server.request("GET", "/v1/users?device=shared-ipad", token: guestToken).status == 403)
        _ = try await server.stop()
    }

    @Test(
        "sessions made over HTTP are listed by the CLI, never a token; revoked one or all, refresh is 401",
        arguments: ServerTests.Backend.allCases)
    func sessionsListedAndRevoked(_ backend: ServerTests.Backend) async throws {
        let sandbox = try await backend.sandbox("subscriptions")
        let key = try await sandbox.run("serve", "key", "create", "backend", "--scope", "user-data").stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let server = try await Server.start(in: sandbox)
        let body = #"{"provider":"apple","subject":"001234.abcd"}"#
        let phone = try await server.request("POST", "/v1/sessions", token: key, body: body)
        let person = try #require(phone.object["user_id"] as? String)
        let phoneRefresh = try #require(phone.object["refresh_token"] as? String)
        let rotated = try await server.request(
            "POST", "/v1/sessions/refresh", body: #"{"refresh_token":"\#(phoneRefresh)"}"#)
        let phoneNext = try #require(rotated.object["refresh_token"] as? String)
        let tablet = try await server.request("POST", "/v1/sessions", token: key, body: body)
        let tabletRefresh = try #require(tablet.object["refresh_token"] as? String)
        let tabletAccess = try #require(tablet.object["access_token"] as? String)
        #expect(tablet.object["user_id"] as? String == person)

        let listed = try await sandbox.run("serve", "session", "list", person, "--json")
        let sessions = try #require(listed.json as? [[String: Any]], "\(listed.stdout)\(listed.stderr)")
        #expect(sessions.count == 2)
        #expect(sessions.map { $0["refreshes"] as? Int } == [1, 0], "\(listed.stdout)")
        #expect(sessions.allSatisfy { $0["revoked_at"] is NSNull && $0["user_id"] as? String == person })
        for token in [phoneRefresh, phoneNext, tabletRefresh, tabletAccess, key] {
            #expect(!listed.stdout.contains(token), "a token listed")
        }
        let table = try await sandbox.run("serve", "session", "list", person)
        #expect(table.stdout.contains("SESSION") && table.stdout.contains("LAST USED"), "\(table.stdout)")
        let tabletFamily = try #require(sessions.last?["family_id"] as? String)

        let one = try await sandbox.run("serve", "session", "revoke", person, "--family", tabletFamily, "--json")
        #expect(one.status == 0 && one.object["revoked"] as? Int == 1, "\(one.stdout)\(one.stderr)")
        let refused = try await server.request(
            "POST", "/v1/sessions/refresh", body: #"{"refresh_token":"\#(tabletRefresh)"}"#)
        #expect(refused.status == 401, "\(refused.body)")
        let still = try await server.request(
            "POST", "/v1/sessions/refresh", body: #"{"refresh_token":"\#(phoneNext)"}"#)
        #expect(still.status == 200, "the phone's session lives on: \(still.body)")
        let phoneLatest = try #require(still.object["refresh_token"] as? String)

        let all = try await sandbox.run("serve", "session", "revoke", person)
        #expect(all.status == 0 && all.stdout == "revoked 1 session of \(person)\n", "\(all.stdout)\(all.stderr)")
        let out = try await server.request(
            "POST", "/v1/sessions/refresh", body: #"{"refresh_token":"\#(phoneLatest)"}"#)
        #expect(out.status == 401, "\(out.body)")
        let after = try await sandbox.run("serve", "session", "list", person, "--json")
        #expect(((after.json as? [[String: Any]]) ?? []).allSatisfy { $0["revoked_at"] is String }, "\(after.stdout)")

        let unknown = try await sandbox.run("serve", "session", "revoke", person, "--family", "nope", "--json")
        #expect(unknown.status == 66 && unknown.errorJSON["code"] as? String == "session_not_found")
        #expect(try await sandbox.run("serve", "session", "list", "nobody").status == 66)
        _ = try await server.stop()
    }
}
