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
    }
}
