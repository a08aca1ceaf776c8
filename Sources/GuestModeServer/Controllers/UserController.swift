import Foundation
import GuestModeKit
import Hummingbird

/// `user list`, `user show`, `user events`, `user delete` and the user's sessions (`/v1/users`), and
/// `/v1/me`, the session's own user.
struct UserController {
    let services: Services

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .get(use: list)
            .get(":user", use: show)
            .delete(":user", use: delete)
            .delete(":user/sessions", use: revokeSessions)
            .get(":user/events", use: events)
    }

    /// The session's own user: a device that signed in learns who it is.
    @Sendable func me(_ request: Request, context: ServerContext) async throws -> Response {
        guard case let .session(userID) = try await services.caller(of: request) else {
            throw GuestModeError(.usage, "a server key has no user of its own; ask for /v1/users/{user}")
        }
        let details = try await services.perform { engine, now in try engine.details(user: userID, now: now) }
        return try Reply.document(details).response
    }

    /// `user delete`, by the user's own session (App Store Review Guideline 5.1.1(v): in-app account
    /// deletion) or a key: every row of the user, its sessions with them, its pushed backups too.
    @Sendable func delete(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let shelf = services.backupShelf
        // One call: a deletion that committed is never answered "try again" before its backups went too.
        try await services.perform { engine, now in
            try engine.deleteUser(userID, now: now)
            try shelf?.removeAll(of: userID)
        }
        return try Reply.document(UserDeletion(userID: userID, deleted: true)).response
    }

    /// Every session of the user revoked, by a key: support's "sign me out everywhere".
    @Sendable func revokeSessions(_ request: Request, context: ServerContext) async throws -> Response {
        try await services.caller(of: request).requireKey(.userData)
        let userID = try RequestInput.segment("user", of: context)
        let revoked = try await services.perform { engine, now in try engine.revokeSessions(user: userID, now: now) }
        return try Reply.document(SessionsRevoked(userID: userID, revoked: revoked)).response
    }

    /// `user list`: every user; with `?identity=PROVIDER:SUBJECT`, `?email=` or `?device=`, `user find`:
    /// the users a person names (an empty list when none). Every user's, so admin work.
    @Sendable func list(_ request: Request, context: ServerContext) async throws -> Response {
        try await services.caller(of: request).requireKey(.admin)
        let lookup = try Self.lookup(of: request)
        let users = try await services.perform { engine, now in
            if let lookup { try engine.findUsers(lookup) } else { try engine.users(matching: UserFilter(), now: now) }
        }
        return try Reply.document(users).response
    }

    /// The lookup the query names, nil for no query. One parameter of the three, once: a query the
    /// route does not read is refused rather than answered with every user.
    static func lookup(of request: Request) throws -> UserLookup? {
        let names = RequestInput.queryNames(of: request)
        guard !names.isEmpty else { return nil }
        let known = ["identity", "email", "device"]
        guard names.allSatisfy(known.contains) else {
            throw GuestModeError(
                .usage, "GET /v1/users reads one query parameter, identity, email or device, and no other")
        }
        guard names.count == 1 else {
            throw GuestModeError(
                .usage, "GET /v1/users finds users by one of identity, email or device at a time, not several")
        }
        let value = try RequestInput.query(names[0], of: request) ?? ""
        switch names[0] {
        case "identity": return try UserLookup.identity(parsing: value)
        case "email": return .email(value)
        default: return .device(value)
        }
    }

    @Sendable func show(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let details = try await services.perform { engine, now in try engine.details(user: userID, now: now) }
        return try Reply.document(details).response
    }

    /// The most events one answer holds, and how many it holds when the query gives no limit: a user's
    /// history has no end (a guest can track events for as long as it likes), and an answer is built
    /// whole in memory. The whole history is in the user's backup (`GET /v1/users/{user}/backup`).
    static let largestEventPage = 1000

    /// `?action=`, `?since=` (ISO 8601), `?limit=` (the latest ones, at most `largestEventPage`, which is
    /// also the default).
    @Sendable func events(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let action = try RequestInput.query("action", of: request)
        let since = try RequestInput.query("since", of: request).map { try Timestamp.parseOrThrow($0, what: "since") }
        let limit = try RequestInput.pageLimit(
            of: request, largest: Self.largestEventPage, beyond: "; the whole history is in the user's backup export")
        let events = try await services.perform { engine, _ in
            try engine.events(user: userID, matching: EventQuery(action: action, since: since, limit: limit))
        }
        return try Reply.document(events).response
    }
}

/// `user delete --json`.
private struct UserDeletion: Encodable {
    var userID: String
    var deleted: Bool
}
