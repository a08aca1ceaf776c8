import Foundation
import GuestModeKit
import Hummingbird

enum LimitRoutes {
    static func add(to router: ServerRouter, _ services: Services) {
        // `limit`: every capped collection, or `?collection=` alone.
        router.get("/v1/users/:user/limits") { request, context -> Response in
            let (_, userID) = try await services.user(of: request, context: context)
            let collection = try RequestInput.query("collection", of: request)
            let limits = try await services.perform { engine, now in
                try engine.limits(user: userID, collection: collection, now: now)
            }
            return try Reply.document(limits).response
        }
    }
}
