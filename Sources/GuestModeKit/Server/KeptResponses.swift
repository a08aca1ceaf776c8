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

/// A request that names its write with an idempotency key.
package struct IdempotentRequest: Sendable, Equatable {
    package var principal: String
    package var key: String
    /// Everything the request asked (for HTTP: method, path and body).
    package var fingerprint: [UInt8]

    package init(principal: String, key: String, fingerprint: [UInt8]) {
        self.principal = principal
        self.key = key
        self.fingerprint = fingerprint
    }
}

/// What a request was answered: a status and a body.
package struct KeptAnswer: Sendable, Equatable {
    package var status: Int
    package var body: String

    package init(status: Int, body: String) {
        self.status = status
        self.body = body
    }
}

extension GuestMode {
    /// Answers `request` once. The first time, `answer` runs with an engine
    /// whose every read and write is part of one write transaction, and its
    /// answer is kept in that same transaction: no change is ever committed
    /// without its kept answer, nor an answer without its change. A failure
    /// that `keeping` turns into an answer is kept like any other (what the
    /// failed call wrote is undone); one it leaves (nil) rolls everything
    /// back and is thrown, so a retry really retries. Later, the same key
    /// with the same fingerprint gets the kept answer (`replayed`) and
    /// nothing runs; with another fingerprint it is `idempotency_key_reused`.
    /// Concurrent requests with one key wait for the first to end.
    ///
    /// ```swift
    /// let request = IdempotentRequest(principal: "app", key: "use-7", fingerprint: Array(body.utf8))
    /// let (answer, replayed) = try engine.answerOnce(request, now: now) { engine in
    ///     let result = try engine.useMeter(user: id, meter: "minutes", amount: 5, key: nil, overage: nil, now: now)
    ///     return KeptAnswer(status: 200, body: describe(result))
    /// } keeping: { error in KeptAnswer(status: 400, body: error.message) }
    /// ```
    package func answerOnce(
        _ request: IdempotentRequest, now: Date, _ answer: (GuestMode) throws -> KeptAnswer,
        keeping failure: (GuestModeError) -> KeptAnswer?
    ) throws -> (answer: KeptAnswer, replayed: Bool) {
        try TextRule.check(request.key, what: "the idempotency key")
        let claim = KeptResponse(
            principal: request.principal, key: request.key, requestHash: ServerSecret.hash(bytes: request.fingerprint),
            status: 0, body: "", createdAt: now)
        var durable = false
        while true {
            do {
                return try store.write(durable: durable) { transaction in
                    // The claim comes first: a concurrent request with the key
                    // waits here until this transaction ends.
                    guard try transaction.insertKeptResponse(claim) else {
                        guard let kept = try transaction.keptResponse(principal: claim.principal, key: claim.key) else {
                            throw GuestModeError(
                                .internalFailure,
                                "the answer kept for the idempotency key '\(claim.key)' vanished")
                        }
                        try Self.requireSameRequest(kept, requestHash: claim.requestHash, key: claim.key)
                        return (KeptAnswer(status: kept.status, body: kept.body), true)
                    }
                    let scope = TransactionScope(base: store, transaction: transaction, isDurable: durable)
                    var given: KeptAnswer
                    do {
                        given = try answer(over(scope))
                    } catch let error as GuestModeError {
                        guard let kept = failure(error) else { throw error }
                        given = kept
                    }
                    try TextRule.check(given.body, what: "the response")
                    try transaction.settleKeptResponse(
                        principal: claim.principal, key: claim.key, status: given.status, body: given.body)
                    return (given, false)
                }
            } catch is TransactionScope.NeedsDurableCommit where !durable {
                // A call inside asked for a commit that survives a power cut:
                // the whole answer runs again in such a transaction.
                durable = true
            }
        }
    }

    private static func requireSameRequest(_ kept: KeptResponse, requestHash: String, key: String) throws {
        guard kept.requestHash == requestHash else {
            throw GuestModeError(
                .idempotencyKeyReused,
                "the idempotency key '\(key)' was used for a different request; use a new key for a new request")
        }
    }
}
