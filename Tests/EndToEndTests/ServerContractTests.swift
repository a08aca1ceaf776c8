import Foundation
import Testing

/// What `guestmode serve` promises operators and clients beyond its answers: metrics a Prometheus
/// scrapes, an access log of JSON lines, and an OpenAPI document that lists exactly the routes the
/// code registers and guestmode-serve(1) documents, checked by schemathesis against the real server.
@Suite("guestmode serve: metrics, access log and the OpenAPI document")
struct ServerContractTests {
    @Test(
        "/metrics counts requests by route template and status, with latency and pool gauges, and no id or secret",
        arguments: ServerTests.Backend.allCases)
    func metrics(_ backend: ServerTests.Backend) async throws {
        let sandbox = try await backend.sandbox("subscriptions")
        let admin = try #require(
            try await sandbox.run("serve", "key", "create", "ops", "--scope", "admin", "--json").object["secret"]
                as? String)
        let server = try await Server.start(in: sandbox)
        let created = try await server.request("POST", "/v1/guests", body: #"{"device":"phone-9"}"#)
        let guest = try #require(created.object["user_id"] as? String)
        let token = try #require(created.object["access_token"] as? String)
        let refresh = try #require(created.object["refresh_token"] as? String)
        for index in 1...3 {
            let put = try await server.request(
                "PUT", "/v1/users/\(guest)/records/subscriptions/s\(index)", token: token, body: "{}")
            #expect(put.status == 201)
        }
        #expect(
            try await server.request("GET", "/v1/users/\(guest)/records/subscriptions/nope", token: token).status == 404
        )
        #expect(try await server.request("GET", "/v1/users/\(guest)", token: "forged").status == 401)
        #expect(try await server.request("GET", "/v1/users", token: admin).status == 200)
        #expect(try await server.request("GET", "/v1/no-such-route/\(guest)").status == 404)
        // Methods no route takes (HTTP and WebDAV have many) are one label, not one each.
        #expect(try await server.request("PROPFIND", "/v1/users").status == 404)
        #expect(try await server.request("TRACE", "/v1/users").status == 404)

        let scraped = try await server.request("GET", "/metrics")
        #expect(scraped.status == 200)
        #expect(scraped.headers["content-type"]?.hasPrefix("text/plain") == true)
        let lines = scraped.body.split(separator: "\n").map(String.init)
        func value(_ name: String, _ labels: [String: String]) -> Double? {
            lines.first { line in
                line.hasPrefix(name + "{") && labels.allSatisfy { line.contains("\($0.key)=\"\($0.value)\"") }
            }.flatMap { $0.split(separator: " ").last.flatMap { Double($0) } }
        }
        let records = "/v1/users/{user}/records/{collection}/{key}"
        #expect(
            value("guestmode_http_requests_total", ["route": records, "method": "PUT", "status": "201"]) == 3,
            "\(scraped.body)")
        #expect(value("guestmode_http_requests_total", ["route": records, "method": "GET", "status": "404"]) == 1)
        #expect(
            value("guestmode_http_requests_total", ["route": "/v1/users/{user}", "method": "GET", "status": "401"]) == 1
        )
        #expect(
            value("guestmode_http_requests_total", ["route": "/v1/guests", "method": "POST", "status": "201"]) == 1)
        #expect(value("guestmode_http_requests_total", ["route": "none", "method": "GET", "status": "404"]) == 1)
        #expect(value("guestmode_http_requests_total", ["route": "none", "method": "other", "status": "404"]) == 2)
        #expect(!scraped.body.contains("PROPFIND"))
        #expect(value("guestmode_http_request_duration_seconds_count", ["route": records, "method": "PUT"]) == 3)
        #expect(
            value("guestmode_http_request_duration_seconds_bucket", ["route": records, "method": "PUT", "le": "+Inf"])
                == 3)
        #expect(
            lines.contains {
                $0.hasPrefix("guestmode_http_request_duration_seconds_bucket{") && $0.contains(#"le="0.001""#)
            })
        // Between requests nothing runs or waits but this scrape itself, in flight.
        func gauge(_ name: String) -> Double? {
            lines.first { $0.hasPrefix(name + " ") }.flatMap { $0.split(separator: " ").last.flatMap { Double($0) } }
        }
        #expect(gauge("guestmode_store_pool_in_use") == 0)
        #expect(gauge("guestmode_store_pool_waiting") == 0)
        // --threads by default: a SQLite store's calls are the processor's (one a core), PostgreSQL's wait for its server.
        let threads = backend == .sqlite ? max(2, ProcessInfo.processInfo.activeProcessorCount) : 4
        #expect(gauge("guestmode_store_pool_size") == Double(threads))
        #expect(gauge("guestmode_http_requests_in_flight") == 1)
        for secret in [guest, token, refresh, admin, "s1", "phone-9"] {
            #expect(!scraped.body.contains(secret), "/metrics shows '\(secret)'")
        }
        let after = try await server.request("GET", "/metrics")
        #expect(
            after.body.split(separator: "\n").contains {
                $0.hasPrefix("guestmode_http_requests_total{") && $0.contains(#"route="/metrics""#)
            })
        #expect(try await server.stop() == 0)
    }

    @Test("the access log: one JSON line per request on standard error, with its route and status, and no secret")
    func accessLog() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let admin = try #require(
            try await sandbox.run("serve", "key", "create", "ops", "--scope", "admin", "--json").object["secret"]
                as? String)
        let server = try await Server.start(in: sandbox)
        let created = try await server.request("POST", "/v1/guests")
        let guest = try #require(created.object["user_id"] as? String)
        let token = try #require(created.object["access_token"] as? String)
        let refresh = try #require(created.object["refresh_token"] as? String)
        let refreshed = try await server.request(
            "POST", "/v1/sessions/refresh", body: #"{"refresh_token":"\#(refresh)"}"#)
        let newRefresh = try #require(refreshed.object["refresh_token"] as? String)
        let querySecret = "query-secret-\(UUID().uuidString)"
        var sent: [(method: String, route: String, status: Int)] = [
            ("POST", "/v1/guests", created.status), ("POST", "/v1/sessions/refresh", refreshed.status),
        ]
        for (method, path, route, credential, body) in [
            ("GET", "/v1/users/\(guest)/limits?collection=\(querySecret)", "/v1/users/{user}/limits", token, nil),
            (
                "POST", "/v1/users/\(guest)/meters/api_minutes/use", "/v1/users/{user}/meters/{meter}/use", token,
                #"{"amount":3}"#
            ),
            ("GET", "/v1/users", "/v1/users", admin, nil),
            ("GET", "/v1/users/\(guest)", "/v1/users/{user}", "\(token)x", nil),
            ("GET", "/v1/\(querySecret)", "none", nil, nil),
        ] as [(String, String, String, String?, String?)] {
            let reply = try await server.request(method, path, token: credential, body: body)
            sent.append((method, route, reply.status))
        }
        #expect(try await server.stop() == 0)

        let log = try String(contentsOfFile: sandbox.path("serve.log"), encoding: .utf8)
        let lines = log.split(separator: "\n").map(String.init)
        let entries = lines.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
        #expect(entries.count == lines.count, "every line of standard error is a JSON object:\n\(log)")
        let access = entries.filter { $0["logger"] as? String == "guestmode.access" }
        #expect(access.count == sent.count, "one line per request:\n\(log)")
        for (entry, request) in zip(access, sent) {
            #expect(entry["method"] as? String == request.method)
            #expect(entry["route"] as? String == request.route)
            #expect(entry["status"] as? Int == request.status)
            #expect(entry["duration_ms"] is NSNumber)
            #expect(entry["bytes"] as? Int ?? 0 > 0)
            #expect((entry["request_id"] as? String)?.isEmpty == false)
            #expect(entry["client"] as? String == "127.0.0.1")
            #expect(entry["level"] as? String == "info")
            #expect(entry["time"] is String)
        }
        #expect(Set(access.compactMap { $0["request_id"] as? String }).count == access.count, "request ids are unique")
        for secret in [token, refresh, newRefresh, admin, querySecret, guest, "Bearer", "Authorization"] {
            #expect(!log.contains(secret), "the log shows '\(secret)'")
        }
    }

    @Test("schemas/openapi.json is what scripts/openapi.py writes, and the server serves it")
    func documentIsCurrent() async throws {
        let sandbox = try Sandbox()
        let script = Sandbox.packageRoot.appendingPathComponent("scripts/openapi.py").path
        let check = try await sandbox.shell("python3 '\(script)' --check")
        #expect(check.status == 0, "\(check.stderr)")

        let store = try await Sandbox.withStore("subscriptions")
        let server = try await Server.start(in: store)
        let served = try await server.request("GET", "/v1/openapi.json")
        #expect(served.status == 200)
        #expect(served.headers["content-type"] == "application/json")
        let committed = try JSONSerialization.jsonObject(
            with: Data(contentsOf: Sandbox.packageRoot.appendingPathComponent("schemas/openapi.json")))
        let document = try #require(try JSONSerialization.jsonObject(with: Data(served.body.utf8)) as? NSDictionary)
        #expect(
            document.isEqual(to: committed as? [AnyHashable: Any] ?? [:]), "the served document is the committed one")
        #expect(document["openapi"] as? String == "3.1.0")
        #expect(try await server.stop() == 0)
    }

    /// The router, the document and guestmode-serve(1) list the same routes (GuestModeServerTests,
    /// in process, reads the router itself); here the built binary answers each documented one.
    @Test("the binary answers every route of the OpenAPI document")
    func everyRouteEverywhere() async throws {
        let fromDocument = try Self.documentedRoutes()
        #expect(fromDocument.count > 35, "\(fromDocument.sorted())")
        let sandbox = try await Sandbox.withStore("subscriptions")
        let admin = try #require(
            try await sandbox.run("serve", "key", "create", "ops", "--scope", "admin", "--json").object["secret"]
                as? String)
        let server = try await Server.start(in: sandbox, options: ["--backups-dir", sandbox.path("backups")])
        let (guest, _) = try await server.signIn()
        let values = [
            "user": guest, "collection": "subscriptions", "key": "k", "meter": "m", "plan": "premium",
            "provider": "apple", "name": "latest", "report": "funnel",
        ]
        for route in fromDocument.sorted() {
            let parts = route.split(separator: " ", maxSplits: 1).map(String.init)
            var path = parts[1]
            for (name, value) in values { path = path.replacingOccurrences(of: "{\(name)}", with: value) }
            let reply = try await server.request(parts[0], path, token: admin)
            #expect(reply.status != 0, "\(route): no answer")
            let code = (reply.object["error"] as? [String: Any])?["code"] as? String
            #expect(code != "route_not_found", "\(route): the binary has no such route")
        }
        #expect(try await server.stop() == 0)
    }

    /// A missing schemathesis fails (exit 2): `make deps` installs it. An admin key over SQLite, a
    /// guest's session over PostgreSQL: both callers, both backends, in two runs.
    @Test(
        "schemathesis against the served document: no 5xx, every answer as documented (bounded examples)",
        arguments: [("admin", ServerTests.Backend.sqlite), ("session", .postgres)])
    func schemathesis(_ caller: String, _ backend: ServerTests.Backend) async throws {
        let sandbox = try Sandbox()
        let script = Sandbox.packageRoot.appendingPathComponent("scripts/check-openapi-live.py").path
        var postgres = ""
        if backend == .postgres {
            let uri = try #require(
                ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 },
                "GUESTMODE_TEST_POSTGRES is not set: run the tests through 'make test'")
            postgres = " --postgres '\(uri)'"
        }
        let result = try await sandbox.shell(
            "python3 '\(script)' --binary '\(Sandbox.binary.path)' --as \(caller)\(postgres) 2>&1")
        #expect(result.status == 0, "\(result.stdout.suffix(6000))")
        #expect(result.stdout.contains("schemathesis found no problem"))
    }

    /// A missing openapi-python-client fails (exit 2): `make deps` installs it.
    @Test(
        "openapi-python-client makes every operation of the served document without a warning, and its client plays a guest's journey"
    )
    func pythonClient() async throws {
        let sandbox = try Sandbox()
        let script = Sandbox.packageRoot.appendingPathComponent("scripts/check-openapi-clients.py").path
        let result = try await sandbox.shell("python3 '\(script)' --binary '\(Sandbox.binary.path)' 2>&1")
        #expect(result.status == 0, "\(result.stdout.suffix(6000))")
        #expect(result.stdout.contains(": 0 warnings,"), "\(result.stdout.suffix(2000))")
    }

    /// `METHOD /path/{param}` of every operation of schemas/openapi.json (MOVE is `x-move`).
    static func documentedRoutes() throws -> Set<String> {
        let document = try #require(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: Sandbox.packageRoot.appendingPathComponent("schemas/openapi.json")))
                as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        return Set(
            paths.flatMap { path, item in
                item.keys.filter { ["get", "put", "post", "delete", "patch", "head", "x-move"].contains($0) }.map {
                    "\($0 == "x-move" ? "MOVE" : $0.uppercased()) \(path)"
                }
            })
    }
}
