import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import Testing

@testable import GuestModeServer

/// `PathRouter` finds the route Hummingbird's `Router` finds, with the same endpoint and parameters, or the same 404:
/// both are given one route table, with echoing responders, and asked the same requests.
@Suite("the path router")
struct PathRouterTests {
    /// What a request reached: the status, and for a route its endpoint and the parameters its template names.
    static func outcome(
        of responder: some HTTPResponder<BasicRequestContext>, _ method: HTTPRequest.Method, _ path: String
    ) async throws -> String {
        let request = Request(
            head: HTTPRequest(method: method, scheme: "http", authority: "localhost", path: path, headerFields: [:]),
            body: RequestBody(buffer: ByteBuffer()))
        var logger = Logger(label: "test", factory: { _ in SilentLogHandler() })
        logger[metadataKey: "hb.request.id"] = .string("r")
        let context = BasicRequestContext(
            source: ApplicationRequestContextSource(channel: NIOAsyncTestingChannel(), logger: logger))
        let response = try await responder.respond(to: request, context: context)
        let collected = Collected()
        try await response.body.write(BodyCollector(collected: collected))
        return "\(response.status.code) \(String(decoding: collected.bytes, as: UTF8.self))"
    }

    /// Both routers with `routes`, each answering with its endpoint and its template's parameters.
    static func routers(
        _ routes: [(String, HTTPRequest.Method)]
    ) -> (Router<BasicRequestContext>, PathRouter<BasicRequestContext>) {
        let hummingbird = Router(context: BasicRequestContext.self)
        let bytes = PathRouter(context: BasicRequestContext.self)
        for (path, method) in routes {
            let echo: @Sendable (Request, BasicRequestContext) async throws -> String = { request, context in
                let endpoint = context.endpointPath ?? "-"
                let names = endpoint.split(separator: "/").filter { $0.hasPrefix("{") }.map {
                    $0.dropFirst().dropLast()
                }
                let values = names.map { "\($0)=\(context.parameters.get(String($0)) ?? "nil")" }
                return "\(request.method.rawValue) \(endpoint) \(values.joined(separator: ","))"
            }
            hummingbird.on(RouterPath(path), method: method, use: echo)
            bytes.on(RouterPath(path), method: method, use: echo)
        }
        return (hummingbird, bytes)
    }

    static let tricky: [(String, HTTPRequest.Method)] = [
        ("/a/:x", .get), ("/a/b/c", .get), ("/a/b", .post), ("/:p/q", .get), ("/a/:x/d", .get), ("/a/:x/d", .delete),
        ("/v1/users/:user", .get), ("/v1/users/me", .get), ("/v1/users/:user/records/:collection/:key", .get),
        ("/v1/users/:user/records/:collection", .get), ("/v1/users/:user/records/:collection/:key", .put),
        ("/.well-known/jwks.json", .get), ("/healthz", .get), ("/x/:a/:b/y", .get), ("/x/:a/z/w", .get),
    ]

    static let paths = [
        "", "/", "//", "/a", "/a/", "//a//", "/a/b", "/a/b/", "/a/b/c", "/a/b/c/d", "/a/zz/d", "/a/b/d", "/zz/q",
        "/a/q",
        "/b/q", "/A/b", "/v1/users/u1", "/v1/users/me", "/v1/users/me/records/c/k", "/v1/users/u%2F1/records/c",
        "/v1/users/é/records/ç/ü", "/v1//users///u1/records/c/k/", "/v1/users/u1/records", "/v1/users",
        "/.well-known/jwks.json", "/.well-known/jwks.jsonx", "/healthz", "/healthz/", "/x/1/2/y", "/x/1/z/w",
        "/x/1/z/y", "/x/1/2/w", "/x/1/z", "/v1/users/u1/records/c/k/extra", "/a/%62", "/a/b c",
    ]

    @Test("on a table with constants and captures at every level, in an order that needs backtracking")
    func trickyTable() async throws {
        let (hummingbird, bytes) = Self.routers(Self.tricky)
        let expected = hummingbird.buildResponder()
        let actual = bytes.buildResponder()
        for path in Self.paths {
            for method in [HTTPRequest.Method.get, .post, .put, .delete] {
                let want = try await Self.outcome(of: expected, method, path)
                let got = try await Self.outcome(of: actual, method, path)
                #expect(got == want, "\(method) \(path)")
            }
        }
        #expect(bytes.routes.map(\.path.description) == Self.tricky.map { RouterPath($0.0).description })
    }

    @Test("on guestmode serve's own routes, each asked with its parameters filled in and with the paths around it")
    func serveRoutes() async throws {
        let table = try await RouteTester.everyRoute().routes.map { ($0.path.description, $0.method) }
        #expect(table.count > 40)
        let (hummingbird, bytes) = Self.routers(table)
        let expected = hummingbird.buildResponder()
        let actual = bytes.buildResponder()
        var asked = 0
        for (template, _) in table {
            let filled = template.split(separator: "/").map { $0.hasPrefix("{") ? "u1" : String($0) }
            for path in [
                "/" + filled.joined(separator: "/"), "/" + filled.dropLast().joined(separator: "/"),
                "/" + (filled + ["extra"]).joined(separator: "/"), "//" + filled.joined(separator: "//") + "/",
                "/" + filled.map { $0 == "u1" ? "me" : $0 }.joined(separator: "/"),
                "/" + filled.map { $0 == "u1" ? "check" : $0 }.joined(separator: "/"),
            ] {
                for method in [HTTPRequest.Method.get, .post, .put, .delete] {
                    let want = try await Self.outcome(of: expected, method, path)
                    let got = try await Self.outcome(of: actual, method, path)
                    #expect(got == want, "\(method) \(path)")
                    asked += 1
                }
            }
        }
        #expect(asked > 1_000)
    }
}
