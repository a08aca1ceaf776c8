import Foundation
import Testing

@testable import GuestModeClient

/// The App Store, played by a chain the test makes in the server's folder (openssl and python3, as the
/// repository's README does): a root the server is told to trust, an intermediate and a signing leaf.
struct AppStoreChain {
    let folder: URL

    init(in folder: URL) throws {
        self.folder = folder
        let made = try Self.shell(
            """
            set -e
            printf 'basicConstraints=critical,CA:true\\nkeyUsage=critical,keyCertSign\\n1.2.840.113635.100.6.2.1=DER:0500\\n' > ca.ext
            printf 'keyUsage=critical,digitalSignature\\n1.2.840.113635.100.6.11.1=DER:0500\\n' > leaf.ext
            for name in root ca leaf; do openssl ecparam -name prime256v1 -genkey -noout -out $name.key; done
            openssl req -x509 -new -key root.key -subj /CN=root -days 30 -out root.pem
            openssl req -new -key ca.key -subj /CN=ca | openssl x509 -req -CA root.pem -CAkey root.key -days 30 -extfile ca.ext -out ca.pem 2> /dev/null
            openssl req -new -key leaf.key -subj /CN=leaf | openssl x509 -req -CA ca.pem -CAkey ca.key -days 30 -extfile leaf.ext -out leaf.pem 2> /dev/null
            """, in: folder)
        #expect(made.status == 0, "\(made.output)")
    }

    var rootCertificate: String { folder.appendingPathComponent("root.pem").path }

    /// A StoreKit 2 transaction of the voice app's premium with a free month, for `user`.
    func transaction(for user: String) throws -> String {
        let script = """
            import base64, json, subprocess, sys, time
            def b64(data): return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
            def der(name): return base64.b64encode(subprocess.run(["openssl", "x509", "-in", name + ".pem", "-outform", "DER"], capture_output=True, check=True).stdout).decode()
            head = b64(json.dumps({"alg": "ES256", "x5c": [der("leaf"), der("ca"), der("root")]}).encode())
            now = int(time.time() * 1000)
            body = head + "." + b64(json.dumps({"transactionId": "2000000000000001", "originalTransactionId": "2000000000000001",
                "bundleId": "com.example.voice", "productId": "com.example.voice.premium.monthly", "type": "Auto-Renewable Subscription",
                "purchaseDate": now, "expiresDate": now + 30 * 86400000, "offerType": 1, "offerDiscountType": "FREE_TRIAL",
                "signedDate": now, "environment": "Production", "appAccountToken": sys.argv[1]}).encode())
            sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", "leaf.key"], input=body.encode(), capture_output=True, check=True).stdout
            r_len = sig[3]; r = sig[4:4 + r_len]; s = sig[6 + r_len:]
            print(body + "." + b64(int.from_bytes(r, "big").to_bytes(32, "big") + int.from_bytes(s, "big").to_bytes(32, "big")))
            """
        try script.write(to: folder.appendingPathComponent("transaction.py"), atomically: true, encoding: .utf8)
        let signed = try Self.shell("python3 transaction.py '\(user)'", in: folder)
        #expect(signed.status == 0, "\(signed.output)")
        return signed.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func shell(_ script: String, in folder: URL) throws -> (status: Int32, output: String) {
        try TestServer.launch("/bin/bash", ["-c", script], in: folder)
    }
}

@Suite("GuestModeClient: purchases")
struct PurchaseTests {
    @Test(
        "a guest at the paywall hands over a StoreKit transaction: premium's trial, the gate opens; a forged one is purchase_invalid and the session stays",
        arguments: TestServer.Backend.available)
    func purchase(_ backend: TestServer.Backend) async throws {
        let server = try await TestServer(profile: "voice", backend: backend)
        let chain = try AppStoreChain(in: server.directory)
        try server.start(["--app-store-root-ca", chain.rootCertificate, "--app-store-bundle-id", "com.example.voice"])
        defer { server.stop() }
        let client = try GuestModeClient(serverURL: server.url)
        let session = try await client.signInAsGuest()
        guard case .meterExhausted = try await client.checkMeter("api_minutes", amount: 90) else {
            Issue.record("90 minutes fit the free 60")
            return
        }

        // A transaction whose signature does not hold: the server's word, not a refused access token.
        let signed = try chain.transaction(for: session.userID)
        var forged = signed
        forged.removeLast(4)
        forged += "AAAA"
        do {
            _ = try await client.recordPurchase(signedTransaction: forged)
            Issue.record("a forged transaction was taken")
        } catch let error as GuestModeClientError {
            #expect(error.code == .purchaseInvalid, "\(error)")
        }
        #expect(try await client.currentSession() == session, "the session was neither refreshed nor dropped")

        let status = try await client.recordPurchase(signedTransaction: signed)
        #expect(status.tier == "premium", "\(status)")
        #expect(status.plans.first?.state == "trial" && status.plans.first?.source == "app_store", "\(status)")
        #expect(status.plans.first?.sourceID == "2000000000000001")
        guard case .done = try await client.checkMeter("api_minutes", amount: 90) else {
            Issue.record("premium is unlimited")
            return
        }
    }
}
