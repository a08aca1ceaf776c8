import Foundation
import GuestModeKit
import Hummingbird

/// `user list`, `user show` and `user events` (`/v1/users`).
struct UserController {
    let services: Services

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .get(use: list)
            .get(":user", use: show)
            .get(":user/events", use: events)
    }

    /// `user list`: every user, so admin work.
    @Sendable func list(_ request: Request, context: ServerContext) async throws -> Response {
        try await services.caller(of: request).requireKey(.admin)
        let users = try await services.perform { engine, now in try engine.users(matching: UserFilter(), now: now) }
        return try Reply.document(users).response
    }

    @Sendable func show(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let details = try await services.perform { engine, now in try engine.details(user: userID, now: now) }
        return try Reply.document(details).response
    }

    /// `?action=`, `?since=` (ISO 8601), `?limit=` (the latest ones).
    @Sendable func events(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let action = try RequestInput.query("action", of: request)
        let since = try RequestInput.query("since", of: request).map { try Timestamp.parseOrThrow($0, what: "since") }
        let limit = try RequestInput.query("limit", of: request).map { text in
            guard let limit = Int(text) else {
                throw GuestModeError(.invalidLimit, "limit is a whole number, not '\(text)'")
            }
            return limit
        }
        let events = try await services.perform { engine, _ in
            try engine.events(user: userID, matching: EventQuery(action: action, since: since, limit: limit))
        }
        return try Reply.document(events).response
    }
}
