import Foundation
import Testing

/// The server as an anonymous attacker meets it (issue "lets no one in without a credential"): no
/// session from a device id, no input repaired into another, no type coerced, the text rule on reads,
/// nothing spent on a malformed request, no token accepted under another algorithm.
@Suite("guestmode serve against an attacker")
struct ServerTrustTests {
    @Test(
        "a device id is no credential: after the guest linked, the same device signs in as a stranger",
        arguments: ServerTests.Backend.allCases)
    func deviceIsNoCredential(_ backend: ServerTests.Backend) async throws {
        let sandbox = try await backend.sandbox("subscriptions")
        let created = try await sandbox.run("serve", "key", "create", "backend", "--scope", "user-data")
        try #require(created.status == 0, "\(created.stderr)")
        let key = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let server = try await Server.start(in: sandbox)

        let first = try await server.request("POST", "/v1/guests", body: #"{"device":"phone-1"}"#)
        #expect(first.status == 201, "\(first.body)")
        let owner = try #require(first.object["user_id"] as? String)
        let ownerToken = try #require(first.object["access_token"] as? String)
        let put = try await server.request(
            "PUT", "/v1/users/\(owner)/records/subscriptions/netflix", token: ownerToken, body: #"{"price":15.49}"#)
        #expect(put.status == 201, "\(put.body)")
        let linked = try await server.request(
            "POST", "/v1/users/\(owner)/identities", token: key, body: #"{"provider":"apple","subject":"001234.abcd"}"#)
        #expect(linked.status == 201, "\(linked.body)")

        // Anyone who learned the device id (analytics, a crash report) and signs in with it.
        let stranger = try await server.request("POST", "/v1/guests", body: #"{"device":"phone-1"}"#)
        #expect(stranger.status == 201, "\(stranger.body)")
        let strangerID = try #require(stranger.object["user_id"] as? String)
        let strangerToken = try #require(stranger.object["access_token"] as? String)
        #expect(strangerID != owner)
        #expect(stranger.object["state"] as? String == "anonymous")
        let claims = try #require(Self.claims(of: strangerToken))
        #expect(claims["sub"] as? String == strangerID)
        #expect(claims["is_anonymous"] as? Bool == true)

        for (method, path, body) in [
            ("GET", "/v1/users/\(owner)", nil), ("GET", "/v1/users/\(owner)/records/subscriptions", nil),
            ("GET", "/v1/users/\(owner)/records/subscriptions/netflix", nil),
            ("PUT", "/v1/users/\(owner)/records/subscriptions/mine", "{}"),
            ("DELETE", "/v1/users/\(owner)/records/subscriptions/netflix", nil),
        ] {
            let reached = try await server.request(method, path, token: strangerToken, body: body)
            #expect(
                reached.status == 404, "\(method) \(path) with the stranger's token: \(reached.status) \(reached.body)")
        }
        let kept = try await server.request("GET", "/v1/users/\(owner)/records/subscriptions", token: ownerToken)
        #expect(kept.array.map { $0["key"] as? String } == ["netflix"], "\(kept.body)")
        let account = try await server.request("GET", "/v1/users/\(owner)", token: ownerToken)
        #expect((account.object["user"] as? [String: Any])?["state"] as? String == "linked", "\(account.body)")
        #expect(try await server.stop() == 0)
    }

    @Test(
        "an Idempotency-Key is 1-255 printable ASCII characters, given once; anything else is 400 and records nothing")
    func idempotencyKeysAreNeverRepaired() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let server = try await Server.start(in: sandbox)
        let (guest, token) = try await server.signIn()
        let path = "/v1/users/\(guest)/meters/api_minutes/use"
        let body = Array(#"{"amount":1}"#.utf8)
        func use(_ keys: [[UInt8]]) throws -> Server.Reply? {
            let head =
                [
                    Array("POST \(path) HTTP/1.1".utf8), Array("Host: x".utf8),
                    Array("Authorization: Bearer \(token)".utf8),
                    Array("Content-Type: application/json".utf8),
                ]
                + keys.map { Array("Idempotency-Key: ".utf8) + $0 }
            return try RawHTTP.exchange(server.address, head: head, body: body)
        }
        // Two keys that differ only in invalid UTF-8 were one key once repaired: the second use was
        // answered as a replay and never recorded.
        let keys: [[UInt8]] = [
            Array("k".utf8) + [0xFF] + Array("1".utf8), Array("k".utf8) + [0xFE] + Array("1".utf8),
            Array("k".utf8) + [0x01], Array("k".utf8) + [0x7F], Array("é".utf8),
            Array(repeating: UInt8(ascii: "k"), count: 256),
        ]
        for key in keys {
            let refused = try #require(try use([key]), "no answer for key \(key)")
            #expect(refused.status == 400, "key \(key): \(refused.status) \(refused.body)")
        }
        let twice = try #require(try use([Array("a".utf8), Array("b".utf8)]))
        #expect(twice.status == 400, "\(twice.body)")
        #expect((twice.object["error"] as? [String: Any])?["code"] as? String == "invalid_idempotency_key")
        let status = try await server.request("GET", "/v1/users/\(guest)/meters/api_minutes", token: token)
        #expect(status.object["used"] as? Int == 0, "a refused key recorded a use: \(status.body)")

        let longest = String(repeating: "k", count: 255)
        let accepted = try #require(try use([Array(longest.utf8)]))
        #expect(accepted.status == 200, "\(accepted.body)")
        let replayed = try #require(try use([Array(longest.utf8)]))
        #expect(replayed.status == 200)
        #expect(replayed.headers["idempotent-replayed"] == "true")
        let reused = try await server.request(
            "POST", path, token: token, body: #"{"amount":2}"#, headers: ["Idempotency-Key": longest])
        #expect(reused.status == 422, "\(reused.body)")
        #expect(!reused.body.contains(longest), "the key is echoed: \(reused.body)")
        #expect(try await server.stop() == 0)
    }

    @Test("members have their documented types: a count given as a string is 422, nothing counted")
    func countMustBeANumber() async throws {
        let sandbox = try await Sandbox.withStore("subscriptions")
        let server = try await Server.start(in: sandbox)
        let (guest, token) = try await server.signIn()
        let refused = try await server.request(
            "POST", "/v1/users/\(guest)/events", token: token, body: #"{"action":"app_opened","count":"5"}"#)
        #expect(refused.status == 422, "\(refused.body)")
        #expect((refused.object["error"] as? [String: Any])?["code"] as? String == "invalid_json")
        let counters = try await server.request("GET", "/v1/users/\(guest)/counters", token: token)
        #expect(!counters.body.contains("app_opened"), "\(counters.body)")
        let counted = try await server.request(
            "POST", "/v1/users/\(guest)/events", token: token, body: #"{"action":"app_opened","count":5}"#)
        #expect(counted.status == 200, "\(counted.body)")
        #expect(counted.object["total"] as? Int == 5)
        #expect(try await server.stop() == 0)
    }

    @Test("the text rule runs on every path segment and query value, reads included")
    func textRuleOnReads() async throws {
        let sandbox = try await Sandbox.withStore("subscriptions")
        let server = try await Server.start(in: sandbox)
        let (guest, token) = try await server.signIn()
        let put = try await server.request(
            "PUT", "/v1/users/\(guest)/records/subscriptions/c1", token: token, body: #"{"price":1}"#)
        #expect(put.status == 201, "\(put.body)")
        let withNul = try await server.request("GET", "/v1/users/\(guest)/records/subscriptions/c1%00", token: token)
        #expect(withNul.status == 422, "c1%00 found \(withNul.body)")
        #expect((withNul.object["error"] as? [String: Any])?["code"] as? String == "nul_in_text")
        let invalid = try await server.request("GET", "/v1/users/\(guest)/records/subscriptions/c1%FF", token: token)
        #expect(invalid.status == 400, "\(invalid.body)")
        let query = try await server.request(
            "GET", "/v1/users/\(guest)/prompts/next?trigger=guest_cap_refused%00", token: token)
        #expect(query.status == 422, "\(query.body)")
        let badQuery = try await server.request("GET", "/v1/users/\(guest)/prompts/next?trigger=%FF", token: token)
        #expect(badQuery.status == 400, "\(badQuery.body)")
        #expect(try await server.stop() == 0)
    }

    @Test("a sign-in refused as malformed takes nothing from the address's bucket")
    func malformedSignInIsFree() async throws {
        let sandbox = try await Sandbox.withStore("subscriptions")
        let server = try await Server.start(in: sandbox, options: ["--guests-per-hour", "2"])
        for body in [#"{"device":""}"#, #"{"device":"a\u0001b"}"#, #"{"device":5}"#, "[1]", "{"] {
            let refused = try await server.request("POST", "/v1/guests", body: body)
            #expect(
                (400..<500).contains(refused.status) && refused.status != 429,
                "\(body): \(refused.status) \(refused.body)")
        }
        for _ in 1...2 {
            #expect(try await server.request("POST", "/v1/guests", body: #"{"device":"d"}"#).status == 201)
        }
        #expect(try await server.request("POST", "/v1/guests").status == 429)
        #expect(try await server.stop() == 0)
    }

    @Test(
        "an access token is verified only as ES256 with a published key of this issuer and audience: forgeries are 401"
    )
    func tokenAlgorithmIsTheServers() async throws {
        let sandbox = try await Sandbox.withStore("subscriptions")
        let server = try await Server.start(in: sandbox)
        let (guest, token) = try await server.signIn()
        #expect(try await server.request("GET", "/v1/users/\(guest)", token: token).status == 200)
        // Forges tokens with what anyone has: the token's own parts and the published public key.
        let forged = try await sandbox.shell(
            """
            python3 - <<'EOF'
            import base64, hashlib, hmac, json, urllib.request
            import jwt
            from cryptography.hazmat.primitives import serialization
            from cryptography.hazmat.primitives.asymmetric import ec
            token = '\(token)'
            header, payload, signature = token.split('.')
            b64 = lambda b: base64.urlsafe_b64encode(b).rstrip(b'=').decode()
            unb64 = lambda s: base64.urlsafe_b64decode(s + '=' * (-len(s) % 4))
            jwk = json.load(urllib.request.urlopen('http://\(server.address)/.well-known/jwks.json'))['keys'][0]
            kid = jwk['kid']
            public = jwt.algorithms.ECAlgorithm.from_jwk(json.dumps(jwk))
            pem = public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
            raw = public.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
            claims = json.loads(unb64(payload))
            def hs256(secret):
                signing = b64(json.dumps({'alg': 'HS256', 'typ': 'JWT', 'kid': kid}).encode()) + '.' + payload
                return signing + '.' + b64(hmac.new(secret, signing.encode(), hashlib.sha256).digest())
            other = ec.generate_private_key(ec.SECP256R1())
            flipped = ('A' if signature[0] != 'A' else 'B') + signature[1:]
            for what, forgery in [
                ('tampered signature', header + '.' + payload + '.' + flipped),
                ('tampered claims', header + '.' + b64(json.dumps(dict(claims, is_anonymous=False)).encode()) + '.' + signature),
                ('alg none', b64(json.dumps({'alg': 'none', 'typ': 'JWT', 'kid': kid}).encode()) + '.' + payload + '.'),
                ('alg none, the signature kept', b64(json.dumps({'alg': 'none', 'kid': kid}).encode()) + '.' + payload + '.' + signature),
                ('HS256 keyed with the public PEM', hs256(pem)),
                ('HS256 keyed with the public point', hs256(raw)),
                ('HS256 keyed with the JWK', hs256(json.dumps(jwk).encode())),
                ('unknown kid', jwt.encode(claims, other, algorithm='ES256', headers={'kid': 'AAAAAAAAAAAAAAAA'})),
                ('the real kid, another key', jwt.encode(claims, other, algorithm='ES256', headers={'kid': kid})),
                ('no kid', jwt.encode(claims, other, algorithm='ES256')),
                ('ES384 header', b64(json.dumps({'alg': 'ES384', 'typ': 'JWT', 'kid': kid}).encode()) + '.' + payload + '.' + signature),
            ]:
                print(what + '\t' + forgery)
            EOF
            """)
        let lines = forged.stdout.split(separator: "\n").map { $0.split(separator: "\t").map(String.init) }
        try #require(lines.count == 11, "\(forged.stderr)")
        for line in lines {
            let refused = try await server.request("GET", "/v1/users/\(guest)", token: line[1])
            #expect(refused.status == 401, "\(line[0]): \(refused.status)")
            #expect(refused.headers["www-authenticate"] == "Bearer")
        }

        // Another issuer or audience on the same store signs with the same key, and is still refused.
        for option in [["--issuer", "https://other.example.com"], ["--audience", "other-app"]] {
            let other = try await Server.start(in: sandbox, options: option)
            let (otherGuest, otherToken) = try await other.signIn()
            #expect(try await other.request("GET", "/v1/users/\(otherGuest)", token: otherToken).status == 200)
            #expect(try await other.request("GET", "/v1/users/\(guest)", token: token).status == 401, "\(option)")
            #expect(try await server.request("GET", "/v1/users/\(otherGuest)", token: otherToken).status == 401)
            #expect(try await other.stop() == 0)
        }
        #expect(try await server.request("GET", "/v1/users/\(guest)", token: token).status == 200)
        #expect(try await server.stop() == 0)
    }

    @Test(
        "an error body names nothing of the server: the store, its folder, a temporary file, the operator's message is logged"
    )
    func errorBodiesNameNothingInside() async throws {
        let sandbox = try await Sandbox.withStore("subscriptions")
        let created = try await sandbox.run("serve", "key", "create", "ops", "--scope", "admin")
        let key = created.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let backups = sandbox.path("pushed")
        let server = try await Server.start(in: sandbox, options: ["--backups-dir", backups])
        let (guest, token) = try await server.signIn()
        // An archive refused on upload, a bad MOVE, a damaged import: each error body is scanned at stop().
        let upload = try await server.request(
            "PUT", "/v1/users/\(guest)/backups/x.part", token: token, body: "not an archive")
        #expect((400..<500).contains(upload.status), "\(upload.status) \(upload.body)")
        let moved = try await server.request(
            "MOVE", "/v1/users/\(guest)/backups/x.part", token: token,
            headers: ["Destination": "/elsewhere/\(sandbox.directory.path)/y"])
        #expect((400..<500).contains(moved.status), "\(moved.body)")
        let imported = try await server.request("PUT", "/v1/backup", token: key, body: "not an archive")
        #expect((400..<500).contains(imported.status), "\(imported.body)")
        let requestID = try #require(imported.headers["x-request-id"])
        #expect(try await server.stop() == 0)
        // The operator's message, which names what the caller was not told, is on the request's log line.
        let log = try String(decoding: sandbox.read("serve.log"), as: UTF8.self)
        let line = try #require(log.split(separator: "\n").first { $0.contains(requestID) }, "\(log)")
        #expect(line.contains("\"error_code\""), "\(line)")
    }

    /// The claims of a compact JWT, undecoded by any check.
    static func claims(of token: String) -> [String: Any]? {
        let parts = token.split(separator: ".")
        guard parts.count == 3 else { return nil }
        var base64 = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64).flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
    }
}
