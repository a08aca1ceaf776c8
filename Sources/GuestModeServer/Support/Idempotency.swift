import Foundation
import GuestModeKit
import HTTPTypes
import Hummingbird

extension Services {
    /// Answers a POST once per `Idempotency-Key` (`GuestMode.answerOnce`):
    /// the answer is kept in the transaction of the change it answers, a
    /// retry with the same key and the same request gets it again (marked
    /// `Idempotent-Replayed: true`), and the same key with another request is
    /// `idempotency_key_reused`. Answers that say "try again" (busy, an
    /// internal failure) are not kept and roll the change back, so a retry
    /// really retries. Without the header, `answer` simply runs.
    func idempotent(
        _ request: Request, principal: String, body: [UInt8],
        _ answer: @escaping @Sendable (GuestMode, Date) throws -> Reply
    ) async throws -> Reply {
        // The pool's threads do not inherit the request's task-locals: the note rides along by hand.
        let note = FailureNote.current
        guard let key = try RequestInput.idempotencyKey(of: request) else {
            return try await perform { engine, now in
                try FailureNote.$current.withValue(note) { try answer(engine, now) }
            }
        }
        let named = IdempotentRequest(
            principal: principal, key: key,
            fingerprint: Array("\(request.method.rawValue) \(request.uri.path)\n".utf8) + body)
        let (kept, replayed) = try await perform { engine, now in
            try engine.answerOnce(named, now: now) { engine in
                let reply = try FailureNote.$current.withValue(note) { try answer(engine, now) }
                return KeptAnswer(status: Int(reply.status.code), body: reply.body)
            } keeping: { error in
                let reply = Reply.failure(error, note: note)
                return reply.status.code < 500 ? KeptAnswer(status: Int(reply.status.code), body: reply.body) : nil
            }
        }
        var reply = Reply(status: HTTPResponse.Status(code: kept.status), body: kept.body)
        if replayed { reply.headers[.idempotentReplayed] = "true" }
        return reply
    }
}

extension RequestInput {
    /// The request's `Idempotency-Key`: 1 to 255 printable ASCII characters,
    /// given once. Anything else is refused, never repaired: two different
    /// keys that became one after repair would answer the second request
    /// with the first one's answer, and it would never be done.
    static func idempotencyKey(of request: Request) throws -> String? {
        let fields = request.headers[fields: .idempotencyKey]
        guard let field = fields.first else { return nil }
        let isPrintable = field.withUnsafeBytesOfValue { bytes in
            (1...255).contains(bytes.count) && bytes.allSatisfy { (0x20...0x7E).contains($0) }
        }
        guard fields.count == 1, isPrintable else {
            throw GuestModeError(
                .invalidIdempotencyKey,
                "the Idempotency-Key header must be given once, as 1 to 255 printable ASCII characters")
        }
        return field.value
    }
}

extension HTTPField.Name {
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let idempotentReplayed = HTTPField.Name("Idempotent-Replayed")!
}
