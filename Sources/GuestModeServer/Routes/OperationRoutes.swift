import Foundation
import GuestModeKit
import Hummingbird

enum OperationRoutes {
    /// The longest `/readyz` waits for a thread; with `Services.startMargin` for the store it stays
    /// under a second, with room to answer.
    static let readinessWait = Duration.milliseconds(500)

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

        // Ready: the pool has room and the store answers, with the schema this build expects, all within
        // `readinessWait`, so a load balancer asking often learns fast and routes around a saturated
        // server or an unreachable store instead of queueing its probes behind the requests.
        router.get("/readyz") { _, _ -> Response in
            guard !services.isSaturated else {
                throw GuestModeError(
                    .poolExhausted,
                    "every store connection is in use and calls are waiting for one; not ready")
            }
            let schema = try await services.perform(waitingAtMost: readinessWait) {
                engine, _ in try engine.schemaStatus()
            }
            guard schema.pending.isEmpty else {
                throw GuestModeError(
                    .storeBusy,
                    "the store's schema has pending migrations: \(schema.pending.joined(separator: ", "))")
            }
            return try Reply.document(["status": "ready"]).response
        }

        // The request and store-pool metrics in Prometheus's text format, for a scraper: route
        // templates and counts, nothing a request carried, so no credential.
        if let exposition = services.metricsExposition {
            router.get("/metrics") { _, _ -> Response in
                var headers = HTTPFields()
                headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
                return Response(
                    status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: exposition())))
            }
        }

        // The OpenAPI 3.1 document of every route (schemas/openapi.json, built into the binary).
        router.get("/v1/openapi.json") { _, _ -> Response in
            Reply(status: .ok, body: OpenAPIDocument.text).response
        }
    }
}
