import Foundation
import HTTPTypes
import OpenAPIRuntime

/// How the client retries a call the server did not answer, or answered "later" (429, 503).
public struct RetryPolicy: Sendable {
    /// Attempts in all, the first included (at least 1).
    public var maxAttempts: Int
    /// The wait before the second attempt; it doubles after each (with up to 25 % added at random).
    public var initialDelay: Duration
    /// No wait is longer, `Retry-After` included.
    public var maxDelay: Duration

    public init(maxAttempts: Int = 4, initialDelay: Duration = .milliseconds(200), maxDelay: Duration = .seconds(10)) {
        self.maxAttempts = max(1, maxAttempts)
        self.initialDelay = initialDelay
        self.maxDelay = maxDelay
    }

    /// One attempt, no retry.
    public static let none = RetryPolicy(maxAttempts: 1)

    func delay(afterAttempt attempt: Int, retryAfter: String?) -> Duration {
        if let retryAfter, let seconds = Int(retryAfter.trimmingCharacters(in: .whitespaces)), seconds >= 0 {
            return min(.seconds(seconds), maxDelay)
        }
        let doubled = initialDelay * (1 << min(attempt - 1, 16))
        let jittered = doubled + doubled * Double.random(in: 0...0.25)
        return min(jittered, maxDelay)
    }
}

/// What one logical call sends with each of its attempts: its bearer token and its Idempotency-Key.
/// The actor sets it around a call (a task-local), the middleware reads it, so a retry, whether the
/// middleware's after a network failure or the actor's after a refresh, carries the same key.
struct CallContext: Sendable {
    var accessToken: String?
    var idempotencyKey: String?
    /// Whether a network failure after the request may have reached the server can be retried:
    /// false for a refresh (a spent refresh token sent again revokes the session's family).
    var retriesUnsure = true

    @TaskLocal static var current = CallContext()
}

/// Thrown by the middleware when the server answers 401 to a call that carried an access token: the
/// actor refreshes the session (once, however many calls wait) and calls again.
struct AccessTokenRefused: Error {
    var accessToken: String
}

/// Adds the call's `Authorization` and `Idempotency-Key` headers; turns 401 to a call that carried an
/// access token into `AccessTokenRefused`, and any other failure the server answers (4xx, 5xx) into
/// `GuestModeClientError.server`, read as the document's error schema. The refusals of the operations
/// whose document describes them (402 and 403 with `error.prompt` and `result`) are left to the
/// generated code, which decodes them into the operation's own types, unless their code is one this
/// client does not know (a newer server's): the generated types hold the codes of the document they
/// were made from, so such a refusal becomes `GuestModeClientError.server` with the code's text.
struct CallMiddleware: ClientMiddleware {
    static let refusalsDescribed: Set<String> = ["putRecord", "checkMeter", "useMeter"]

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        let context = CallContext.current
        if let token = context.accessToken, request.headerFields[.authorization] == nil {
            request.headerFields[.authorization] = "Bearer \(token)"
        }
        if let key = context.idempotencyKey, request.method != .get, request.headerFields[.idempotencyKey] == nil {
            request.headerFields[.idempotencyKey] = key
        }
        let (response, responseBody) = try await next(request, body, baseURL)
        let status = response.status.code
        if status == 401, let token = context.accessToken {
            throw AccessTokenRefused(accessToken: token)
        }
        guard status >= 400 else { return (response, responseBody) }
        var bytes = Data()
        if let responseBody { bytes = Data(try await HTTPBody.ByteChunk(collecting: responseBody, upTo: 1024 * 1024)) }
        let failure = try? JSONDecoder().decode(Failure.self, from: bytes)
        if [402, 403].contains(status), Self.refusalsDescribed.contains(operationID),
            failure.map({ ErrorCode(rawValue: $0.error.code).isKnown }) ?? true
        {
            return (response, HTTPBody(bytes))
        }
        guard let failure else { throw GuestModeClientError.unexpectedAnswer(operation: operationID, status: status) }
        let prompt = try failure.error.prompt.map { try Reencode.convert($0, to: Prompt.self) }
        throw GuestModeClientError.server(
            status: status, code: ErrorCode(rawValue: failure.error.code), message: failure.error.message,
            prompt: prompt)
    }

    /// The error document (`Components.Schemas.ErrorDocument`), with the prompt a refusal adds.
    private struct Failure: Decodable {
        struct Body: Decodable {
            var code: String
            var message: String
            var prompt: Components.Schemas.Prompt?
        }
        var error: Body
    }
}

/// Retries the same request (the same headers, so the same Idempotency-Key) on a network failure,
/// 429 and 503, waiting `Retry-After` when the server says, else backing off; at most
/// `policy.maxAttempts` attempts. A network failure is retried only when the request surely did not
/// reach the server, or when the call says a repeat is harmless (`CallContext.retriesUnsure`).
struct RetryMiddleware: ClientMiddleware {
    var policy: RetryPolicy
    var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        // A body read once by the transport must be sent again whole: keep its bytes.
        var bytes: HTTPBody.ByteChunk?
        if let body { bytes = try await HTTPBody.ByteChunk(collecting: body, upTo: 16 * 1024 * 1024) }
        var attempt = 1
        while true {
            let sent = bytes.map { HTTPBody($0) }
            do {
                let (response, responseBody) = try await next(request, sent, baseURL)
                let code = response.status.code
                guard code == 429 || code == 503, attempt < policy.maxAttempts else {
                    return (response, responseBody)
                }
                try await sleep(policy.delay(afterAttempt: attempt, retryAfter: response.headerFields[.retryAfter]))
            } catch let error where attempt < policy.maxAttempts && Self.isRetryable(error) {
                try await sleep(policy.delay(afterAttempt: attempt, retryAfter: nil))
            }
            attempt += 1
        }
    }

    static func isRetryable(_ error: any Error) -> Bool {
        if error is CancellationError || error is AccessTokenRefused { return false }
        let unsure = CallContext.current.retriesUnsure
        if let error = error as? URLError {
            switch error.code {
            case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet:
                return true  // nothing was sent
            case .networkConnectionLost, .timedOut, .badServerResponse, .secureConnectionFailed:
                return unsure
            default:
                return false
            }
        }
        let nsError = error as NSError
        if nsError.domain == NSPOSIXErrorDomain {
            return nsError.code == Int(ECONNREFUSED) || unsure
        }
        return unsure && !(error is DecodingError)
    }
}

extension HTTPField.Name {
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
}

extension ErrorCode {
    /// Whether the code is one of the catalogue this client was built with.
    var isKnown: Bool {
        if case .unknown = self { return false }
        return true
    }
}
