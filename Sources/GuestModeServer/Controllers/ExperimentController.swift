import Foundation
import GuestModeKit
import Hummingbird

/// `experiment assign` (`/v1/users/{user}/experiments`): the user's variant of every experiment, or of
/// `?experiment=` alone; sticky, so the first assignment is stored and every later one answers it.
struct ExperimentController {
    let services: Services

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .post(use: assign)
    }

    @Sendable func assign(_ request: Request, context: ServerContext) async throws -> Response {
        let (caller, userID) = try await services.user(of: request, context: context)
        let experiment = try RequestInput.query("experiment", of: request)
        return try await services.idempotent(request, principal: caller.principal, body: []) { engine, now in
            let assignments = try engine.assignExperiments(user: userID, named: experiment, now: now)
            return try Reply.document(Assigned(user: userID, assignments: assignments))
        }.response
    }
}

/// `experiment assign --json`.
private struct Assigned: Encodable, Sendable {
    var user: String
    var assignments: [ExperimentAssignment]
}
