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
        guard let key = request.headers[.idempotencyKey] else {
            return try await perform { engine, now in try answer(engine, now) }
        }
        let named = IdempotentRequest(
            principal: principal, key: key,
            fingerprint: Array("\(request.method.rawValue) \(request.uri.path)\n".utf8) + body)
        let (kept, replayed) = try await perform { engine, now in
            try engine.answerOnce(named, now: now) { engine in
                let reply = try answer(engine, now)
                return KeptAnswer(status: Int(reply.status.code), body: reply.body)
            } keeping: { error in
                let reply = Reply.failure(error)
                return reply.status.code < 500 ? KeptAnswer(status: Int(reply.status.code), body: reply.body) : nil
            }
        }
        var reply = Reply(status: HTTPResponse.Status(code: kept.status), body: kept.body)
        if replayed { reply.headers[.idempotentReplayed] = "true" }
        return reply
    }
}

extension HTTPField.Name {
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let idempotentReplayed = HTTPField.Name("Idempotent-Replayed")!
}
