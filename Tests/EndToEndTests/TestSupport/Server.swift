import Foundation
import GuestModeCommandLine
import Testing

/// A running `guestmode serve --listen 127.0.0.1:0` and a curl client for it.
final class Server: @unchecked Sendable {
    let process: ChildProcess
    let address: String
    private let errors: FileHandle
    /// The folder holding the server's store and log, kept as long as the server: a test that drops its
    /// sandbox would otherwise remove the store under the running server, whose next new connection then
    /// fails (`cannot_open_store`).
    private let sandbox: Sandbox

    private init(process: ChildProcess, address: String, errors: FileHandle, sandbox: Sandbox) {
        self.process = process
        self.address = address
        self.errors = errors
        self.sandbox = sandbox
    }

    deinit {
        guard process.isRunning else { return }
        process.send(SIGTERM)
        let process = self.process
        Thread.detachNewThread { _ = try? process.wait() }
    }

    static func start(in sandbox: Sandbox, json: Bool = false, options: [String] = []) async throws -> Server {
        _ = FileManager.default.createFile(atPath: sandbox.path("serve.log"), contents: nil)
        let errors = try FileHandle(forWritingTo: URL(fileURLWithPath: sandbox.path("serve.log")))
        let process = try ChildProcess(
            Sandbox.binary.path, arguments: ["serve", "--listen", "127.0.0.1:0"] + (json ? ["--json"] : []) + options,
            environment: sandbox.environment, directory: sandbox.directory.path, input: .null, output: .pipe,
            errors: .descriptor(errors.fileDescriptor))
        let output = try #require(process.output)
        let line = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var bytes: [UInt8] = []
                while let byte = try? output.read(upToCount: 1), let first = byte.first,
                    first != UInt8(ascii: "\n")
                {
                    bytes.append(first)
                }
                continuation.resume(returning: String(decoding: bytes, as: UTF8.self))
            }
        }
        let address =
            json
            ? (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])?["listening"] ?? ""
            : String(line.replacingOccurrences(of: "listening on http://", with: ""))
        #expect(address.hasPrefix("127.0.0.1:"), "the startup line was '\(line)'")
        return Server(process: process, address: address, errors: errors, sandbox: sandbox)
    }

    /// SIGTERM, then the exit status. Every answer the server gave was checked against its OpenAPI
    /// document first (`checkAnswers`).
    func stop() async throws -> Int32 {
        try await checkAnswers()
        process.send(SIGTERM)
        let process = self.process
        return try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try process.wait().status })
            }
        }
    }

    /// The answers `request` got so far, each as the NDJSON line scripts/check-openapi-responses.py reads.
    private let answers = Answers()

    /// Checks every answer so far against schemas/openapi.json, the document the server serves: its
    /// route lists the status and the media type, and a JSON body is valid against the schema (a real
    /// validator, python3-jsonschema; a missing one fails). Every error body is also read for what
    /// names the server's inside or echoes what the request sent (`ErrorBodyScan`).
    func checkAnswers(sourceLocation: SourceLocation = #_sourceLocation) async throws {
        let leaks = answers.takeLeaks()
        #expect(
            leaks.isEmpty, "error bodies that name the server's inside:\n\(leaks.joined(separator: "\n"))",
            sourceLocation: sourceLocation)
        let lines = answers.take()
        guard !lines.isEmpty else { return }
        let sandbox = try Sandbox()
        try lines.joined(separator: "\n").write(
            toFile: sandbox.path("answers.ndjson"), atomically: true, encoding: .utf8)
        let script = Sandbox.packageRoot.appendingPathComponent("scripts/check-openapi-responses.py").path
        let result = try await sandbox.shell(
            """
            for python in /usr/bin/python3 python3; do
                if "$python" -c 'import jsonschema' 2>/dev/null; then
                    exec "$python" '\(script)' < answers.ndjson
                fi
            done
            echo 'no python3 with jsonschema: make deps installs python3-jsonschema' >&2
            exit 2
            """)
        #expect(
            result.status == 0, "answers that schemas/openapi.json does not describe:\n\(result.stderr)",
            sourceLocation: sourceLocation)
    }

    /// A guest signed in: its id and access token.
    func signIn() async throws -> (String, String) {
        let created = try await request("POST", "/v1/guests")
        return (
            try #require(created.object["user_id"] as? String), try #require(created.object["access_token"] as? String)
        )
    }

    struct Reply {
        /// 0 when nothing answered.
        var status: Int
        var headers: [String: String]
        var body: String

        var object: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
        }
        var array: [[String: Any]] {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [[String: Any]] ?? []
        }
    }

    /// One request through curl. `maxTime` bounds curl's whole wait: a reply of status 0 when it passes.
    func request(
        _ method: String, _ path: String, token: String? = nil, body: String? = nil, headers: [String: String] = [:],
        maxTime: Int = 30
    ) async throws -> Reply {
        // No `Expect: 100-continue`: the answer is the one response that follows the request.
        var arguments = [
            "-s", "-i", "-H", "Expect:", "-X", method, "--max-time", String(maxTime), "http://\(address)\(path)",
        ]
        if let token { arguments += ["-H", "Authorization: Bearer \(token)"] }
        for (name, value) in headers { arguments += ["-H", "\(name): \(value)"] }
        if body != nil { arguments += ["-H", "Content-Type: application/json", "--data-binary", "@-"] }
        let input = body.map { Data($0.utf8) }
        let command = arguments
        let output: Data = try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try Self.client("/usr/bin/curl", command, input: input) })
            }
        }
        let text = String(decoding: output, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return Reply(status: 0, headers: [:], body: text) }
        let head = text[..<split.lowerBound].split(separator: "\r\n")
        var fields: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let status = head.first.flatMap { $0.split(separator: " ").dropFirst().first }.flatMap { Int($0) } ?? 0
        let reply = Reply(status: status, headers: fields, body: String(text[split.upperBound...]))
        answers.record(
            method: method, path: path, reply: reply, sent: Array(headers.values) + [token].compactMap { $0 })
        return reply
    }

    /// One request of `requestsAtOnce`.
    struct PlannedRequest {
        var method: String
        var path: String
        var token: String?
        var body: String?
        var headers: [String: String] = [:]
    }

    /// Sends every request on its own connection at the same moment (scripts/requests-at-once.py: all
    /// connections open first, then one barrier releases them), and, with `terminatingAfter`, SIGTERMs
    /// the server that many seconds after the release. The replies come in the requests' order.
    func requestsAtOnce(_ requests: [PlannedRequest], terminatingAfter delay: Double? = nil) async throws -> [Reply] {
        var plan: [String: Any] = [
            "address": address,
            "requests": requests.map { request -> [String: Any] in
                var headers = request.headers
                if let token = request.token { headers["Authorization"] = "Bearer \(token)" }
                if request.body != nil { headers["Content-Type"] = "application/json" }
                var planned: [String: Any] = ["method": request.method, "path": request.path, "headers": headers]
                if let body = request.body { planned["body"] = body }
                return planned
            },
        ]
        if let delay { plan["terminate"] = ["pid": Int(process.processIdentifier), "after": delay] }
        let input = try JSONSerialization.data(withJSONObject: plan)
        let script = Sandbox.packageRoot.appendingPathComponent("scripts/requests-at-once.py").path
        let output: Data = try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(with: Result { try Self.client("/usr/bin/python3", [script], input: input) })
            }
        }
        let answers = try #require(try JSONSerialization.jsonObject(with: output) as? [[String: Any]])
        return answers.map { answer in
            Reply(
                status: answer["status"] as? Int ?? 0, headers: answer["headers"] as? [String: String] ?? [:],
                body: answer["body"] as? String ?? "")
        }
    }

    private static func client(_ executable: String, _ arguments: [String], input: Data?) throws -> Data {
        // Dozens of curl processes started and reaped at once interrupt one another's system calls:
        // a bounded number run.
        curlSlots.wait()
        defer { curlSlots.signal() }
        return try ChildProcess.run(executable, arguments: arguments, input: input).output
    }
}

/// The answers a `Server` got, for `checkAnswers`.
private final class Answers: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    private var leaks: [String] = []

    func record(method: String, path: String, reply: Server.Reply, sent: [String] = []) {
        // Nothing answered (a cut connection, a stopped server): nothing to check.
        guard reply.status != 0 else { return }
        if reply.status >= 400 {
            let found = ErrorBodyScan.leaks(in: reply.body, sent: sent)
            if !found.isEmpty {
                lock.withLock {
                    leaks.append(
                        "\(method) \(path) → \(reply.status): \(found.joined(separator: ", ")) in \(reply.body)")
                }
            }
        }
        let line: [String: Any] = [
            "method": method, "path": String(path.split(separator: "?", maxSplits: 1).first ?? ""),
            "status": reply.status, "content_type": reply.headers["content-type"] ?? "", "body": reply.body,
        ]
        guard let data = try? JSONSerialization.data(withJSONObject: line) else { return }
        lock.withLock { lines.append(String(decoding: data, as: UTF8.self)) }
    }

    func takeLeaks() -> [String] {
        lock.withLock {
            defer { leaks = [] }
            return leaks
        }
    }

    func take() -> [String] {
        lock.withLock {
            defer { lines = [] }
            return lines
        }
    }
}

/// How many curl processes the tests run at once (`Server.curl`).
private let curlSlots = DispatchSemaphore(value: 16)

/// What an error body must never hold (guestmode-serve(1), "Errors"): a path on the server, a store's
/// URL, a host or port, SQL, or a header value the request sent (a token, a key).
enum ErrorBodyScan {
    static let inside = [
        "/tmp/", "/var/", "/home/", "/root/", "/work/", "/usr/", "/etc/", "/run/", "guestmode-e2e-", "guestmode-serve-",
        ".sqlite", ".key", "postgresql://", "postgres://", "127.0.0.1", "127.0.0.2", "localhost", "[::1]", "SELECT ",
        "INSERT ", "UPDATE ", "DELETE FROM", "pg_", "sqlite_", "Connection refused", "server at",
    ]

    static func leaks(in body: String, sent: [String]) -> [String] {
        var found = inside.filter { body.contains($0) }
        // Values long enough not to be a word of a message by chance.
        found += sent.filter { $0.count >= 12 && body.contains($0) }.map { "the request's '\($0)'" }
        return found
    }
}
