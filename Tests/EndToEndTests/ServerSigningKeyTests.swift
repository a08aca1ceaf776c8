import Foundation
import Testing

/// Access tokens another service verifies, with nothing but `/.well-known/jwks.json`: PyJWT
/// (scripts/verify-token.py) checks them as an app's backend would, across a rotation and a
/// retirement made with `guestmode serve signing-key`.
@Suite("guestmode serve: signing keys")
struct ServerSigningKeyTests {
    static let issuer = "https://api.example.com"
    static let audience = "voice-app"

    /// What PyJWT makes of `token` against the server's key set: the kid and claims, or nil when refused.
    static func verified(_ token: String, by server: Server, in sandbox: Sandbox) async throws -> [String: Any]? {
        let script = Sandbox.packageRoot.appendingPathComponent("scripts/verify-token.py").path
        let result = try await sandbox.shell(
            "printf '%s' '\(token)' | python3 '\(script)' 'http://\(server.address)/.well-known/jwks.json' '\(issuer)' '\(audience)'"
        )
        if result.status != 0 {
            #expect(result.stderr.hasPrefix("refused: "), "PyJWT itself failed: \(result.stderr)")
            return nil
        }
        return try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    }

    /// The `kid` a compact JWS names in its header.
    static func kid(of token: String) -> String? {
        guard let header = token.split(separator: ".").first else { return nil }
        var base64 = header.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64) else { return nil }
        return (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["kid"] as? String
    }

    /// Asks `until` every 200 ms for up to 15 s: servers read the store's keys again every 5 s.
    static func eventually(_ until: () async throws -> Bool) async throws -> Bool {
        for _ in 0..<75 {
            if try await until() { return true }
            try await Task.sleep(for: .milliseconds(200))
        }
        return false
    }

    @Test(
        "PyJWT verifies a token with the key set alone; after rotate old and new verify, the new names the new kid; after retire the old is 401",
        arguments: ServerTests.Backend.allCases)
    func verifiedElsewhereAcrossRotation(_ backend: ServerTests.Backend) async throws {
        let sandbox = try await backend.sandbox("voice")
        let none = try await sandbox.run("serve", "signing-key", "list", "--json")
        #expect(
            none.status == 0 && (none.json as? [Any])?.isEmpty == true, "no key before the first serve: \(none.stdout)")
        let server = try await Server.start(
            in: sandbox, options: ["--issuer", Self.issuer, "--audience", Self.audience])

        let jwks = try await server.request("GET", "/.well-known/jwks.json")
        #expect(jwks.status == 200, "\(jwks.body)")
        #expect(jwks.headers["cache-control"] == "public, max-age=300")
        let published = try #require(jwks.object["keys"] as? [[String: Any]])
        #expect(published.count == 1)
        #expect(published.first?["kty"] as? String == "EC" && published.first?["alg"] as? String == "ES256")

        let listed = try await sandbox.run("serve", "signing-key", "list", "--json")
        let keys = try #require(listed.json as? [[String: Any]], "\(listed.stdout) \(listed.stderr)")
        #expect(keys.count == 1 && keys.first?["state"] as? String == "current")
        let first = try #require(keys.first?["kid"] as? String)
        #expect(published.first?["kid"] as? String == first)
        #expect(!listed.stdout.contains("sealed") && !listed.stdout.contains("private"), "no private half listed")

        let (guest, before) = try await server.signIn()
        #expect(Self.kid(of: before) == first)
        let checked = try #require(try await Self.verified(before, by: server, in: sandbox), "PyJWT refused it")
        #expect(checked["kid"] as? String == first)
        let claims = try #require(checked["claims"] as? [String: Any])
        #expect(claims["sub"] as? String == guest && claims["is_anonymous"] as? Bool == true)
        #expect(claims["iss"] as? String == Self.issuer && claims["aud"] as? String == Self.audience)

        let rotated = try await sandbox.run("serve", "signing-key", "rotate", "--json")
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let second = try #require(rotated.object["kid"] as? String)
        #expect(second != first && rotated.object["state"] as? String == "current")
        var after = ""
        #expect(
            try await Self.eventually {
                after = try await server.signIn().1
                return Self.kid(of: after) == second
            }, "the running server signs with the new key within its refresh")
        #expect(try await Self.verified(after, by: server, in: sandbox)?["kid"] as? String == second)
        #expect(try await Self.verified(before, by: server, in: sandbox)?["kid"] as? String == first)
        #expect(try await server.request("GET", "/v1/users/\(guest)", token: before).status == 200)
        let both = try await server.request("GET", "/.well-known/jwks.json")
        #expect((both.object["keys"] as? [[String: Any]])?.compactMap { $0["kid"] as? String } == [first, second])

        let current = try await sandbox.run("serve", "signing-key", "retire", second)
        #expect(current.status == 14, "the current key is not retired: \(current.stderr)")
        #expect(current.stderr.contains("rotate first"), "\(current.stderr)")
        let retired = try await sandbox.run("serve", "signing-key", "retire", first, "--json")
        #expect(retired.status == 0 && retired.object["state"] as? String == "retired", "\(retired.stderr)")
        #expect(
            try await Self.eventually {
                try await server.request("GET", "/v1/users/\(guest)", token: before).status == 401
            }, "a retired key's token is refused")
        #expect(try await Self.verified(before, by: server, in: sandbox) == nil, "nor published")
        #expect(try await Self.verified(after, by: server, in: sandbox) != nil)
        let unknown = try await sandbox.run("serve", "signing-key", "retire", "nope")
        #expect(unknown.status == 66, "\(unknown.stderr)")
        let states = try await sandbox.run("serve", "signing-key", "list", "--json")
        #expect((states.json as? [[String: Any]])?.compactMap { $0["state"] as? String } == ["retired", "current"])
        #expect(try await server.stop() == 0)
    }
}
