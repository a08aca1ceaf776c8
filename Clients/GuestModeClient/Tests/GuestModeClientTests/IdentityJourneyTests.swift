import Foundation
import Testing

@testable import GuestModeClient

/// A person across two devices through GuestModeClient, for each of the four profiles: a phone's guest
/// links an Apple ID token; a tablet's guest signs in with the same token, merges or migrates its
/// guest into the account after a dry run; sign out; delete the account.
@Suite("GuestModeClient: a person's whole life", .serialized)
struct IdentityJourneyTests {
    static let issuer = "https://appleid.apple.com"
    static let audience = "com.example.app"

    /// A key set (jwks.json) and an ID token for `sub` signed with it, valid for ten minutes from now.
    static let script = #"""
        import base64, json, sys, time
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding, rsa

        issuer, audience = sys.argv[1:3]
        def b64(data):
            return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
        def number(value):
            return b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = key.public_key().public_numbers()
        json.dump({"keys": [{"kty": "RSA", "kid": "r1", "use": "sig", "alg": "RS256", "n": number(public.n),
                             "e": number(public.e)}]}, open("jwks.json", "w"))
        now = int(time.time())
        claims = {"iss": issuer, "aud": audience, "sub": "apple-sub-1", "iat": now - 60, "exp": now + 600,
                  "nonce": "n-1", "email": "ada@example.com"}
        signing = (b64(json.dumps({"alg": "RS256", "typ": "JWT", "kid": "r1"}).encode()) + "."
                   + b64(json.dumps(claims).encode())).encode()
        print(signing.decode() + "." + b64(key.sign(signing, padding.PKCS1v15(), hashes.SHA256())))
        """#

    static let profiles: [(profile: String, collection: String, migrates: Bool)] = [
        ("subscriptions", "subscriptions", false), ("recipes", "recipes", false),
        ("habits", "habits", true), ("voice", "commands", true),
    ]

    @Test(
        "phone guest links, tablet guest signs in with the same token, dry run then merge or migrate, sign out, delete",
        arguments: TestServer.Backend.available, 0..<4)
    func wholeLife(_ backend: TestServer.Backend, _ index: Int) async throws {
        let (profile, collection, migrates) = Self.profiles[index]
        let server = try await TestServer(profile: profile, backend: backend)
        try server.path("idtoken.py").path.write(Self.script)
        let token = try Self.idToken(in: server)
        // Migrations take a safety backup into --backups-dir; without it their route is not served.
        try server.start([
            "--oidc", "apple=\(Self.issuer),\(Self.audience),jwks.json", "--backups-dir", server.path("backups").path,
        ])
        defer { server.stop() }

        let phoneStore = FileSessionStore(url: server.path("phone/session.json"))
        let phone = try GuestModeClient(serverURL: server.url, sessionStore: phoneStore)
        let person = try await phone.signInAsGuest(device: "phone")
        #expect(
            try await phone.putRecord(["name": "from-phone"], collection: collection, key: "from-phone").value != nil)
        let linked = try await phone.linkIdentity(provider: "apple", idToken: token, nonce: "n-1")
        #expect(linked.changed && linked.state != "anonymous", "\(profile): \(linked)")
        #expect(try await phone.currentSession()?.isGuest == false)

        let tabletStore = FileSessionStore(url: server.path("tablet/session.json"))
        let tablet = try GuestModeClient(serverURL: server.url, sessionStore: tabletStore)
        let guest = try await tablet.signInAsGuest(device: "tablet")
        #expect(guest.userID != person.userID)
        #expect(
            try await tablet.putRecord(["name": "from-tablet"], collection: collection, key: "from-tablet").value != nil
        )
        let account = try await tablet.signIn(provider: "apple", idToken: token, nonce: "n-1")
        #expect(account.userID == person.userID && !account.isGuest)
        #expect(try await tabletStore.load() == account)
        struct Named: Codable, Equatable { var name: String }
        #expect(try await tablet.record(Named.self, collection: collection, key: "from-tablet") == nil)

        if migrates {
            let plan = try await tablet.migrate(guest: guest, dryRun: true)
            #expect(plan.dryRun && plan.sourceUserID == guest.userID && !plan.steps.isEmpty)
            #expect(try await tablet.record(Named.self, collection: collection, key: "from-tablet") == nil)
            let run = try await tablet.migrate(guest: guest)
            #expect(!run.dryRun && run.sourceUserID == guest.userID, "\(profile): \(run)")
        } else {
            let preview = try await tablet.merge(guest: guest, policy: .keepAccount, dryRun: true)
            #expect(preview.dryRun && preview.guestUserID == guest.userID)
            #expect(try await tablet.record(Named.self, collection: collection, key: "from-tablet") == nil)
            let merged = try await tablet.merge(guest: guest, policy: .keepAccount)
            #expect(!merged.dryRun && merged.accountUserID == person.userID && merged.recordsMoved >= 1)
        }
        #expect(
            try await tablet.record(Named.self, collection: collection, key: "from-tablet")
                == .init(name: "from-tablet"))
        #expect(
            try await phone.record(Named.self, collection: collection, key: "from-tablet") == .init(name: "from-tablet")
        )

        try await tablet.signOut()
        #expect(try await tabletStore.load() == nil)
        try await phone.deleteAccount()
        #expect(try await phoneStore.load() == nil)
        // The tablet's old session (kept elsewhere) reaches nothing now.
        let stale = try GuestModeClient(serverURL: server.url, sessionStore: InMemorySessionStore(account))
        await #expect(throws: GuestModeClientError.self) { try await stale.track("app_opened") }
    }

    static func idToken(in server: TestServer) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "idtoken.py", issuer, audience]
        process.currentDirectoryURL = server.directory
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "python3 with cryptography makes the ID token")
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

extension String {
    func write(_ text: String) throws { try text.write(toFile: self, atomically: true, encoding: .utf8) }
}
