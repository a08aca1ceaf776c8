import Foundation
import HTTPTypes
import OpenAPIRuntime
import Testing

@testable import GuestModeClient

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Loses the answer of an operation's first attempt after the server has done it, and restarts the
/// server meanwhile: what a phone sees when the server is killed mid-write.
final class LoseFirstAnswer: ClientMiddleware, Sendable {
    let operationID: String
    let restart: @Sendable () throws -> Void
    private let state = Locked<(attempts: Int, keys: [String], replayed: [Bool])>((0, [], []))

    init(_ operationID: String, restart: @escaping @Sendable () throws -> Void) {
        self.operationID = operationID
        self.restart = restart
    }

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        guard operationID == self.operationID else { return try await next(request, body, baseURL) }
        let attempt = state.withLock {
            $0.attempts += 1
            $0.keys.append(request.headerFields[.idempotencyKey] ?? "")
            return $0.attempts
        }
        let (response, responseBody) = try await next(request, body, baseURL)
        state.withLock { $0.replayed.append(response.headerFields[HTTPField.Name("Idempotent-Replayed")!] == "true") }
        if attempt == 1 {
            try restart()
            throw URLError(.networkConnectionLost)
        }
        return (response, responseBody)
    }

    var attempts: Int { state.withLock { $0.attempts } }
    var keys: [String] { state.withLock { $0.keys } }
    var replayed: [Bool] { state.withLock { $0.replayed } }
}

/// Answers 503 with `Retry-After: 1` once, then 200 with a tracked event; keeps what it was sent.
final class BusyOnce: ClientTransport, Sendable {
    private let sent = Locked<[(Date, String?)]>([])

    func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
    ) async throws
        -> (HTTPResponse, HTTPBody?)
    {
        let count = sent.withLock {
            $0.append((Date(), request.headerFields[.idempotencyKey]))
            return $0.count
        }
        if count == 1 {
            var response = HTTPResponse(status: .serviceUnavailable)
            response.headerFields[.retryAfter] = "1"
            response.headerFields[.contentType] = "application/json"
            return (response, HTTPBody(#"{"error":{"code":"server_busy","message":"busy"}}"#))
        }
        var response = HTTPResponse(status: .ok)
        response.headerFields[.contentType] = "application/json"
        return (response, HTTPBody(#"{"action":"app_opened","counted":true,"total":1,"user_id":"u1"}"#))
    }

    var requests: [(Date, String?)] { sent.withLock { $0 } }
}

/// Answers every call with one canned status and body.
struct CannedAnswer: ClientTransport {
    var status: HTTPResponse.Status
    var body: String

    func send(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String
    ) async throws
        -> (HTTPResponse, HTTPBody?)
    {
        var response = HTTPResponse(status: status)
        response.headerFields[.contentType] = "application/json"
        return (response, HTTPBody(self.body))
    }
}

@Suite("GuestModeClient: retries and idempotency")
struct RetryTests {
    @Test("a refusal whose code a newer server added is a server error with that code, not a decoding failure")
    func refusalWithACodeThisClientDoesNotKnow() async throws {
        let session = Session(
            userID: "u1", accessToken: "a", refreshToken: "r", expiresAt: Date().addingTimeInterval(3600),
            state: "anonymous")
        let body =
            #"{"error":{"code":"needs_family_plan","message":"ask the family's organiser","prompt":null},"#
            + #""result":{"limit":{"cap":5,"collection":"s","outcome":"allowed","tier":"guest","used":5},"#
            + #""outcome":"allowed","replacement":false}}"#
        let client = try GuestModeClient(
            .init(
                serverURL: URL(string: "http://127.0.0.1:1")!, sessionStore: InMemorySessionStore(session),
                transport: CannedAnswer(status: .forbidden, body: body)))
        do {
            _ = try await client.putRecord(["cost": 9], collection: "s", key: "k")
            Issue.record("the refusal was taken for a write")
        } catch let error as GuestModeClientError {
            #expect(error.code == .unknown("needs_family_plan"), "\(error)")
        }
    }

    @Test("503 with Retry-After: the same request again after a second, with the same Idempotency-Key")
    func retryAfter() async throws {
        let transport = BusyOnce()
        let session = Session(
            userID: "u1", accessToken: "a", refreshToken: "r", expiresAt: Date().addingTimeInterval(3600),
            state: "anonymous")
        let client = try GuestModeClient(
            .init(
                serverURL: URL(string: "http://127.0.0.1:1")!, sessionStore: InMemorySessionStore(session),
                transport: transport))
        let tracked = try await client.track("app_opened")
        #expect(tracked.counted)
        let requests = transport.requests
        #expect(requests.count == 2)
        #expect(requests[0].1 != nil && requests[0].1 == requests[1].1, "one key for both attempts")
        #expect(requests[1].0.timeIntervalSince(requests[0].0) >= 0.95, "Retry-After: 1 waited")
    }

    @Test(
        "the server killed after a write, its answer lost: the retry gets the kept answer, the write applied once",
        arguments: TestServer.Backend.available)
    func killedMidWrite(_ backend: TestServer.Backend) async throws {
        let server = try await TestServer(profile: "voice", backend: backend)
        try server.start()
        defer { server.stop() }
        let lose = LoseFirstAnswer("trackEvent") {
            server.stop()
            try server.start()
        }
        let client = try GuestModeClient(.init(serverURL: server.url, middlewares: [lose]))
        try await client.signInAsGuest()
        let tracked = try await client.track("command_spoken", count: 3)
        #expect(lose.attempts == 2 && Set(lose.keys).count == 1 && !lose.keys[0].isEmpty)
        #expect(lose.replayed == [false, true], "the second answer is the kept one")
        #expect(tracked.total == 3)
        #expect(try await client.counters()["command_spoken"] == 3)
    }

    @Test("a refresh whose answer may have been lost is not sent again (a spent refresh token revokes the family)")
    func refreshNotRetriedWhenUnsure() async throws {
        let unsure = CallContext.$current.withValue(CallContext(retriesUnsure: false)) {
            RetryMiddleware.isRetryable(URLError(.networkConnectionLost))
        }
        let refused = CallContext.$current.withValue(CallContext(retriesUnsure: false)) {
            RetryMiddleware.isRetryable(URLError(.cannotConnectToHost))
        }
        #expect(!unsure && refused)
        #expect(RetryMiddleware.isRetryable(URLError(.networkConnectionLost)))
    }
}
