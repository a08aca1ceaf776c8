import Foundation
import Testing

/// The README's tour is the first thing a newcomer copies into a shell, so it
/// must run exactly as shown.
@Suite("README")
struct ReadmeTests {
    /// The first `sh` block after "## A tour", byte for byte.
    static func tourBlock() throws -> String {
        try block(under: "A tour")
    }

    /// The first `sh` block after the heading `## title`, byte for byte.
    static func block(under title: String) throws -> String {
        let readme = try String(
            contentsOf: Sandbox.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        guard let heading = readme.range(of: "\n## \(title)\n"),
            let open = readme.range(of: "```sh\n", range: heading.upperBound..<readme.endIndex),
            let close = readme.range(of: "\n```\n", range: open.upperBound..<readme.endIndex)
        else {
            Issue.record("README.md has no sh block under '## \(title)'")
            return ""
        }
        return String(readme[open.upperBound..<close.lowerBound]) + "\n"
    }

    @Test("the README's tour runs as written in an empty directory")
    func tourRunsAsWritten() async throws {
        let block = try Self.tourBlock()
        #expect(block.contains("set -e"), "the block must stop at the first unexpected exit status")
        let sandbox = try Sandbox()
        try Data(block.utf8).write(to: URL(fileURLWithPath: sandbox.path("tour.sh")))
        let path = Sandbox.binary.deletingLastPathComponent().path + ":" + (sandbox.environment["PATH"] ?? "")
        let result = try await sandbox.shell("PATH='\(path)' sh tour.sh")
        #expect(result.status == 0, "stdout:\n\(result.stdout.suffix(1500))\nstderr:\n\(result.stderr.suffix(1500))")
        #expect(!result.stderr.contains("expected"), "\(result.stderr)")
    }

    @Test("the README's tour stops at an exit status it does not expect")
    func tourStopsOnSurprise() async throws {
        let block = try Self.tourBlock()
        let broken = block.replacingOccurrences(
            of: "expect 10 guestmode record put", with: "expect 0 guestmode record put")
        #expect(broken != block)
        let sandbox = try Sandbox()
        try Data(broken.utf8).write(to: URL(fileURLWithPath: sandbox.path("tour.sh")))
        let path = Sandbox.binary.deletingLastPathComponent().path + ":" + (sandbox.environment["PATH"] ?? "")
        let result = try await sandbox.shell("PATH='\(path)' sh tour.sh")
        #expect(result.status != 0)
        #expect(result.stderr.contains("exit 10, expected 0"), "\(result.stderr)")
    }

    @Test(
        "the README's serving block runs as written: sign in, the cap over HTTP, link, sign in again, merge, sign out, delete, stop"
    )
    func servingRunsAsWritten() async throws {
        let block = try Self.block(under: "Serving apps")
        #expect(block.contains("set -e"))
        let sandbox = try Sandbox()
        try Data(block.utf8).write(to: URL(fileURLWithPath: sandbox.path("serve.sh")))
        let path = Sandbox.binary.deletingLastPathComponent().path + ":" + (sandbox.environment["PATH"] ?? "")
        let result = try await sandbox.shell("PATH='\(path)' sh serve.sh")
        #expect(result.status == 0, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(
            result.stdout
                == "created guestmode.sqlite with profile subscriptions v1\ns1 201\ns2 201\ns3 201\ns4 201\ns5 201\ns6 403\nKeep tracking everything\nlinked\nsame user\nkeep-account\n1\nfound\nTrue\n"
                + "guestmode_http_requests_total{route=\"/v1/guests\",method=\"POST\",status=\"201\"} 2\n3.1.0\n/v1/openapi.json\n",
            "\(result.stdout)")
    }

    @Test(
        "the README's purchase block runs as written: 45 minutes, the warning, the paywall, premium bought with a signed transaction, EXPIRED, the paywall again"
    )
    func purchaseRunsAsWritten() async throws {
        let block = try Self.block(under: "Buying premium in the app")
        #expect(block.contains("set -e"))
        let sandbox = try Sandbox()
        try Data(block.utf8).write(to: URL(fileURLWithPath: sandbox.path("purchase.sh")))
        let path = Sandbox.binary.deletingLastPathComponent().path + ":" + (sandbox.environment["PATH"] ?? "")
        let result = try await sandbox.shell("PATH='\(path)' sh purchase.sh")
        #expect(result.status == 0, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(
            result.stdout == "created guestmode.sqlite with profile voice v1\nwarning\n402\ntrial\n200\napplied\n402\n",
            "\(result.stdout)\n\(result.stderr)")
    }

    @Test(
        "the README's webhooks block runs as written: a habits guest's changes reach a verifying receiver and nginx, and come back on a new store"
    )
    func webhooksRunAsWritten() async throws {
        let block = try Self.block(under: "Webhooks")
        #expect(block.contains("set -e"))
        let sandbox = try Sandbox()
        try Data(block.utf8).write(to: URL(fileURLWithPath: sandbox.path("webhooks.sh")))
        let path = Sandbox.binary.deletingLastPathComponent().path + ":" + (sandbox.environment["PATH"] ?? "")
        // make test runs under scripts/with-nginx.sh, which names the WebDAV location and its token file.
        let webDAV = try RemoteBackupTests.environment("GUESTMODE_TEST_WEBDAV_URL")
        let tokenFile = try RemoteBackupTests.environment("GUESTMODE_TEST_WEBDAV_TOKEN_FILE")
        let result = try await sandbox.shell(
            "PATH='\(path)' GUESTMODE_TEST_WEBDAV_URL='\(webDAV)' GUESTMODE_TEST_WEBDAV_TOKEN_FILE='\(tokenFile)' sh webhooks.sh"
        )
        #expect(result.status == 0, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        #expect(
            result.stdout.hasSuffix(
                "account_upgrade.started verified\naccount_upgrade.succeeded verified\nidentity.linked verified\nbackup.pushed verified\nidentical\n"
            ), "\(result.stdout)")
        #expect(try String(contentsOfFile: sandbox.path("before.txt"), encoding: .utf8).contains("walk"))
    }

    @Test("the README's new-phone block runs as written: push to serve, lose the phone, pull the same records")
    func newPhoneRunsAsWritten() async throws {
        let block = try Self.block(under: "A new phone")
        #expect(block.contains("set -e"))
        let sandbox = try Sandbox()
        try Data(block.utf8).write(to: URL(fileURLWithPath: sandbox.path("phone.sh")))
        let path = Sandbox.binary.deletingLastPathComponent().path + ":" + (sandbox.environment["PATH"] ?? "")
        let result = try await sandbox.shell("PATH='\(path)' sh phone.sh")
        #expect(result.status == 0, "stdout:\n\(result.stdout)\nstderr:\n\(result.stderr)")
        let lines = result.stdout.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("pushed ") && $0.hasSuffix(".gmbackup") }, "\(result.stdout)")
        #expect(lines.contains { $0.hasPrefix("imported 4 rows from http://127.0.0.1:") }, "\(result.stdout)")
        #expect(lines.last == "identical", "\(result.stdout)")
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("phone.sqlite")))
    }
}
