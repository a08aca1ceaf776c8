import Foundation
import Testing

/// Several `guestmode serve` processes on one store, as behind a load
/// balancer, and what one leaves on the database when it stops.
@Suite("guestmode serve: several servers on one store")
struct ServerSharedStoreTests {
    @Test(
        "the guest sign-in limit is the store's: 30 from one address across two servers, the 31st is 429",
        arguments: ServerTests.Backend.allCases)
    func signInLimitAcrossServers(_ backend: ServerTests.Backend) async throws {
        let sandbox = try await backend.sandbox("voice")
        // The buckets refill with the servers' clock: a fixed one, so a slow machine refills nothing.
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-03T10:00:00Z"
        let proxy = ["--trusted-proxy", "127.0.0.1"]
        let first = try await Server.start(in: sandbox, options: proxy)
        let second = try await Server.start(in: sandbox, options: proxy)
        let servers = [first, second]
        for index in 1...30 {
            let created = try await servers[index % 2].request(
                "POST", "/v1/guests", body: #"{"device":"d-\#(index)"}"#, headers: ["X-Forwarded-For": "192.0.2.1"])
            #expect(created.status == 201, "guest \(index): \(created.body)")
        }
        for server in servers {
            let refused = try await server.request(
                "POST", "/v1/guests", body: #"{"device":"d-31"}"#, headers: ["X-Forwarded-For": "192.0.2.1"])
            #expect(refused.status == 429, "\(refused.body)")
            #expect(refused.headers["retry-after"] == "120", "a token every 120 s at 30 an hour")
            #expect((refused.object["error"] as? [String: Any])?["code"] as? String == "rate_limited")
        }
        let other = try await second.request(
            "POST", "/v1/guests", body: #"{"device":"d-32"}"#, headers: ["X-Forwarded-For": "192.0.2.2"])
        #expect(other.status == 201, "another address has its own bucket: \(other.body)")
        #expect(try await first.stop() == 0)
        #expect(try await second.stop() == 0)

        // Two minutes later one more guest from the address, on a server started since.
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-03T10:02:00Z"
        let third = try await Server.start(in: sandbox, options: proxy)
        let refilled = try await third.request("POST", "/v1/guests", headers: ["X-Forwarded-For": "192.0.2.1"])
        #expect(refilled.status == 201, "\(refilled.body)")
        #expect(try await third.request("POST", "/v1/guests", headers: ["X-Forwarded-For": "192.0.2.1"]).status == 429)
        #expect(try await third.stop() == 0)

        // The buckets are the store's own: no backup carries them, `db copy` does.
        let exported = try await sandbox.run("backup", "export", "--all", "--out", "all.tar.gz")
        #expect(exported.status == 0, "\(exported.stderr)")
        let inspected = try await sandbox.run("backup", "inspect", "all.tar.gz", "--json")
        let tables = ((inspected.object["manifest"] as? [String: Any])?["tables"] as? [String: Int]) ?? [:]
        #expect(!tables.isEmpty && tables["sign_in_buckets"] == nil, "\(inspected.stdout)")
    }

    @Test(
        "two servers on one store sign with the same key, verify each other's tokens, and both move to a rotated key",
        arguments: ServerTests.Backend.allCases)
    func signingKeyAcrossServers(_ backend: ServerTests.Backend) async throws {
        let sandbox = try await backend.sandbox("voice")
        // The first makes the store's key, the second finds it (ServerStoreTests starts them at once).
        let first = try await Server.start(in: sandbox)
        let second = try await Server.start(in: sandbox)
        let listed = try await sandbox.run("serve", "signing-key", "list", "--json")
        #expect((listed.json as? [Any])?.count == 1, "one key for both: \(listed.stdout)")
        let (guest, token) = try await first.signIn()
        let (otherGuest, otherToken) = try await second.signIn()
        #expect(ServerSigningKeyTests.kid(of: token) == ServerSigningKeyTests.kid(of: otherToken))
        #expect(try await second.request("GET", "/v1/users/\(guest)", token: token).status == 200)
        #expect(try await first.request("GET", "/v1/users/\(otherGuest)", token: otherToken).status == 200)

        let rotated = try await sandbox.run("serve", "signing-key", "rotate")
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let kid = rotated.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        for server in [first, second] {
            #expect(
                try await ServerSigningKeyTests.eventually {
                    ServerSigningKeyTests.kid(of: try await server.signIn().1) == kid
                }, "each server signs with \(kid) within its refresh")
        }
        let (_, fresh) = try await first.signIn()
        #expect(try await second.request("GET", "/v1/users/\(guest)", token: token).status == 200, "signed before")
        #expect(try await second.request("GET", "/v1/me", token: fresh).status == 200, "signed after, elsewhere")
        #expect(try await first.stop() == 0)
        #expect(try await second.stop() == 0)
        // The keys are the store's own: no backup carries them.
        let exported = try await sandbox.run("backup", "export", "--all", "--out", "all.tar.gz")
        #expect(exported.status == 0, "\(exported.stderr)")
        let inspected = try await sandbox.run("backup", "inspect", "all.tar.gz", "--json")
        let tables = ((inspected.object["manifest"] as? [String: Any])?["tables"] as? [String: Int]) ?? [:]
        #expect(!tables.isEmpty && tables["signing_keys"] == nil, "\(inspected.stdout)")
    }

    @Test("SIGTERM: serve closes its PostgreSQL sessions, none is left open or dropped without a goodbye")
    func shutdownClosesPostgresSessions() async throws {
        let base = try #require(
            ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 },
            "GUESTMODE_TEST_POSTGRES is not set: run the tests through scripts/with-postgres.sh")
        // A database of its own, so its session counters are this test's alone.
        let database = "close_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let sandbox = try Sandbox()
        let psql = { (sql: String) async throws -> String in
            let result = try await sandbox.shell("psql -X -q -t -A -d '\(base)' -c \"\(sql)\"")
            #expect(result.status == 0, "\(sql): \(result.stderr)")
            return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        _ = try await psql("CREATE DATABASE \(database)")
        guard let slash = base.lastIndex(of: "/") else { throw CancellationError() }
        var uri = String(base[...slash]) + database
        if let query = base.firstIndex(of: "?"), query > slash { uri += String(base[query...]) }
        sandbox.environment["GUESTMODE_STORE"] = uri
        let created = try await sandbox.run("init", "--profile", "voice")
        #expect(created.status == 0, "\(created.stderr)")

        let sessions = "SELECT count(*) FROM pg_stat_activity WHERE datname = '\(database)'"
        let abandoned = "SELECT sessions_abandoned FROM pg_stat_database WHERE datname = '\(database)'"
        // The command line's own session is gone before the count is taken.
        #expect(try await Self.waitFor(psql, sessions, toRead: "0"))
        let before = try await Self.settled(psql, abandoned)

        let server = try await Server.start(in: sandbox, options: ["--threads", "3"])
        let replies = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<12 { group.addTask { try await server.request("POST", "/v1/guests").status } }
            var statuses: [Int] = []
            for try await status in group { statuses.append(status) }
            return statuses
        }
        #expect(replies.allSatisfy { $0 == 201 })
        let named = try await psql(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = '\(database)' AND application_name = 'guestmode'")
        #expect((Int(named) ?? 0) >= 1, "serve's sessions are named guestmode: \(named)")
        #expect(try await server.stop() == 0)

        #expect(try await Self.waitFor(psql, sessions, toRead: "0"), "no session of serve is left")
        #expect(
            try await Self.settled(psql, abandoned) == before,
            "every session ended with the client's goodbye, none by its socket closing under it")
        _ = try await psql("DROP DATABASE \(database)")
    }

    /// Reads `sql` until it answers `expected`, for up to 10 s.
    static func waitFor(
        _ psql: (String) async throws -> String, _ sql: String, toRead expected: String
    ) async throws -> Bool {
        for _ in 0..<100 {
            if try await psql(sql) == expected { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return false
    }

    /// Reads a statistics counter until it reads the same for a second:
    /// the server writes a session's counters as its backend exits.
    static func settled(_ psql: (String) async throws -> String, _ sql: String) async throws -> String {
        var last = try await psql(sql)
        var steady = 0
        for _ in 0..<50 where steady < 5 {
            try await Task.sleep(for: .milliseconds(200))
            let now = try await psql(sql)
            steady = now == last ? steady + 1 : 0
            last = now
        }
        return last
    }
}
