import Foundation
import GuestModeKit
import Hummingbird

/// Bulk loads (`/v1/events/bulk`, `/v1/records/bulk`), NDJSON bodies as
/// `track --from` and `record put --from` read them: imports, so an admin
/// key. The body cap holds (1 MiB by default); larger logs go in several
/// requests, each all or nothing.
struct BulkController {
    let services: Services

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .post("events/bulk", use: events)
            .post("records/bulk", use: records)
    }

    /// `track --from`: `?create_users=true` creates the guests the log names, `?skip_invalid=true`
    /// applies the valid lines of a log with invalid ones.
    @Sendable func events(_ request: Request, context: ServerContext) async throws -> Response {
        try await services.caller(of: request).requireKey(.admin)
        let bytes = try await RequestInput.body(of: request, context: context)
        let createUsers = try RequestInput.query("create_users", of: request) == "true"
        let skipInvalid = try RequestInput.query("skip_invalid", of: request) == "true"
        return try await services.perform { engine, now in
            try RequestInput.spooled(bytes, suffix: ".ndjson") { url in
                let report = try engine.ingest(
                    log: url, creatingUsers: createUsers, skippingInvalid: skipInvalid, now: now)
                guard report.isApplied else {
                    let refusal = GuestModeError(
                        .invalidEventLog,
                        "\(report.problems.count) invalid line\(report.problems.count == 1 ? "" : "s"); nothing was applied (fix them, or skip them with skip_invalid=true)"
                    )
                    return try Reply.refusal(refusal, result: report)
                }
                return try Reply.document(report)
            }
        }.response
    }

    /// `record put --from`: `?on_conflict=replace|skip|fail` (default replace).
    @Sendable func records(_ request: Request, context: ServerContext) async throws -> Response {
        try await services.caller(of: request).requireKey(.admin)
        let bytes = try await RequestInput.body(of: request, context: context)
        let policyText = try RequestInput.query("on_conflict", of: request) ?? RecordConflictPolicy.replace.rawValue
        guard let policy = RecordConflictPolicy(rawValue: policyText) else {
            let known = RecordConflictPolicy.allCases.map(\.rawValue).joined(separator: ", ")
            throw GuestModeError(.usage, "on_conflict is one of \(known), not '\(policyText)'")
        }
        return try await services.perform { engine, now in
            try RequestInput.spooled(bytes, suffix: ".ndjson") { url in
                try Reply.document(
                    engine.putRecords(from: url, label: "the request body", onConflict: policy, now: now))
            }
        }.response
    }
}
