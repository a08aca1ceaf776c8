import Foundation
import GuestModeCommandLine
import Testing

/// Linking with a provider's OpenID Connect ID token (`serve --oidc`): keys
/// made by the test (python3's `cryptography`), a JWKS file or a JWKS served
/// on loopback, tokens signed right and every way wrong.
@Suite("guestmode serve: linking with ID tokens")
struct ServerIdentityTokenTests {
    static let issuer = "https://appleid.apple.com"
    static let audience = "com.example.habits"
    static let now = "2026-11-03T10:00:00Z"

    /// Makes keys, writes `jwks.json` (the public halves of an RSA key `r1`
    /// and a P-256 key `e1`) and `tokens.json`, one token per case. The
    /// signing here is the test's own; the server verifies with jwt-kit.
    static let script = #"""
        import base64, hashlib, hmac, json, sys, time, datetime
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
        from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

        issuer, audience, now_text = sys.argv[1:4]
        now = int(datetime.datetime.fromisoformat(now_text.replace("Z", "+00:00")).timestamp())

        def b64(data):
            return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

        def number(value):
            return b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))

        rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        other_rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        ec_key = ec.generate_private_key(ec.SECP256R1())
        public = rsa_key.public_key().public_numbers()
        ec_public = ec_key.public_key().public_numbers()
        enc_public = other_rsa.public_key().public_numbers()
        jwks = {"keys": [
            {"kty": "RSA", "kid": "r1", "use": "sig", "alg": "RS256", "n": number(public.n), "e": number(public.e)},
            {"kty": "RSA", "kid": "x1", "use": "enc", "alg": "RS256", "n": number(enc_public.n),
             "e": number(enc_public.e)},
            {"kty": "RSA", "kid": "x2", "key_ops": ["encrypt"], "n": number(enc_public.n), "e": number(enc_public.e)},
            {"kty": "EC", "kid": "e1", "use": "sig", "crv": "P-256", "x": b64(ec_public.x.to_bytes(32, "big")),
             "y": b64(ec_public.y.to_bytes(32, "big"))},
        ]}
        json.dump(jwks, open("jwks.json", "w"))
        pem = rsa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

        def token(claims, alg="RS256", kid="r1", key=rsa_key):
            header = {"alg": alg, "typ": "JWT"}
            if kid is not None:
                header["kid"] = kid
            signing = (b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())).encode()
            if alg == "RS256":
                signature = key.sign(signing, padding.PKCS1v15(), hashes.SHA256())
            elif alg == "ES256":
                r, s = decode_dss_signature(key.sign(signing, ec.ECDSA(hashes.SHA256())))
                signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
            elif alg == "HS256":
                signature = hmac.new(key, signing, hashlib.sha256).digest()
            else:
                signature = b""
            return signing.decode() + "." + b64(signature)

        def claims(sub="apple-sub-1", **changes):
            base = {"iss": issuer, "aud": audience, "sub": sub, "iat": now - 60, "exp": now + 600,
                    "nonce": "n-1", "email": "ada@example.com"}
            base.update(changes)
            return base

        valid = token(claims())
        head, body, signature = valid.split(".")
        tampered_body = b64(json.dumps(claims(sub="someone-else")).encode())
        tokens = {
            "valid": valid,
            "valid_ec": token(claims(sub="apple-sub-2", nonce=None), alg="ES256", kid="e1", key=ec_key),
            "third": token(claims(sub="apple-sub-3")),
            "within_leeway": token(claims(sub="apple-sub-4", exp=now - 30)),
            "expired": token(claims(exp=now - 120)),
            "wrong_issuer": token(claims(iss="https://accounts.example.com")),
            "wrong_audience": token(claims(aud="com.example.other")),
            "wrong_nonce": token(claims(nonce="n-2")),
            "other_key": token(claims(), key=other_rsa),
            "encryption_key": token(claims(), kid="x1", key=other_rsa),
            "encrypt_only_key": token(claims(), kid="x2", key=other_rsa),
            "unknown_kid": token(claims(), kid="r9"),
            "alg_none": token(claims(), alg="none"),
            "hs256_with_public_key": token(claims(), alg="HS256", key=pem),
            "rs256_named_for_ec_key": token(claims(), alg="RS256", kid="e1"),
            "tampered": head + "." + tampered_body + "." + signature,
            "not_a_jwt": "not-a-token",
        }
        json.dump(tokens, open("tokens.json", "w"))
        """#

    /// A sandbox with a key set and tokens, and the tokens by case.
    static func prepare(_ backend: ServerTests.Backend) async throws -> (Sandbox, [String: String]) {
        let sandbox = try await backend.sandbox("subscriptions")
        return (sandbox, try await tokens(in: sandbox))
    }

    /// The provider's key set (jwks.json) and its ID tokens by name, made in `sandbox`, whose clock is
    /// pinned to when they were issued.
    static func tokens(in sandbox: Sandbox) async throws -> [String: String] {
        sandbox.environment["GUESTMODE_NOW"] = now
        try sandbox.write("idtokens.py", script)
        let made = try await sandbox.shell("python3 idtokens.py '\(issuer)' '\(audience)' '\(now)'")
        #expect(made.status == 0, "\(made.stderr)")
        return try #require(
            try JSONSerialization.jsonObject(with: sandbox.read("tokens.json")) as? [String: String])
    }

    static func code(_ reply: Server.Reply) -> String? {
        (reply.object["error"] as? [String: Any])?["code"] as? String
    }

    @Test(
        "a guest links its own user with a verified ID token; every bad token is 401 with its code",
        arguments: ServerTests.Backend.allCases)
    func linkWithIDToken(_ backend: ServerTests.Backend) async throws {
        let (sandbox, tokens) = try await Self.prepare(backend)
        let server = try await Server.start(
            in: sandbox, options: ["--oidc", "apple=\(Self.issuer),\(Self.audience),jwks.json"])
        let (alice, aliceToken) = try await server.signIn()
        let path = "/v1/users/\(alice)/identities"
        func link(_ name: String, nonce: String? = "n-1", provider: String = "apple") async throws -> Server.Reply {
            let token = try #require(tokens[name])
            let nonceMember = nonce.map { #","nonce":"\#($0)""# } ?? ""
            return try await server.request(
                "POST", path, token: aliceToken,
                body: #"{"provider":"\#(provider)","id_token":"\#(token)"\#(nonceMember)}"#)
        }
        for (name, code) in [
            ("expired", "id_token_expired"), ("wrong_issuer", "id_token_issuer_mismatch"),
            ("wrong_audience", "id_token_audience_mismatch"), ("wrong_nonce", "id_token_nonce_mismatch"),
            ("other_key", "id_token_invalid"), ("encryption_key", "id_token_invalid"),
            ("encrypt_only_key", "id_token_invalid"), ("unknown_kid", "id_token_invalid"),
            ("alg_none", "id_token_invalid"),
            ("hs256_with_public_key", "id_token_invalid"), ("rs256_named_for_ec_key", "id_token_invalid"),
            ("tampered", "id_token_invalid"), ("not_a_jwt", "id_token_invalid"),
        ] {
            let refused = try await link(name)
            #expect(refused.status == 401, "\(name): \(refused.status) \(refused.body)")
            #expect(Self.code(refused) == code, "\(name): \(refused.body)")
            #expect(refused.headers["www-authenticate"] == "Bearer")
        }
        let unconfigured = try await link("valid", provider: "google")
        #expect(unconfigured.status == 400, "\(unconfigured.body)")
        #expect(Self.code(unconfigured) == "identity_provider_not_configured")
        let anonymous = try await server.request(
            "POST", path, body: #"{"provider":"apple","id_token":"\#(tokens["valid"] ?? "")"}"#)
        #expect(anonymous.status == 401, "no credential, no link")
        let shown = try await sandbox.run("user", "show", alice, "--json")
        #expect(
            (shown.object["user"] as? [String: Any])?["state"] as? String ?? shown.object["state"] as? String
                == "anonymous", "nothing refused linked anything: \(shown.stdout)")

        let linked = try await link("valid")
        #expect(linked.status == 201, "\(linked.body)")
        #expect(linked.object["state"] as? String == "linked")
        #expect(linked.object["subject"] as? String == "apple-sub-1", "the identity is (provider, sub)")
        let again = try await link("valid")
        #expect(again.status == 200, "already this user's: \(again.body)")
        #expect(again.object["changed"] as? Bool == false)

        // Bob, with records and a session, presents a token for Alice's identity: 409, and Bob is as he was.
        let (bob, bobToken) = try await server.signIn()
        #expect(
            try await server.request(
                "PUT", "/v1/users/\(bob)/records/subscriptions/s1", token: bobToken, body: #"{"n":1}"#
            )
            .status == 201)
        let before = try await Self.readBack(bob, token: bobToken, server: server, sandbox: sandbox)
        let taken = try await server.request(
            "POST", "/v1/users/\(bob)/identities", token: bobToken,
            body: #"{"provider":"apple","id_token":"\#(tokens["third"] ?? "")"}"#)
        #expect(taken.status == 201, "a fresh identity links: \(taken.body)")
        let (carol, carolToken) = try await server.signIn()
        #expect(
            try await server.request(
                "PUT", "/v1/users/\(carol)/records/subscriptions/c1", token: carolToken, body: "{}"
            )
            .status == 201)
        let carolBefore = try await Self.readBack(carol, token: carolToken, server: server, sandbox: sandbox)
        let conflict = try await server.request(
            "POST", "/v1/users/\(carol)/identities", token: carolToken,
            body: #"{"provider":"apple","id_token":"\#(tokens["valid"] ?? "")","nonce":"n-1"}"#)
        #expect(conflict.status == 409, "\(conflict.body)")
        #expect(Self.code(conflict) == "identity_already_exists")
        let carolAfter = try await Self.readBack(carol, token: carolToken, server: server, sandbox: sandbox)
        #expect(carolAfter == carolBefore, "\(carolAfter) was \(carolBefore)")
        // The attempt itself is recorded, as every link attempt is (guestmode-link(1)); nothing else changed.
        let counters = try await server.request("GET", "/v1/users/\(carol)/counters", token: carolToken)
        #expect(
            (counters.object["counters"] as? [String: Int])?["account_upgrade_failed"] == 1, "\(counters.body)")
        #expect(
            before.records == (try await Self.readBack(bob, token: bobToken, server: server, sandbox: sandbox)).records)

        // Another user's id is answered as no user; a key may present a token too; ES256 keys verify.
        let foreign = try await server.request(
            "POST", "/v1/users/\(alice)/identities", token: carolToken,
            body: #"{"provider":"apple","id_token":"\#(tokens["valid_ec"] ?? "")"}"#)
        #expect(foreign.status == 404, "\(foreign.body)")
        let ec = try await server.request(
            "POST", "/v1/users/\(carol)/identities", token: carolToken,
            body: #"{"provider":"apple","id_token":"\#(tokens["valid_ec"] ?? "")"}"#)
        #expect(ec.status == 201, "ES256, no nonce asked: \(ec.body)")
        let (dave, daveToken) = try await server.signIn()
        let leeway = try await server.request(
            "POST", "/v1/users/\(dave)/identities", token: daveToken,
            body: #"{"provider":"apple","id_token":"\#(tokens["within_leeway"] ?? "")"}"#)
        #expect(leeway.status == 201, "30 s past exp is within the 60 s leeway: \(leeway.body)")
        #expect(try await server.stop() == 0)

        // No token, whole or in part, reaches the server's log or an answer.
        let log = String(decoding: try sandbox.read("serve.log"), as: UTF8.self)
        for (name, token) in tokens where token.count > 20 {
            let signature = String(token.split(separator: ".", omittingEmptySubsequences: false).last ?? "")
            #expect(!log.contains(token), "\(name) is in the log")
            #expect(signature.count < 20 || !log.contains(signature), "\(name)'s signature is in the log")
        }
        for reply in [linked, again, taken, conflict, ec, unconfigured] {
            #expect(!tokens.values.contains { $0.count > 20 && reply.body.contains($0) })
        }
    }

    /// What a user is, read back every way: the user document, its records
    /// listed, a route its session reaches, and the command line's view.
    struct ReadBack: Equatable {
        var user: String
        var records: String
        var sessionWorks: Bool
        var shown: String
    }

    static func readBack(_ user: String, token: String, server: Server, sandbox: Sandbox) async throws -> ReadBack {
        let document = try await server.request("GET", "/v1/users/\(user)", token: token)
        let records = try await server.request("GET", "/v1/users/\(user)/records/subscriptions", token: token)
        return ReadBack(
            user: try withoutCounters(document.body), records: records.body, sessionWorks: document.status == 200,
            shown: try withoutCounters(try await sandbox.run("user", "show", user, "--json").stdout))
    }

    /// A user document without its event counters, in a canonical form: the
    /// counters count the link attempt's own events (guestmode-link(1)).
    static func withoutCounters(_ text: String) throws -> String {
        var object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "\(text)")
        object["counters"] = nil
        return String(decoding: try JSONSerialization.data(withJSONObject: object, options: .sortedKeys), as: UTF8.self)
    }

    @Test("the key set from a URL: fetched over loopback HTTP, kept; bad settings stop serve with 64")
    func keySetFromURL() async throws {
        let (sandbox, tokens) = try await Self.prepare(.sqlite)
        try sandbox.write(
            "jwks_server.py",
            """
            import http.server, os, sys
            class Handler(http.server.SimpleHTTPRequestHandler):
                def log_message(self, *args):
                    pass
            server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
            with open("port.tmp", "w") as f:
                f.write(str(server.server_address[1]))
            os.rename("port.tmp", "port")
            server.serve_forever()
            """)
        let keys = try ChildProcess(
            "/usr/bin/python3", arguments: ["jwks_server.py"], directory: sandbox.directory.path,
            output: .null, errors: .null)
        defer {
            if keys.isRunning { keys.send(SIGKILL) }
            _ = try? keys.wait()
        }
        var port = ""
        for _ in 0..<200 where port.isEmpty {
            port = (try? String(decoding: sandbox.read("port"), as: UTF8.self)) ?? ""
            if port.isEmpty { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(!port.isEmpty, "the key server started")
        let url = "http://127.0.0.1:\(port)/jwks.json"
        let server = try await Server.start(
            in: sandbox, options: ["--oidc", "apple=\(Self.issuer),\(Self.audience),\(url)"])
        let (alice, aliceToken) = try await server.signIn()
        let forged = try await server.request(
            "POST", "/v1/users/\(alice)/identities", token: aliceToken,
            body: #"{"provider":"apple","id_token":"\#(tokens["other_key"] ?? "")"}"#)
        #expect(forged.status == 401 && Self.code(forged) == "id_token_invalid", "\(forged.body)")
        let linked = try await server.request(
            "POST", "/v1/users/\(alice)/identities", token: aliceToken,
            body: #"{"provider":"apple","id_token":"\#(tokens["valid"] ?? "")"}"#)
        #expect(linked.status == 201, "\(linked.body)")
        // The key server is gone: the keys fetched are kept.
        keys.send(SIGKILL)
        try keys.wait()
        let (bob, bobToken) = try await server.signIn()
        let kept = try await server.request(
            "POST", "/v1/users/\(bob)/identities", token: bobToken,
            body: #"{"provider":"apple","id_token":"\#(tokens["valid_ec"] ?? "")"}"#)
        #expect(kept.status == 201, "\(kept.body)")
        #expect(try await server.stop() == 0)

        // A server that never fetched the keys, with the key server gone: 503, try again later.
        let stranded = try await Server.start(
            in: sandbox, options: ["--oidc", "apple=\(Self.issuer),\(Self.audience),\(url)"])
        let (carol, carolToken) = try await stranded.signIn()
        let unavailable = try await stranded.request(
            "POST", "/v1/users/\(carol)/identities", token: carolToken,
            body: #"{"provider":"apple","id_token":"\#(tokens["third"] ?? "")"}"#)
        #expect(unavailable.status == 503, "\(unavailable.body)")
        #expect(Self.code(unavailable) == "destination_unavailable")
        #expect(unavailable.headers["retry-after"] == "1")
        #expect(try await stranded.stop() == 0)

        // A key set the server cannot use, or a setting it cannot read, stops it before it listens.
        try sandbox.write("empty.json", #"{"keys":[{"kty":"oct","kid":"h","k":"c2VjcmV0"}]}"#)
        for (setting, code) in [
            ("apple=\(Self.issuer),\(Self.audience)", "invalid_identity_provider"),
            ("apple=\(Self.issuer),\(Self.audience),missing.json", "invalid_jwks"),
            ("apple=\(Self.issuer),\(Self.audience),empty.json", "invalid_jwks"),
            ("apple=\(Self.issuer),\(Self.audience),http://192.0.2.1/jwks.json", "invalid_url"),
        ] {
            let refused = try await sandbox.run("serve", "--listen", "127.0.0.1:0", "--oidc", setting, "--json")
            #expect(refused.status == 64, "\(setting): \(refused.status) \(refused.stdout)\(refused.stderr)")
            #expect(refused.stderr.contains(code), "\(setting): \(refused.stderr)")
        }
    }
}
