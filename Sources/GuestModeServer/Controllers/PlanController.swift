import Foundation
import GuestModeKit
import Hummingbird

/// `plan status`, `plan grant` and `plan revoke` (`/v1/users/{user}/plans`).
struct PlanController {
    let services: Services

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .get(use: status)
            .post(use: grant)
            .delete(":plan", use: revoke)
    }

    /// `{"plan": "premium", "trial": "P7D"}` or `{"plan": …, "until": "2027-01-01T00:00:00Z"}`.
    struct GrantBody: Decodable {
        var plan: String
        var trial: String?
        var until: String?
    }

    /// The user's tier and every plan it held.
    @Sendable func status(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let report = try await services.perform { engine, now in
            PlanReport(
                user: userID, tier: try engine.tier(user: userID, now: now),
                plans: try engine.plans(user: userID, now: now))
        }
        return try Reply.document(report).response
    }

    /// Granting is what billing does: an admin key.
    @Sendable func grant(_ request: Request, context: ServerContext) async throws -> Response {
        let caller = try await services.caller(of: request)
        try caller.requireKey(.admin)
        let userID = try RequestInput.segment("user", of: context)
        let bytes = try await RequestInput.body(of: request, context: context)
        let body = try StrictRequestDecoder.decode(GrantBody.self, from: bytes)
        let (trial, until) = try RequestInput.term(
            span: body.trial, named: "trial", example: "P7D, 24h", until: body.until)
        return try await services.idempotent(request, principal: caller.principal, body: bytes) { engine, now in
            try Reply.document(engine.grantPlan(user: userID, plan: body.plan, trial: trial, until: until, now: now))
        }.response
    }

    /// An admin key, as granting.
    @Sendable func revoke(_ request: Request, context: ServerContext) async throws -> Response {
        try await services.caller(of: request).requireKey(.admin)
        let userID = try RequestInput.segment("user", of: context)
        let plan = try RequestInput.segment("plan", of: context)
        let status = try await services.perform { engine, now in
            try engine.revokePlan(user: userID, plan: plan, now: now)
        }
        return try Reply.document(status).response
    }
}

/// `plan status --json`: the tier and the plans.
struct PlanReport: Encodable, Sendable {
    var user: String
    var tier: TierLevel
    var plans: [PlanStatus]
}
