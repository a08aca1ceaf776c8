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

extension Services {
    /// The caller a request's `Authorization: Bearer …` names; anything else
    /// is `unauthorized`.
    func caller(of request: Request) async throws -> Caller {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else {
            throw AccessTokens.refused
        }
        let credential = header.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces)
        // A JWT has three dot-separated parts; a server key has none.
        if !credential.contains(".") {
            guard let key = try await perform({ engine, _ in try engine.serverKey(authenticating: credential) }) else {
                throw AccessTokens.refused
            }
            return .key(key)
        }
        return .session(userID: try await tokens.verify(credential, now: try now()))
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
