import Foundation
import GuestModeKit
import Hummingbird

enum UserRoutes {
    static func add(to router: ServerRouter, _ services: Services) {
        // `user list`: every user, so admin work.
        router.get("/v1/users") { request, _ -> Response in
            try await services.caller(of: request).requireKey(.admin)
            let users = try await services.perform { engine, now in try engine.users(matching: UserFilter(), now: now) }
            return try Reply.document(users).response
        }

        // `user show`.
        router.get("/v1/users/:user") { request, context -> Response in
            let (_, userID) = try await services.user(of: request, context: context)
            let details = try await services.perform { engine, now in try engine.details(user: userID, now: now) }
            return try Reply.document(details).response
        }

        // `user events`: `?action=`, `?since=` (ISO 8601), `?limit=` (the latest ones).
        router.get("/v1/users/:user/events") { request, context -> Response in
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
}
