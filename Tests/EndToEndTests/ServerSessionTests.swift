import Foundation
import Testing

/// A person's sessions over HTTP: signing in again on another device with the identity linked on the
/// first, sign-up without a guest, a backend's sign-in with a key, sign-out, "everywhere", deletion.
@Suite("guestmode serve: sessions by identity, sign-out, deletion")
struct ServerSessionTests {
    @Test(
        "phone links, tablet's link is 409, the tablet signs in with the same ID token and reaches the same data; sign out, delete",
        arguments: ServerTests.Backend.allCases)
    func crossDeviceJourney(_ backend: ServerTests.Backend) async throws {
        let (sandbox, tokens) = try await ServerIdentityTokenTests.prepare(backend)
        let key = try await sandbox.run("serve", "key", "create", "backend", "--scope", "user-data").stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let server = try await Server.start(
            in: sandbox,
            options: [
                "--oidc", "apple=\(ServerIdentityTokenTests.issuer),\(ServerIdentityTokenTests.audience),jwks.json",
            ])
        let idToken = try #require(tokens["valid"])
        let withToken = #"{"provider":"apple","id_token":"\#(idToken)","nonce":"n-1"}"#

        let phone = try await server.request("POST", "/v1/guests", body: #"{"device":"phone"}"#)
        let person = try #require(phone.object["user_id"] as? String)
        let phoneToken = try #require(phone.object["access_token"] as? String)
        let phoneRefresh = try #require(phone.object["refresh_token"] as? String)
        #expect(
            try await server.request(
                "PUT", "/v1/users/\(person)/records/subscriptions/netflix", token: phoneToken, body: #"{"price":9}"#
            ).status == 201)
        let linked = try await server.request(
            "POST", "/v1/users/\(person)/identities", token: phoneToken, body: withToken)
        #expect(linked.status == 201, "\(linked.body)")

        let (tablet, tabletToken) = try await server.signIn()
        let taken = try await server.request(
            "POST", "/v1/users/\(tablet)/identities", token: tabletToken, body: withToken)
        #expect(
            taken.status == 409 && ServerIdentityTokenTests.code(taken) == "identity_already_exists", "\(taken.body)")

        // The next step the 409 tells: sign in with the provider; the same person, the same data.
        let signedIn = try await server.request("POST", "/v1/sessions", body: withToken)
        #expect(signedIn.status == 200, "\(signedIn.body)")
        #expect(signedIn.object["user_id"] as? String == person)
        #expect(signedIn.object["new"] as? Bool == false)
        let session = try #require(signedIn.object["access_token"] as? String)
        let refresh = try #require(signedIn.object["refresh_token"] as? String)
        let records = try await server.request("GET", "/v1/users/\(person)/records/subscriptions", token: session)
        #expect(records.array.map { $0["key"] as? String } == ["netflix"], "\(records.body)")

        // The tablet's guest joins the account: a dry run first, then the merge, with the guest's own token.
        #expect(
            try await server.request(
                "PUT", "/v1/users/\(tablet)/records/subscriptions/disney", token: tabletToken, body: #"{"price":8}"#
            ).status == 201)
        let mergeBody = #"{"guest_token":"\#(tabletToken)","policy":"keep-account","dry_run":true}"#
        let preview = try await server.request("POST", "/v1/users/\(person)/merges", token: session, body: mergeBody)
        #expect(preview.status == 200, "\(preview.body)")
        #expect(try await server.request("GET", "/v1/users/\(tablet)", token: tabletToken).status == 200, "a dry run")
        let unproven = try await server.request(
            "POST", "/v1/users/\(person)/merges", token: session,
            body: #"{"guest":"\#(tablet)","policy":"keep-account"}"#)
        #expect(unproven.status == 403, "a session names a guest by id alone: \(unproven.body)")
        let merged = try await server.request(
            "POST", "/v1/users/\(person)/merges", token: session,
            body: mergeBody.replacingOccurrences(of: "true", with: "false"))
        #expect(merged.status == 200, "\(merged.body)")
        #expect(
            try await server.request("GET", "/v1/users/\(tablet)", token: tabletToken).status == 404,
            "the guest is gone")
        let both = try await server.request("GET", "/v1/users/\(person)/records/subscriptions", token: session)
        #expect(Set(both.array.compactMap { $0["key"] as? String }) == ["netflix", "disney"], "\(both.body)")
        let me = try await server.request("GET", "/v1/me", token: session)
        #expect((me.object["user"] as? [String: Any])?["user_id"] as? String == person, "\(me.body)")
        #expect(try await server.request("GET", "/v1/me", token: key).status == 400)

        // Refused identities: nothing signs in without one that verifies, and a subject needs a key.
        let expired = try await server.request(
            "POST", "/v1/sessions",
            body: #"{"provider":"apple","id_token":"\#(tokens["expired"] ?? "")","nonce":"n-1"}"#)
        #expect(expired.status == 401 && ServerIdentityTokenTests.code(expired) == "id_token_expired")
        let bare = try await server.request(
            "POST", "/v1/sessions", body: #"{"provider":"apple","subject":"apple-sub-1"}"#)
        #expect(bare.status == 401, "\(bare.body)")
        let backend = try await server.request(
            "POST", "/v1/sessions", token: key, body: #"{"provider":"apple","subject":"apple-sub-1"}"#)
        #expect(backend.status == 200 && backend.object["user_id"] as? String == person, "\(backend.body)")

        // A sign-up without a guest: an identity no user holds makes an account user.
        let newcomer = try await server.request(
            "POST", "/v1/sessions", body: #"{"provider":"apple","id_token":"\#(tokens["third"] ?? "")","nonce":"n-1"}"#)
        #expect(newcomer.status == 201, "\(newcomer.body)")
        #expect(newcomer.object["new"] as? Bool == true && newcomer.object["state"] as? String == "linked")
        #expect(newcomer.object["user_id"] as? String != person)

        // Sign out: that session's refresh token is dead; the phone's is not.
        let out = try await server.request("POST", "/v1/sessions/revoke", body: #"{"refresh_token":"\#(refresh)"}"#)
        #expect(out.status == 200 && out.object["revoked"] as? Int == 1, "\(out.body)")
        let afterOut = try await server.request(
            "POST", "/v1/sessions/refresh", body: #"{"refresh_token":"\#(refresh)"}"#)
        #expect(afterOut.status == 401, "\(afterOut.body)")
        let phoneRefreshed = try await server.request(
            "POST", "/v1/sessions/refresh", body: #"{"refresh_token":"\#(phoneRefresh)"}"#)
        #expect(phoneRefreshed.status == 200, "\(phoneRefreshed.body)")
        let phoneNext = try #require(phoneRefreshed.object["refresh_token"] as? String)

        // Everywhere, by a key: the phone's session goes too.
        let everywhere = try await server.request("DELETE", "/v1/users/\(person)/sessions", token: key)
        #expect(everywhere.status == 200 && (everywhere.object["revoked"] as? Int ?? 0) >= 1, "\(everywhere.body)")
        #expect(
            try await server.request("POST", "/v1/sessions/refresh", body: #"{"refresh_token":"\#(phoneNext)"}"#)
                .status == 401)

        // Deletion by the person's own session: the user, its data and sessions are gone.
        let deleted = try await server.request("DELETE", "/v1/users/\(person)", token: session)
        #expect(deleted.status == 200 && deleted.object["deleted"] as? Bool == true, "\(deleted.body)")
        #expect(try await server.request("GET", "/v1/me", token: session).status == 404)
        #expect(try await server.request("GET", "/v1/users/\(person)", token: key).status == 404)
        let again = try await server.request("POST", "/v1/sessions", body: withToken)
        #expect(
            again.status == 201 && again.object["user_id"] as? String != person,
            "a deleted identity is free again: \(again.body)")
        #expect(try await server.stop() == 0)
    }

    @Test(
        "a tablet's guest migrated into the account: plan, safety backup, a retry refused; its losing record restored by its owner only",
        arguments: ServerTests.Backend.allCases)
    func migrationAndConflicts(_ backend: ServerTests.Backend) async throws {
        let sandbox = try await backend.sandbox("subscriptions")
        let key = try await sandbox.run("serve", "key", "create", "backend", "--scope", "user-data").stdout
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let server = try await Server.start(in: sandbox, options: ["--backups-dir", sandbox.path("backups")])
        let account = try await server.request(
            "POST", "/v1/sessions", token: key, body: #"{"provider":"apple","subject":"apple-sub-7"}"#)
        #expect(account.status == 201, "\(account.body)")
        let person = try #require(account.object["user_id"] as? String)
        let session = try #require(account.object["access_token"] as? String)
        let tablet = try await server.request("POST", "/v1/guests")
        let guest = try #require(tablet.object["user_id"] as? String)
        let guestRefresh = try #require(tablet.object["refresh_token"] as? String)
        let guestToken = try #require(tablet.object["access_token"] as? String)
        for (user, token, price) in [(person, session, 9), (guest, guestToken, 11)] {
            let put = try await server.request(
                "PUT", "/v1/users/\(user)/records/subscriptions/netflix", token: token, body: #"{"price":\#(price)}"#)
            #expect(put.status == 201, "\(put.body)")
        }
        let path = "/v1/users/\(person)/migrations"

        let plan = try await server.request(
            "POST", path, token: session, body: #"{"guest_token":"\#(guestRefresh)","dry_run":true}"#)
        #expect(plan.status == 200 && !((plan.object["steps"] as? [Any]) ?? []).isEmpty, "\(plan.body)")
        #expect(try await server.request("GET", "/v1/users/\(guest)", token: guestToken).status == 200, "a dry run")
        let both = try await server.request(
            "POST", path, token: session, body: #"{"guest_token":"\#(guestRefresh)","dry_run":true,"resume":true}"#)
        #expect(both.status == 400, "\(both.body)")
        let unproven = try await server.request("POST", path, token: session, body: #"{"guest":"\#(guest)"}"#)
        #expect(unproven.status == 403, "a session names a guest by id alone: \(unproven.body)")
        let forged = try await server.request("POST", path, token: session, body: #"{"guest_token":"not-a-token"}"#)
        #expect(forged.status == 401, "\(forged.body)")

        let migrated = try await server.request(
            "POST", path, token: session, body: #"{"guest_token":"\#(guestRefresh)"}"#)
        #expect(migrated.status == 200, "\(migrated.body)")
        let journal = try #require(migrated.object["journal"] as? [String: Any])
        #expect(journal["status"] as? String == "done")
        let backupName = try #require(journal["backup_path"] as? String)
        #expect(!backupName.contains("/"), "the answer names no server path: \(backupName)")
        let safety = try FileManager.default.contentsOfDirectory(atPath: sandbox.path("backups/\(person)/safety"))
        #expect(safety == [backupName])
        let listed = try await server.request("GET", "/v1/users/\(person)/backups", token: session)
        #expect(listed.status == 200 && listed.array.isEmpty, "a safety backup is not a pushed one: \(listed.body)")
        #expect(try await server.request("GET", "/v1/users/\(guest)", token: key).status == 404, "the guest moved")
        let retried = try await server.request("POST", path, token: session, body: #"{"guest_token":"\#(guestToken)"}"#)
        #expect(
            retried.status == 409 && ServerIdentityTokenTests.code(retried) == "already_migrated", "\(retried.body)")

        // The record that lost is the account's to list and restore, nobody else's.
        let conflicts = try await server.request("GET", "/v1/users/\(person)/merge-conflicts", token: session)
        #expect(conflicts.status == 200 && conflicts.array.count == 1, "\(conflicts.body)")
        let id = try #require(conflicts.array.first?["conflict_id"] as? Int)
        let (stranger, strangerToken) = try await server.signIn()
        let stolen = try await server.request(
            "POST", "/v1/users/\(stranger)/merge-conflicts/\(id)/restore", token: strangerToken)
        #expect(
            stolen.status == 404 && ServerIdentityTokenTests.code(stolen) == "conflict_not_found", "\(stolen.body)")
        #expect(
            try await server.request("POST", "/v1/users/\(person)/merge-conflicts/1x/restore", token: session).status
                == 400)
        let restored = try await server.request(
            "POST", "/v1/users/\(person)/merge-conflicts/\(id)/restore", token: session,
            body: #"{"key":"netflix-tablet"}"#)
        #expect(
            restored.status == 200 && restored.object["restored_key"] as? String == "netflix-tablet", "\(restored.body)"
        )
        let records = try await server.request("GET", "/v1/users/\(person)/records/subscriptions", token: session)
        #expect(
            Set(records.array.compactMap { $0["key"] as? String }) == ["netflix", "netflix-tablet"], "\(records.body)")
        let twice = try await server.request(
            "POST", "/v1/users/\(person)/merge-conflicts/\(id)/restore", token: session)
        #expect(twice.status == 404, "\(twice.body)")

        let deleted = try await server.request("DELETE", "/v1/users/\(person)", token: session)
        #expect(deleted.status == 200, "\(deleted.body)")
        #expect(
            !FileManager.default.fileExists(atPath: sandbox.path("backups/\(person)")), "the safety backup goes too")
        #expect(try await server.stop() == 0)
    }
}
