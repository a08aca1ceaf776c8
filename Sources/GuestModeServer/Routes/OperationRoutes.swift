import Foundation
import GuestModeKit
import Hummingbird

enum OperationRoutes {
    static func add(to router: ServerRouter, _ services: Services) {
        // The process answers.
        router.get("/healthz") { _, _ -> Response in
            try Reply.document(["status": "ok"]).response
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
