import Foundation
import GuestModeKit
import Hummingbird

/// Who sent a request: an app backend with a server key, or a guest with
/// its session's access token.
enum Caller: Sendable {
    case key(ServerKey)
    case session(userID: String)

    /// Whose idempotency keys these are: two callers' keys never meet.
    var principal: String {
        switch self {
        case let .key(key): "key:\(key.name)"
        case let .session(userID): "user:\(userID)"
        }
    }

    /// Lets the caller reach `userID`'s data. A session reaches only its own
    /// user: any other id is answered exactly as an id no user has, so a
    /// guest cannot learn which ids exist. A key needs `scope`.
    func requireAccess(to userID: String, scope: ServerScope = .userData) throws {
        switch self {
        case let .session(own):
            guard own == userID else {
                throw GuestModeError(.userNotFound, "no user '\(userID)' in this store")
            }
        case .key:
            try requireKey(scope)
        }
    }

    /// Lets only a server key of `scope` through.
    func requireKey(_ scope: ServerScope) throws {
        guard case let .key(key) = self, key.scope.covers(scope) else {
            throw GuestModeError(.insufficientScope, "this route needs a server key with the \(scope.rawValue) scope")
        }
    }
}

/// A request's credential once what can be checked without the store was:
/// a session's access token verified, or a server key still to look up.
enum Credential: Sendable {
    case known(Caller)
    /// A server key's secret, looked up in the transaction that answers the request.
    case key(secret: String)
}

extension Services {
    /// What a request's `Authorization: Bearer …` names; anything else is
    /// `unauthorized`. A token is verified here; a key only once it is looked up.
    /// A request with two `Authorization` fields names no one credential and is
    /// refused.
    func credential(of request: Request) async throws -> Credential {
        // The field's values, not `headers[.authorization]`, which joins every field of the name into a new
        // string through a generic `joined(separator:)`: 3.5 k instructions of every authenticated request
        // (bench/results.md, "Serving, round 19").
        let headers = request.headers[values: .authorization]
        guard headers.count == 1, let credential = Self.bearerCredential(in: headers[0]) else {
            throw AccessTokens.refused
        }
        // A JWT has three dot-separated parts; a server key has none. Searched in the string's bytes: through
        // its `UTF8View`'s iterator, 2 k instructions of every request (bench/results.md, "Serving, round 21").
        if !credential.withUTF8Bytes({ $0.contains(UInt8(ascii: ".")) }) {
            guard credential.hasPrefix(GuestMode.serverKeyPrefix) else { throw AccessTokens.refused }
            return .key(secret: credential)
        }
        return .known(.session(userID: try await tokens.verify(credential, now: try now())))
    }

    /// What follows `Bearer ` (any case) in an `Authorization` header, without
    /// the spaces and tabs (Unicode's space separators) around it; nil for
    /// another scheme. In Swift, not Foundation's `lowercased()` and
    /// `trimmingCharacters(in: .whitespaces)`, which went through `NSString`:
    /// 41 k instructions of every served request (bench/results.md, "Serving,
    /// round 5").
    static func bearerCredential(in header: String) -> String? {
        let scalars = header.unicodeScalars
        var start = scalars.startIndex
        // No other scalar lowercases to one of these letters, so comparing ASCII case-insensitively is
        // comparing the lowercased header.
        for expected in "bearer ".unicodeScalars {
            guard start != scalars.endIndex else { return nil }
            let value = scalars[start].value
            guard (0x41...0x5A).contains(value) ? value + 0x20 == expected.value : value == expected.value else {
                return nil
            }
            scalars.formIndex(after: &start)
        }
        func isSpace(_ scalar: Unicode.Scalar) -> Bool {
            scalar == "\t" || scalar.properties.generalCategory == .spaceSeparator
        }
        var end = scalars.endIndex
        while start != end, isSpace(scalars[start]) { scalars.formIndex(after: &start) }
        while start != end, isSpace(scalars[scalars.index(before: end)]) { scalars.formIndex(before: &end) }
        return String(scalars[start..<end])
    }

    /// The caller a request's `Authorization: Bearer …` names; anything else
    /// is `unauthorized`.
    func caller(of request: Request) async throws -> Caller {
        switch try await credential(of: request) {
        case let .known(caller):
            return caller
        case let .key(secret):
            guard let key = try await perform({ engine, _ in try engine.serverKey(authenticating: secret) }) else {
                throw AccessTokens.refused
            }
            return .key(key)
        }
    }

    /// Runs `body` as `perform` does, for a caller allowed to reach the user
    /// the path names (as `user(of:context:)` lets through), given that
    /// user's id. A server key is looked up in the same store transaction as
    /// `body` runs in: one transaction a request, and a key revoked before it
    /// began is refused. `input` is what the route read from the request
    /// before that: its failure is answered only once the caller passed, as
    /// when the caller is checked first. `writing` says whether `body` writes.
    func perform<Input: Sendable, T: Sendable>(
        as credential: Credential, context: ServerContext, writing: Bool, input: Result<Input, any Error>,
        _ body: @escaping @Sendable (GuestMode, Date, Caller, String, Input) throws -> T
    ) async throws -> T {
        let userID = Result { try RequestInput.segment("user", of: context) }
        switch credential {
        case let .known(caller):
            let id = try userID.get()
            try caller.requireAccess(to: id)
            let input = try input.get()
            return try await perform { engine, now in try body(engine, now, caller, id, input) }
        case let .key(secret):
            let answer = try await perform { engine, now in
                try engine.asServerKey(secret, writing: writing) { key, engine in
                    let caller = Caller.key(key)
                    let id = try userID.get()
                    try caller.requireAccess(to: id)
                    return try body(engine, now, caller, id, try input.get())
                }
            }
            guard let answer else { throw AccessTokens.refused }
            return answer
        }
    }

    /// `perform(as:context:writing:input:_:)` for a route that reads nothing more from the request.
    func perform<T: Sendable>(
        as credential: Credential, context: ServerContext, writing: Bool = false,
        _ body: @escaping @Sendable (GuestMode, Date, Caller, String) throws -> T
    ) async throws -> T {
        try await perform(as: credential, context: context, writing: writing, input: .success(())) {
            engine, now, caller, userID, _ in try body(engine, now, caller, userID)
        }
    }
}

extension Services {
    /// The caller, allowed to reach the user the path names; the user's id.
    func user(of request: Request, context: ServerContext) async throws -> (Caller, String) {
        let caller = try await caller(of: request)
        let userID = try RequestInput.segment("user", of: context)
        try caller.requireAccess(to: userID)
        return (caller, userID)
    }
}
