import Foundation
import GuestModeKit
import Hummingbird

/// `limit` (`/v1/users/{user}/limits`): every capped collection, or `?collection=` alone.
struct LimitController {
    let services: Services

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .get(use: limits)
    }

    @Sendable func limits(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let collection = try RequestInput.query("collection", of: request)
        let limits = try await services.perform { engine, now in
            try engine.limits(user: userID, collection: collection, now: now)
        }
        return try Reply.document(limits).response
    }
}
