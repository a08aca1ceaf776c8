import Foundation
import GuestModeKit
import Hummingbird

/// `report funnel|prompts|experiments|usage|migrations` (`/v1/reports/{report}`), over `?since=` and
/// `?until=` (ISO 8601): the whole store's numbers, so an admin key.
struct ReportController {
    let services: Services

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .get(":report", use: report)
    }

    @Sendable func report(_ request: Request, context: ServerContext) async throws -> Response {
        try await services.caller(of: request).requireKey(.admin)
        let name = try RequestInput.segment("report", of: context)
        let period = ReportPeriod(
            since: try RequestInput.query("since", of: request).map { try Timestamp.parseOrThrow($0, what: "since") },
            until: try RequestInput.query("until", of: request).map { try Timestamp.parseOrThrow($0, what: "until") })
        let body = try await services.perform { engine, _ -> String in
            switch name {
            case "funnel": try Reply.document(engine.funnelReport(period)).body
            case "prompts": try Reply.document(engine.promptsReport(period)).body
            case "experiments": try Reply.document(engine.experimentsReport(period)).body
            case "usage": try Reply.document(engine.usageReport(period)).body
            case "migrations": try Reply.document(engine.migrationsReport(period)).body
            default:
                throw GuestModeError(
                    .routeNotFound, "no report '\(name)': funnel, prompts, experiments, usage or migrations")
            }
        }
        return Reply(status: .ok, body: body).response
    }
}
