import Foundation
import GuestModeKit
import Hummingbird

/// An answer before it becomes a response: a status and one JSON document,
/// as the command line prints it with --json. Idempotency keeps exactly this.
struct Reply: Sendable {
    var status: HTTPResponse.Status
    var body: String
    var headers: HTTPFields = [:]

    static func document<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Reply {
        Reply(status: status, body: try JSONDocument.encodeLine(value))
    }

    /// The same document, written by the value itself (`JSONWritable`) without the encoder's tree of nodes:
    /// the reads a server answers most.
    static func document<T: Encodable & JSONWritable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Reply {
        Reply(status: status, body: try JSONWriter.document(value, lineEnd: true))
    }

    /// A refusal the app acts on (a cap, an exhausted meter), as the engine worded it: the error, the
    /// prompt the refusal raised (null when none), and the command line's document of the refused
    /// call as `result`.
    static func refusal<T: Encodable>(
        _ refusal: Refusal, result: T, note: FailureNote? = FailureNote.current
    ) throws
        -> Reply
    {
        note?.record(refusal.failure)
        return Reply(
            status: refusal.failure.httpStatus,
            body: try JSONDocument.encodeLine(
                RefusalDocument(error: refusal.failure, prompt: refusal.prompt, result: result)))
    }

    /// A refusal of a bulk load, which raises no prompt.
    static func refusal<T: Encodable>(_ failure: GuestModeError, result: T) throws -> Reply {
        try refusal(Refusal(failure: failure, prompt: nil), result: result)
    }

    /// Any failure as `{"error":{"code","message"}}` with its status and the
    /// message written for the caller (`publicMessage`); the operator's
    /// message goes to `note` (by default the request's), which the access
    /// log writes. A failure that is not the engine's says nothing of its
    /// inside.
    static func failure(_ error: any Error, note: FailureNote? = FailureNote.current) -> Reply {
        let failure = Self.guestModeError(error)
        note?.record(failure)
        var reply = Reply(
            status: failure.httpStatus,
            body: (try? JSONDocument.encodeLine(ErrorDocument(error: failure))) ?? "{}\n")
        switch reply.status {
        case .unauthorized: reply.headers[.wwwAuthenticate] = "Bearer"
        // Busy is the HTTP twin of exit 75: nothing was lost, try again shortly.
        case .serviceUnavailable: reply.headers[.retryAfter] = "1"
        default: break
        }
        return reply
    }

    private static func guestModeError(_ error: any Error) -> GuestModeError {
        switch error {
        case let failure as GuestModeError: return failure
        case let refused as any HTTPResponseError:
            switch refused.status {
            case .notFound: return GuestModeError(.routeNotFound, "no such route")
            case .contentTooLarge: return RequestInput.tooLarge
            default: return GuestModeError(.usage, "the request is malformed (\(refused.status.code))")
            }
        default:
            return GuestModeError(.internalFailure, "internal failure: \(error)")
        }
    }

    var response: Response {
        var headers = self.headers
        headers[.contentType] = "application/json"
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}

private struct ErrorDocument: Encodable {
    var error: GuestModeError

    enum CodingKeys: String, CodingKey { case error }
    enum BodyKeys: String, CodingKey { case code, message }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        var body = container.nestedContainer(keyedBy: BodyKeys.self, forKey: .error)
        try body.encode(error.code, forKey: .code)
        try body.encode(error.publicMessage, forKey: .message)
    }
}

private struct RefusalDocument<Result: Encodable>: Encodable {
    var error: GuestModeError
    var prompt: PromptOffer?
    var result: Result

    enum CodingKeys: String, CodingKey { case error, result }
    enum BodyKeys: String, CodingKey { case code, message, prompt }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        var body = container.nestedContainer(keyedBy: BodyKeys.self, forKey: .error)
        try body.encode(error.code, forKey: .code)
        try body.encode(error.publicMessage, forKey: .message)
        try body.encode(prompt, forKey: .prompt)
        try container.encode(result, forKey: .result)
    }
}

/// Turns whatever a route throws into the error document: a `GuestModeError`
/// answers itself (`HTTPResponseError`), and anything else (Hummingbird's own
/// 404, a failure of no known kind) becomes one first, so no failure reaches
/// the client as an empty 500 or a plain-text 404.
struct FailureMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(
        _ request: Request, context: Context, next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let failure as GuestModeError {
            return try failure.response(from: request, context: context)
        } catch {
            return Reply.failure(error).response
        }
    }
}
