import Foundation
import Testing

/// The four apps' person across devices, over HTTP, on both backends: each step is what the app does
/// next after the answer before it, the 409 of a second device's link included.
@Suite("guestmode serve: a person's whole life, for each profile")
struct ServerJourneyTests {
    /// Each profile's collection for the person's data, and how the second device's guest joins: the
    /// subscriptions and recipes apps merge, the habits and voice apps run the journaled migration.
    static let profiles: [(profile: String, collection: String, migrates: Bool)] = [
        ("subscriptions", "subscriptions", false), ("recipes", "recipes", false),
        ("habits", "habits", true), ("voice", "commands", true),
    ]

    @Test(
        "phone guest, link, tablet guest, 409, sign in with the same ID token, the same data, dry run then merge or migrate, sign out, refresh refused, delete, 404, user.deleted delivered",
        arguments: ServerTests.Backend.allCases, 0..<4)
    func crossDevice(_ backend: ServerTests.Backend, _ index: Int) async throws {
        let (profile, collection, migrates) = Self.profiles[index]
        let sandbox = backend == .sqlite ? try Sandbox() : try Sandbox.onPostgres()
        // The receiver binds its own port first: a port chosen before would be free for anyone until then.
        let receiver = try await sandbox.startReceiver()
        defer { receiver.stop() }
        try await sandbox.initialise(profile, sendingEventsTo: receiver.port)
        let tokens = try await ServerIdentityTokenTests.tokens(in: sandbox)
        let server = try await Server.start(
            in: sandbox,
            options: [
                "--oidc", "apple=\(ServerIdentityTokenTests.issuer),\(ServerIdentityTokenTests.audience),jwks.json",
                "--backups-dir", sandbox.path("backups"),
            ])
        let withToken = #"{"provider":"apple","id_token":"\#(try #require(tokens["valid"]))","nonce":"n-1"}"#
        func put(_ user: String, _ token: String, _ key: String) async throws {
            let path = "/v1/users/\(user)/records/\(collection)/\(key)"
            let stored = try await server.request("PUT", path, token: token, body: #"{"name":"\#(key)"}"#)
            #expect(stored.status == 201, "\(profile) \(path): \(stored.body)")
        }
        func keys(_ user: String, _ token: String) async throws -> Set<String> {
            let listed = try await server.request("GET", "/v1/users/\(user)/records/\(collection)", token: token)
            #expect(listed.status == 200, "\(listed.body)")
            return Set(listed.array.compactMap { $0["key"] as? String })
        }

        let phone = try await server.request("POST", "/v1/guests")
        let person = try #require(phone.object["user_id"] as? String)
        let phoneToken = try #require(phone.object["access_token"] as? String)
        let phoneRefresh = try #require(phone.object["refresh_token"] as? String)
        try await put(person, phoneToken, "from-phone")
        let linked = try await server.request(
            "POST", "/v1/users/\(person)/identities", token: phoneToken, body: withToken)
        #expect(linked.status == 201, "\(profile): \(linked.body)")

        let tablet = try await server.request("POST", "/v1/guests")
        let guest = try #require(tablet.object["user_id"] as? String)
        let guestToken = try #require(tablet.object["access_token"] as? String)
        let guestRefresh = try #require(tablet.object["refresh_token"] as? String)
        try await put(guest, guestToken, "from-tablet")
        let taken = try await server.request(
            "POST", "/v1/users/\(guest)/identities", token: guestToken, body: withToken)
        #expect(taken.status == 409 && ServerIdentityTokenTests.code(taken) == "identity_already_exists")

        let signedIn = try await server.request("POST", "/v1/sessions", body: withToken)
        #expect(signedIn.status == 200 && signedIn.object["user_id"] as? String == person, "\(signedIn.body)")
        let session = try #require(signedIn.object["access_token"] as? String)
        let refresh = try #require(signedIn.object["refresh_token"] as? String)
        #expect(try await keys(person, session) == ["from-phone"])

        let route = migrates ? "migrations" : "merges"
        let policy = migrates ? "" : #","policy":"keep-account""#
        let preview = try await server.request(
            "POST", "/v1/users/\(person)/\(route)", token: session,
            body: #"{"guest_token":"\#(guestRefresh)","dry_run":true\#(policy)}"#)
        #expect(preview.status == 200, "\(profile) dry run: \(preview.body)")
        #expect(try await keys(person, session) == ["from-phone"], "a dry run changes nothing")
        let joined = try await server.request(
            "POST", "/v1/users/\(person)/\(route)", token: session,
            body: #"{"guest_token":"\#(guestRefresh)"\#(policy)}"#)
        #expect(joined.status == 200, "\(profile) \(route): \(joined.body)")
        #expect(try await keys(person, session) == ["from-phone", "from-tablet"])
        #expect(try await server.request("GET", "/v1/users/\(guest)", token: guestToken).status == 404)

        let out = try await server.request("POST", "/v1/sessions/revoke", body: #"{"refresh_token":"\#(refresh)"}"#)
        #expect(out.status == 200, "\(out.body)")
        let refused = try await server.request(
            "POST", "/v1/sessions/refresh", body: #"{"refresh_token":"\#(refresh)"}"#)
        #expect(refused.status == 401, "\(refused.body)")

        let deleted = try await server.request("DELETE", "/v1/users/\(person)", token: session)
        #expect(deleted.status == 200, "\(deleted.body)")
        #expect(try await server.request("GET", "/v1/me", token: session).status == 404)
        let phoneAfter = try await server.request(
            "POST", "/v1/sessions/refresh", body: #"{"refresh_token":"\#(phoneRefresh)"}"#)
        #expect(phoneAfter.status == 401, "every session of a deleted user is dead: \(phoneAfter.body)")

        // The server's delivery pass runs every second; the receiver logs what arrived.
        var delivered = false
        for _ in 0..<100 where !delivered {
            delivered = try sandbox.received().contains {
                $0.type == "user.deleted" && $0.userID == person && $0.status == 200 && $0.isVerified
            }
            if !delivered { try await Task.sleep(for: .milliseconds(100)) }
        }
        let arrived = try sandbox.received().map(\.type)
        #expect(delivered, "\(profile): user.deleted delivered; arrived: \(arrived)")
        #expect(try await server.stop() == 0)
    }
}
