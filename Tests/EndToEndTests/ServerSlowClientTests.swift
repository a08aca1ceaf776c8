import Foundation
import Testing

/// Issue 31: one client, without a credential, must not hold `guestmode serve` (slow heads, slow
/// bodies, many connections), and what NIO's HTTP/1 decoder cannot read is the client's fault, never
/// a 500. Spoken to with raw sockets (scripts/slow-clients.py), which curl cannot be made to send.
@Suite("guestmode serve against slow and greedy clients")
struct ServerSlowClientTests {
    /// 400 connections from 127.0.0.1 sending a body one byte every 2 seconds to the one route that
    /// reads its body before any credential; --max-requests 256 would have been taken whole before
    /// the per-address limits. Meanwhile 127.0.0.2 is answered as on an idle server.
    @Test("400 slow bodies from one address hold nothing another address needs")
    func slowBodiesFromOneAddress() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let server = try await Server.start(
            in: sandbox, options: ["--max-requests", "256", "--head-timeout", "3", "--body-timeout", "8"])
        let (guest, token) = try await server.signIn()
        let check =
            "GET /v1/users/\(guest)/meters/api_minutes/check?amount=1 HTTP/1.1\r\nHost: guestmode\r\n"
            + "Authorization: Bearer \(token)\r\n\r\n"
        let result = try await Self.clients(
            in: sandbox,
            [
                "address": server.address,
                "flood": [
                    "seconds": 14, "head_start": 2, "control": 3,
                    "slow": [
                        "source": "127.0.0.1", "count": 400, "every": 2,
                        "head": "POST /v1/sessions/refresh HTTP/1.1\r\nHost: guestmode\r\n"
                            + "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n",
                    ],
                    "probe": [
                        "source": "127.0.0.2",
                        "requests": [check, check, check, check, "GET /healthz HTTP/1.1\r\nHost: guestmode\r\n\r\n"],
                    ],
                ],
            ])
        let flood = try #require(result["flood"] as? [String: Any])
        let probes = try #require(flood["probes"] as? [[String: Any]])
        let slow = try #require(flood["slow"] as? [String: Any])
        let control = try #require(flood["control"] as? [[String: Any]]).compactMap { $0["ms"] as? Double }.sorted()
        let failed = probes.filter { $0["status"] as? Int != 200 }
        #expect(failed.isEmpty, "answers other than 200 to 127.0.0.2: \(failed.prefix(10))")
        #expect(probes.contains { $0["request"] as? Int == 4 && $0["status"] as? Int == 200 }, "/healthz answered")
        // Held by the slow clients, a probe waits for a connection or a request slot to free: seconds
        // each (bodies are cut 5 s in as too slow, --body-timeout is 8), so the 12 seconds hold a handful
        // of answers, most of them slower than a second. Not held, the probe keeps near the pace and the
        // latency it had on the same server before the slow clients came (the control). The bounds are
        // relative to that control and loose, because the machine is shared: a full `make test` on 2
        // cores (another CI run) slowed 127.0.0.2 to 79 answers, a third of them 100 ms or more and one
        // of 2.9 s, against a control of 55 answers in 3 s with a p99 of 93 ms; the slow side holds
        // Python's lock in the same process as the probe, too.
        let latencies = probes.compactMap { $0["ms"] as? Double }.sorted()
        let p90 = Self.percentile(90, of: latencies)
        let controlP99 = Self.percentile(99, of: control)
        let summary =
            "\(latencies.count) answers to 127.0.0.2 in 12 s (p50 \(Self.percentile(50, of: latencies)), p90 \(p90) ms; the slowest \(latencies.suffix(5))), \(control.count) in 3 s without the slow clients (p99 \(controlP99) ms); slow side: \(slow)"
        // A quarter of the control's pace: its 3 seconds against these 12.
        #expect(latencies.count >= control.count, "under a quarter of the control's pace: \(summary)")
        #expect(p90 < 250 + 2 * controlP99, "\(summary)")
        let heldSeconds = latencies.filter { $0 >= 2000 }.count
        #expect(heldSeconds <= 2, "\(heldSeconds) waited 2 s or more: \(summary)")
        // The slow bodies were cut as too slow (408), or turned away (429) past --requests-per-address.
        let statuses = slow["statuses"] as? [String: Int] ?? [:]
        #expect(statuses["408", default: 0] > 0, "slow side: \(slow)")
        #expect(statuses["429", default: 0] > 0, "slow side: \(slow)")
        // Stopped first: a line may be written after the client saw its connection close.
        #expect(try await server.stop() == 0)
        let access = try Self.accessLines(sandbox)
        #expect(!access.contains { $0["status"] as? Int == 500 }, "a slow client counted as the server's fault")
        #expect(access.contains { $0["status"] as? Int == 408 && $0["error"] == nil })
    }

    /// A head or a body trickled one byte at a time: every byte reset --idle-timeout, so neither ever
    /// ended; now each has a deadline of its own, counted from its start.
    @Test("a head and a body trickled byte by byte are cut at their deadlines, as the client's fault")
    func trickledHeadAndBody() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let server = try await Server.start(
            in: sandbox, options: ["--head-timeout", "2", "--body-timeout", "3", "--min-body-rate", "0"])
        let result = try await Self.clients(
            in: sandbox,
            [
                "address": server.address,
                "connections": [
                    [
                        "timeout": 12,
                        "steps": [
                            ["trickle": "GET /healthz HTTP/1.1\r\nHost: guestmode-trickled-head\r\n\r\n", "every": 0.3]
                        ],
                    ],
                    [
                        "timeout": 12,
                        "steps": [
                            [
                                "send":
                                    "POST /v1/sessions/refresh HTTP/1.1\r\nHost: guestmode\r\nContent-Length: 1000\r\n\r\n"
                            ],
                            ["trickle": String(repeating: " ", count: 1000), "every": 0.3],
                        ],
                    ],
                    // Also a request whose body is late to come at all.
                    [
                        "timeout": 12,
                        "steps": [
                            [
                                "send":
                                    "POST /v1/sessions/refresh HTTP/1.1\r\nHost: guestmode\r\nContent-Length: 10\r\n\r\n"
                            ],
                            ["wait": 12],
                        ],
                    ],
                    // A connection that never asks, and one kept alive that asks nothing more: closed unanswered.
                    ["timeout": 12, "steps": [["wait": 12]]],
                    [
                        "timeout": 12,
                        "steps": [["send": "GET /healthz HTTP/1.1\r\nHost: guestmode\r\n\r\n"], ["wait": 12]],
                    ],
                ],
            ])
        let connections = try #require(result["connections"] as? [[String: Any]])
        #expect(connections.count == 5)
        #expect(connections[3]["closed"] as? Bool == true && connections[3]["status"] as? Int == 0, "\(connections[3])")
        #expect(
            connections[4]["closed"] as? Bool == true && connections[4]["status"] as? Int == 200, "\(connections[4])")
        for (index, connection) in connections.prefix(3).enumerated() {
            #expect(connection["closed"] as? Bool == true, "connection \(index) still open: \(connection)")
            #expect(connection["status"] as? Int == 408, "connection \(index): \(connection)")
            #expect(Self.errorCode(connection) == "request_timeout", "connection \(index): \(connection)")
        }
        #expect(try await server.stop() == 0)
        let access = try Self.accessLines(sandbox)
        #expect(!access.contains { $0["status"] as? Int == 500 }, "\(access)")
        #expect(access.filter { $0["status"] as? Int == 408 }.count == 3, "\(access)")
    }

    /// A body cut by --idle-timeout (nothing for a second) was logged and counted as a 500: the client
    /// stopped sending, the server is not at fault.
    @Test("a body cut by --idle-timeout is the client's lateness (408), not a 500")
    func idleTimeoutCut() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let server = try await Server.start(in: sandbox, options: ["--idle-timeout", "1"])
        let result = try await Self.clients(
            in: sandbox,
            [
                "address": server.address,
                "connections": [
                    [
                        "timeout": 6,
                        "steps": [
                            [
                                "send":
                                    "POST /v1/sessions/refresh HTTP/1.1\r\nHost: guestmode\r\nContent-Length: 10\r\n\r\n{\""
                            ]
                        ],
                    ]
                ],
            ])
        let connections = try #require(result["connections"] as? [[String: Any]])
        #expect(connections.first?["closed"] as? Bool == true, "\(connections)")
        #expect(try await server.stop() == 0)
        let access = try Self.accessLines(sandbox)
        #expect(!access.contains { $0["status"] as? Int == 500 }, "\(access)")
        #expect(
            access.contains { $0["status"] as? Int == 408 && $0["route"] as? String == "/v1/sessions/refresh" },
            "\(access)")
    }

    /// Bodies are held whole until their route answers, and may come slowly: slow clients of a few
    /// addresses could hold --max-requests bodies of 1 MiB at once (512 MiB), anonymously through the
    /// refresh route, which reads its body before any credential. --body-memory bounds them together.
    @Test("past --body-memory a body is 503 server_busy before it is read; a bad --body-memory is exit 64")
    func bodyMemory() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let small = try await sandbox.run("serve", "--body-memory", "1048575")
        #expect(small.status == 64, "\(small.stderr)")
        #expect(small.stderr.contains("--body-memory must be between 1048576"), "\(small.stderr)")
        let uploads = try await sandbox.run("serve", "--upload-space", "1048576")
        #expect(uploads.status == 64, "\(uploads.stderr)")
        #expect(uploads.stderr.contains("--upload-space must be between 268435456"), "\(uploads.stderr)")
        let server = try await Server.start(
            in: sandbox, options: ["--body-memory", "1048576", "--min-body-rate", "0", "--body-timeout", "8"])
        let refresh = "POST /v1/sessions/refresh HTTP/1.1\r\nHost: guestmode\r\nContent-Type: application/json\r\n"
        let result = try await Self.clients(
            in: sandbox,
            [
                "address": server.address,
                "connections": [
                    // Declared at a megabyte, one byte sent: the bytes are held from the head on, until
                    // --body-timeout cuts it. The others come 3 s later, time for a loaded machine to read
                    // its head.
                    ["timeout": 10, "steps": [["send": refresh + "Content-Length: 1000000\r\n\r\n{"], ["wait": 10]]],
                    [
                        "source": "127.0.0.2", "delay": 3, "timeout": 4,
                        "steps": [["send": refresh + "Content-Length: 100000\r\n\r\n"]],
                    ],
                    ["delay": 3, "timeout": 4, "steps": [["send": refresh + "Content-Length: 2\r\n\r\n{}"]]],
                ],
            ])
        let connections = try #require(result["connections"] as? [[String: Any]])
        #expect(connections.count == 3)
        #expect(connections[1]["status"] as? Int == 503, "another address past the bound: \(connections[1])")
        #expect(Self.errorCode(connections[1]) == "server_busy", "\(connections[1])")
        #expect(connections[1]["closed"] as? Bool == true, "its body was not waited for: \(connections[1])")
        // What fits is read and answered as ever: a refresh without its token.
        #expect(connections[2]["status"] as? Int == 400, "\(connections[2])")
        #expect(try await server.stop() == 0)
        let access = try Self.accessLines(sandbox)
        #expect(!access.contains { $0["status"] as? Int == 500 }, "\(access)")
        let busy = try #require(access.first { $0["status"] as? Int == 503 }, "\(access)")
        #expect((busy["error"] as? String)?.contains("--body-memory") == true, "\(busy)")
    }

    /// An archive is answered a chunk at a time, each write waiting for the client to take the one
    /// before, and Hummingbird's idle timeout is off while an answer is in progress: a client that
    /// stopped reading held a request's slot, a descriptor and a chunk for as long as it stayed
    /// connected. Now a write the client has not taken within --idle-timeout closes the connection.
    @Test("a client that stops reading an archive is cut off after --idle-timeout, short of the archive")
    func stalledArchiveReader() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let server = try await Server.start(in: sandbox, options: ["--backups-dir", "pushed", "--idle-timeout", "1"])
        let (guest, token) = try await server.signIn()
        // A kept archive is answered as it is kept, so its bytes do not matter here, only that it is
        // far larger than the two sockets' buffers: the server's writes back up.
        let size = 64 << 20
        let folder = sandbox.path("pushed/\(guest)")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: "\(folder)/0000000001-large.gmbackup", contents: nil))
        let file = try #require(FileHandle(forWritingAtPath: "\(folder)/0000000001-large.gmbackup"))
        try file.truncate(atOffset: UInt64(size))
        try file.close()
        let pull =
            "GET /v1/users/\(guest)/backups/latest HTTP/1.1\r\nHost: guestmode\r\nAuthorization: Bearer \(token)\r\n\r\n"
        let result = try await Self.clients(
            in: sandbox,
            [
                "address": server.address,
                "connections": [
                    // Stalled 8 s: the cut is due 1 s after the first write that waits, with time to spare
                    // on a loaded machine; a client that read again before it would be sent the rest.
                    ["timeout": 40, "receive_buffer": 65536, "steps": [["send": pull], ["stall": 8]]]
                ],
            ])
        let connection = try #require((result["connections"] as? [[String: Any]])?.first)
        #expect(connection["status"] as? Int == 200, "\(connection)")
        #expect(connection["closed"] as? Bool == true, "\(connection)")
        // Read in full once the client read again, the archive was waited for while it did not.
        let received = try #require(connection["received"] as? Int)
        #expect(received < size, "the whole archive came after an 8-second stall: \(connection)")
        #expect(try await server.stop() == 0)
        let access = try Self.accessLines(sandbox)
        let pulled = try #require(access.first { $0["route"] as? String == "/v1/users/{user}/backups/{name}" })
        #expect(pulled["status"] as? Int == 200 && pulled["bytes"] as? Int == size, "\(pulled)")
        let cut = try #require(access.first { $0["message"] as? String == "answer cut short" }, "\(access)")
        #expect(cut["request_id"] as? String == pulled["request_id"] as? String, "\(cut)")
        #expect((cut["bytes_written"] as? Int ?? size) < size, "\(cut)")
    }

    /// Transfer codings the server cannot read, chunks it cannot parse, HTTP/1.0 bodies without a
    /// length: each is answered with its own status and the error document, before anything is done.
    @Test("HTTP edges: transfer codings, malformed chunks, HTTP/1.0 bodies and connections")
    func httpEdges() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let server = try await Server.start(in: sandbox)
        let refresh = "POST /v1/sessions/refresh HTTP/1.1\r\nHost: guestmode\r\nContent-Type: application/json\r\n"
        let cases: [(request: String, status: Int, code: String?, closed: Bool)] = [
            (
                refresh + "Transfer-Encoding: xchunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 501,
                "unsupported_transfer_encoding", true
            ),
            (
                refresh + "Transfer-Encoding: gzip, chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 501,
                "unsupported_transfer_encoding", true
            ),
            (refresh + "Transfer-Encoding: chunked\r\n\r\n-2\r\n{}\r\n0\r\n\r\n", 400, "malformed_request", true),
            (refresh + "Transfer-Encoding: chunked\r\n\r\n2zz\r\n{}\r\n0\r\n\r\n", 400, "malformed_request", true),
            (
                "POST /v1/sessions/refresh HTTP/1.0\r\nHost: guestmode\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
                411, "length_required", true
            ),
            ("POST /v1/sessions/refresh HTTP/1.0\r\nHost: guestmode\r\n\r\n{}", 411, "length_required", true),
            // Plain chunked is read as ever: the route sees the body (and asks for what it lacks).
            (refresh + "Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", 400, "usage", false),
            // Answered before its body: the rest is not waited for, the connection closes after the answer.
            (refresh + "Content-Length: 2000000\r\n\r\n{", 413, "body_too_large", true),
            ("GET /healthz HTTP/1.0\r\nHost: guestmode\r\n\r\n", 200, nil, true),
            ("GET /healthz HTTP/1.0\r\nHost: guestmode\r\nConnection: keep-alive\r\n\r\n", 200, nil, false),
        ]
        let result = try await Self.clients(
            in: sandbox,
            [
                "address": server.address,
                "connections": cases.map { ["timeout": 3, "steps": [["send": $0.request]]] as [String: Any] },
            ])
        let connections = try #require(result["connections"] as? [[String: Any]])
        #expect(connections.count == cases.count)
        for (expected, answer) in zip(cases, connections) {
            let line = expected.request.prefix(while: { $0 != "\r" })
            #expect(answer["status"] as? Int == expected.status, "\(line): \(answer)")
            #expect(answer["closed"] as? Bool == expected.closed, "\(line): \(answer)")
            if let code = expected.code {
                #expect(Self.errorCode(answer) == code, "\(line): \(answer)")
                let message = Self.error(answer)?["message"] as? String ?? ""
                #expect(!message.isEmpty && !message.contains("guestmode"), "\(line): the message names a header value")
            }
        }
        #expect(try await server.stop() == 0)
        let access = try Self.accessLines(sandbox)
        #expect(!access.contains { $0["status"] as? Int == 500 }, "\(access)")
    }

    /// Past --requests-per-address an address is turned away (429) while its requests are answered,
    /// but never from the operations routes, and never another address.
    @Test("an address past --requests-per-address is 429, its /healthz still answered")
    func requestsPerAddress() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let server = try await Server.start(
            in: sandbox, options: ["--requests-per-address", "4", "--min-body-rate", "0", "--body-timeout", "6"])
        let slow: [String: Any] = [
            "timeout": 8,
            "steps": [
                ["send": "POST /v1/sessions/refresh HTTP/1.1\r\nHost: guestmode\r\nContent-Length: 100\r\n\r\n"],
                ["trickle": String(repeating: " ", count: 100), "every": 1],
            ],
        ]
        func after(_ seconds: Double, _ request: String, from source: String) -> [String: Any] {
            ["source": source, "timeout": 4, "steps": [["wait": seconds], ["send": request]]]
        }
        let refresh =
            "POST /v1/sessions/refresh HTTP/1.1\r\nHost: guestmode\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
        let result = try await Self.clients(
            in: sandbox,
            [
                "address": server.address,
                "connections": Array(repeating: slow, count: 4) + [
                    after(
                        1.5, "GET /healthz HTTP/1.1\r\nHost: guestmode\r\nConnection: close\r\n\r\n", from: "127.0.0.1"),
                    after(1.5, refresh, from: "127.0.0.1"),
                    after(1.5, refresh, from: "127.0.0.2"),
                ],
            ])
        let connections = try #require(result["connections"] as? [[String: Any]])
        #expect(connections.count == 7)
        #expect(connections[4]["status"] as? Int == 200, "/healthz from the throttled address: \(connections[4])")
        #expect(connections[5]["status"] as? Int == 429, "\(connections[5])")
        #expect(Self.errorCode(connections[5]) == "rate_limited")
        // Another address is answered: the refresh token is unknown (a 4xx of the route, not 429).
        #expect(connections[6]["status"] as? Int != 429, "\(connections[6])")
        #expect(try await server.stop() == 0)
    }

    /// A trusted proxy's connections carry many clients: they are not capped, and each client it names
    /// has its own requests; any other peer is capped by its own address, whatever it forwards.
    @Test("--trusted-proxy: its clients are counted apart and its connections uncapped; another peer is capped")
    func trustedProxy() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let server = try await Server.start(
            in: sandbox,
            options: [
                "--trusted-proxy", "127.0.0.1", "--requests-per-address", "2", "--connections-per-address", "2",
                "--min-body-rate", "0", "--body-timeout", "6",
            ])
        func slow(from source: String, for client: String) -> [String: Any] {
            [
                "source": source, "timeout": 8,
                "steps": [
                    [
                        "send":
                            "POST /v1/sessions/refresh HTTP/1.1\r\nHost: guestmode\r\nX-Forwarded-For: \(client)\r\n"
                            + "Content-Length: 100\r\n\r\n"
                    ],
                    ["trickle": String(repeating: " ", count: 100), "every": 1],
                ],
            ]
        }
        func after(_ seconds: Double, from source: String, for client: String) -> [String: Any] {
            let request =
                "POST /v1/sessions/refresh HTTP/1.1\r\nHost: guestmode\r\nX-Forwarded-For: \(client)\r\n"
                + "Content-Length: 2\r\nConnection: close\r\n\r\n{}"
            // Opened late: the connections of an address are counted as they open.
            return ["source": source, "delay": seconds, "timeout": 4, "steps": [["send": request]]]
        }
        let result = try await Self.clients(
            in: sandbox,
            [
                "address": server.address,
                "connections": [
                    slow(from: "127.0.0.1", for: "10.0.0.1"), slow(from: "127.0.0.1", for: "10.0.0.1"),
                    after(1.5, from: "127.0.0.1", for: "10.0.0.1"), after(1.5, from: "127.0.0.1", for: "10.0.0.2"),
                    slow(from: "127.0.0.2", for: "10.0.0.3"), slow(from: "127.0.0.2", for: "10.0.0.4"),
                    after(1.5, from: "127.0.0.2", for: "10.0.0.5"),
                ],
            ])
        let connections = try #require(result["connections"] as? [[String: Any]])
        #expect(connections.count == 7)
        #expect(
            connections[2]["status"] as? Int == 429, "a client behind the proxy past its requests: \(connections[2])")
        let other = connections[3]["status"] as? Int ?? 0
        #expect(other != 0 && other != 429, "another client behind the proxy: \(connections[3])")
        #expect(
            connections[6]["status"] as? Int == 0 && connections[6]["closed"] as? Bool == true,
            "a third connection of an untrusted peer is closed unanswered: \(connections[6])")
        #expect(try await server.stop() == 0)
        let access = try Self.accessLines(sandbox)
        #expect(access.contains { $0["status"] as? Int == 429 && $0["client"] as? String == "10.0.0.1" })
    }

    static func clients(in sandbox: Sandbox, _ plan: [String: Any]) async throws -> [String: Any] {
        try sandbox.write(
            "plan.json", String(decoding: try JSONSerialization.data(withJSONObject: plan), as: UTF8.self))
        let script = Sandbox.packageRoot.appendingPathComponent("scripts/slow-clients.py").path
        let run = try await sandbox.shell("exec /usr/bin/python3 '\(script)' < plan.json")
        #expect(run.status == 0, "\(run.stderr)")
        return try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any])
    }

    /// The `p`th percentile of latencies sorted ascending, infinite for none (no answer is no pace).
    static func percentile(_ p: Int, of sorted: [Double]) -> Double {
        sorted.isEmpty ? .infinity : sorted[min(sorted.count - 1, sorted.count * p / 100)]
    }

    static func accessLines(_ sandbox: Sandbox) throws -> [[String: Any]] {
        String(decoding: try sandbox.read("serve.log"), as: UTF8.self).split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }.filter { $0["logger"] as? String == "guestmode.access" }
    }

    static func error(_ answer: [String: Any]) -> [String: Any]? {
        let body = answer["body"] as? String ?? ""
        return ((try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any])?["error"]
            as? [String: Any]
    }

    static func errorCode(_ answer: [String: Any]) -> String? {
        error(answer)?["code"] as? String
    }
}
