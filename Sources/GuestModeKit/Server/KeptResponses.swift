import Foundation

/// The answer given to one idempotency key, kept so that a retry of the same
/// request gets it again instead of doing the work twice.
package struct KeptResponse: Sendable, Equatable {
    /// Who sent the request (a server key or a user's session): keys of
    /// different callers never meet.
    package var principal: String
    package var key: String
    /// The SHA-256 of what the request asked (method, path and body): the same
    /// key with another request is a mistake, not a retry.
    package var requestHash: String
    package var status: Int
    package var body: String
    package var createdAt: Date

    package init(principal: String, key: String, requestHash: String, status: Int, body: String, createdAt: Date) {
        self.principal = principal
        self.key = key
        self.requestHash = requestHash
        self.status = status
        self.body = body
        self.createdAt = createdAt
    }
}

extension GuestMode {
    /// The answer kept for this key, or nil when the key is new; the key
    /// used with a different request is `idempotency_key_reused`.
    package func keptResponse(principal: String, key: String, request: [UInt8]) throws -> KeptResponse? {
        try TextRule.check(key, what: "the idempotency key")
        let requestHash = ServerSecret.hash(bytes: request)
        let kept = try store.read { transaction in try transaction.keptResponse(principal: principal, key: key) }
        guard let kept else { return nil }
        try Self.requireSameRequest(kept, requestHash: requestHash, key: key)
        return kept
    }

    /// Keeps the answer for this key and returns the one that stands: a
    /// concurrent request with the same key may have kept its answer first,
    /// and then that one is every retry's answer.
    package func keepResponse(
        principal: String, key: String, request: [UInt8], status: Int, body: String, now: Date
    ) throws -> KeptResponse {
        try TextRule.check(["the idempotency key": key, "the response": body])
        let response = KeptResponse(
            principal: principal, key: key, requestHash: ServerSecret.hash(bytes: request), status: status, body: body,
            createdAt: now)
        let kept = try store.write { transaction in
            if try transaction.insertKeptResponse(response) { return response }
            return try transaction.keptResponse(principal: principal, key: key) ?? response
        }
        try Self.requireSameRequest(kept, requestHash: response.requestHash, key: key)
        return kept
    }

    private static func requireSameRequest(_ kept: KeptResponse, requestHash: String, key: String) throws {
        guard kept.requestHash == requestHash else {
            throw GuestModeError.conflict(
                "the idempotency key '\(key)' was used for a different request; use a new key for a new request",
                code: .idempotencyKeyReused)
        }
    }
}
