import Foundation
import GuestModeKit
import Hummingbird

enum OperationRoutes {
    static func add(to router: ServerRouter, _ services: Services) {
        // The process answers.
        router.get("/healthz") { _, _ -> Response in
            try Reply.document(["status": "ok"]).response
        }

        // `profile show`: the profile the store is bound to, as the YAML's vocabulary resolves it, for
        // whoever may reach the API: an app reads its caps and prompts from it.
        router.get("/v1/profile") { request, _ -> Response in
            _ = try await services.caller(of: request)
            return Reply(status: .ok, body: ProfileDocument.value(of: services.engine.profile).text(pretty: true) + "\n")
                .response
        }

        // The store answers, with the schema this build expects: a load balancer may send requests.
        router.get("/readyz") { _, _ -> Response in
            let schema = try await services.perform { engine, _ in try engine.schemaStatus() }
            guard schema.pending.isEmpty else {
                throw GuestModeError(
                    .tryAgainLater, code: .storeBusy,
                    "the store's schema has pending migrations: \(schema.pending.joined(separator: ", "))")
            }
            return try Reply.document(["status": "ready"]).response
        }
    }
}
