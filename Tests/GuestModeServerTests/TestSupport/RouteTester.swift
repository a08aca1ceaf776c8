import Foundation
import GuestModeKit
import GuestModeSQLite
import Hummingbird
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOPosix

@testable import GuestModeServer

/// The router `guestmode serve` runs (`GuestModeServer.buildRouter`), answered in process: a request
/// goes through the same middleware and controllers as over a socket, on an in-memory SQLite store,
/// with no connection and no process. What the socket adds (the connection guard, HTTP parsing) is the
/// curl suite's (Tests/EndToEndTests).
final class RouteTester: Sendable {
    let services: Services
    let responder: PathRouter<ServerContext>.Responder
    private let pool: NIOThreadPool

    struct Reply: Sendable {
        var status: Int
        var headers: HTTPFields
        /// The body as sent, for an archive.
        var bytes: [UInt8]
        /// The length of each piece the body was written in.
        var chunkSizes: [Int]
        var body: String { String(decoding: bytes, as: UTF8.self) }

        var object: [String: Any] {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any] ?? [:]
        }
        var array: [[String: Any]] {
            (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [[String: Any]] ?? []
        }
        var errorCode: String? { error["code"] as? String }
        /// The failure document's `error` object; empty when there is none.
        var error: [String: Any] { object["error"] as? [String: Any] ?? [:] }
    }

    /// What seals the in-memory store's signing keys, as a deployment key's derivation would.
    static let seal = SigningKeySeal(id: "test-deployment", bytes: Array(repeating: 7, count: 32))

    static let templates = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
        .appendingPathComponent("Templates")

    /// A server over a new in-memory store bound to the template `profile`, its clock fixed at `now`
    /// (the store's) unless `clock` moves it.
    init(
        profile: String, now: Date = Date(timeIntervalSince1970: 1_793_527_200),
        configure: (inout ServerConfiguration) -> Void = { _ in }, clock: (@Sendable () -> Date)? = nil
    ) async throws {
        let text = try String(
            contentsOf: Self.templates.appendingPathComponent("\(profile).yaml"), encoding: .utf8)
        let engine = try GuestMode.inMemory(profileText: text, origin: "\(profile).yaml", now: now)
        var configuration = ServerConfiguration(
            host: "127.0.0.1", port: 0, threads: 2, signingKeySeal: Self.seal)
        configuration.makeLogHandler = { _ in SwiftLogNoOpLogHandler() }
        configure(&configuration)
        let server = GuestModeServer(engine: engine, configuration: configuration, clock: clock ?? { now })
        pool = NIOThreadPool(numberOfThreads: configuration.threads)
        pool.start()
        services = try await server.makeServices(pool: pool)
        responder = GuestModeServer.buildRouter(
            services: services, configuration: configuration,
            accessLogger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() })
        ).buildResponder()
    }

    deinit { pool.shutdownGracefully { _ in } }

    /// The router `guestmode serve` builds with every optional route on (`--backups-dir`), for tests of its
    /// route table.
    static func everyRoute() async throws -> PathRouter<ServerContext> {
        let server = try await RouteTester(profile: "subscriptions") { $0.backupsDirectory = "/nonexistent" }
        var configuration = ServerConfiguration(host: "", port: 0, threads: 1, signingKeySeal: seal)
        configuration.backupsDirectory = "/nonexistent"
        return GuestModeServer.buildRouter(
            services: server.services, configuration: configuration, accessLogger: .init(label: "test"))
    }

    /// One request through the router: its status, headers and body.
    func request(
        _ method: HTTPRequest.Method, _ path: String, token: String? = nil, body: String? = nil,
        headers: HTTPFields = [:]
    ) async throws -> Reply {
        try await request(method, path, token: token, bytes: body.map { Array($0.utf8) }, headers: headers)
    }

    /// One request with a body of any bytes, an archive's.
    func request(
        _ method: HTTPRequest.Method, _ path: String, token: String? = nil, bytes: [UInt8]?,
        headers: HTTPFields = [:]
    ) async throws -> Reply {
        var fields = headers
        if let bytes { fields[.contentLength] = String(bytes.count) }
        return try await request(
            method, path, token: token, streamedBody: RequestBody(buffer: ByteBuffer(bytes: bytes ?? [])),
            headers: fields)
    }

    /// One request whose body comes as the test sends it (`RequestBody.makeStream()`), with the
    /// headers given (a `Content-Length`, or none for a chunked body).
    func request(
        _ method: HTTPRequest.Method, _ path: String, token: String? = nil, streamedBody: RequestBody,
        headers: HTTPFields = [:]
    ) async throws -> Reply {
        let response = try await respond(
            method, path, token: token, streamedBody: streamedBody, headers: headers, on: NIOAsyncTestingChannel())
        let collected = Collected()
        try await response.body.write(BodyCollector(collected: collected))
        return Reply(
            status: Int(response.status.code), headers: response.headers, bytes: collected.bytes,
            chunkSizes: collected.chunkSizes)
    }

    /// The router's response to one request that came on `channel`, its body not yet written: for a
    /// test that writes it itself, as a client reading at its own pace would take it.
    func respond(
        _ method: HTTPRequest.Method, _ path: String, token: String? = nil,
        streamedBody: RequestBody = RequestBody(buffer: ByteBuffer()), headers: HTTPFields = [:],
        on channel: any Channel
    ) async throws -> Response {
        var fields = headers
        if let token { fields[.authorization] = "Bearer \(token)" }
        let request = Request(
            head: HTTPRequest(method: method, scheme: "http", authority: "localhost", path: path, headerFields: fields),
            body: streamedBody)
        // Hummingbird reads the request id from the logger's metadata, which a no-op handler drops.
        var logger = Logger(label: "test", factory: { _ in SilentLogHandler() })
        logger[metadataKey: "hb.request.id"] = .string(UUID().uuidString)
        let context = ServerContext(source: ApplicationRequestContextSource(channel: channel, logger: logger))
        return try await responder.respond(to: request, context: context)
    }

    /// A guest signed in: its id and access token.
    func signIn() async throws -> (user: String, token: String) {
        let reply = try await request(.post, "/v1/guests")
        guard let user = reply.object["user_id"] as? String, let token = reply.object["access_token"] as? String else {
            throw GuestModeError(.internalFailure, "sign-in answered \(reply.status): \(reply.body)")
        }
        return (user, token)
    }

    /// A server key of `scope`, made through the engine as `serve key create` makes it.
    func key(_ scope: ServerScope, named name: String = "test") async throws -> String {
        try await services.perform { engine, now in
            try engine.createServerKey(named: name, scope: scope, now: now).secret
        }
    }
}

final class Collected: Sendable {
    private let storage = NIOLockedValueBox<(bytes: [UInt8], chunkSizes: [Int])>(([], []))
    func append(_ buffer: ByteBuffer) {
        storage.withLockedValue {
            $0.bytes += buffer.readableBytesView
            $0.chunkSizes.append(buffer.readableBytes)
        }
    }
    var bytes: [UInt8] { storage.withLockedValue { $0.bytes } }
    var chunkSizes: [Int] { storage.withLockedValue { $0.chunkSizes } }
}

struct BodyCollector: ResponseBodyWriter {
    let collected: Collected
    mutating func write(_ buffer: ByteBuffer) async throws { collected.append(buffer) }
    consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

/// Keeps metadata, writes nothing.
struct SilentLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .critical

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {}
}
