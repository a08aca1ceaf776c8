import Foundation
import GuestModeKit
import HTTPTypes
import Hummingbird

extension Services {
    /// Answers a POST once per `Idempotency-Key`: a retry with the same key
    /// and the same request gets the first answer again (marked
    /// `Idempotent-Replayed: true`), the same key with another request is
    /// `idempotency_key_reused`. Answers that say "try again" (busy, an
    /// internal failure) are not kept, so a retry really retries.
    func idempotent(
        _ request: Request, principal: String, body: [UInt8], _ answer: () async throws -> Reply
    ) async throws -> Reply {
        guard let key = request.headers[.idempotencyKey] else { return try await answer() }
        let fingerprint = Array("\(request.method.rawValue) \(request.uri.path)\n".utf8) + body
        if let kept = try await perform({ engine, _ in
            try engine.keptResponse(principal: principal, key: key, request: fingerprint)
        }) {
            return Self.replay(kept)
        }
        let reply: Reply
        do {
            reply = try await answer()
        } catch {
            reply = Reply.failure(error)
        }
        guard reply.status.code < 500 else { return reply }
        let status = reply.status.code
        let text = reply.body
        let kept = try await perform { engine, now in
            try engine.keepResponse(
                principal: principal, key: key, request: fingerprint, status: status, body: text, now: now)
        }
        return kept.body == reply.body && kept.status == reply.status.code ? reply : Self.replay(kept)
    }

    private static func replay(_ kept: KeptResponse) -> Reply {
        var reply = Reply(status: HTTPResponse.Status(code: kept.status), body: kept.body)
        reply.headers[.idempotentReplayed] = "true"
        return reply
    }
}

extension HTTPField.Name {
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
    static let idempotentReplayed = HTTPField.Name("Idempotent-Replayed")!
}
