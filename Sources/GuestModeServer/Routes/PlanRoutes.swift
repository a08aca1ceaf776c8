import Foundation
import GuestModeKit
import Hummingbird

enum PlanRoutes {
    static func add(to router: ServerRouter, _ services: Services) {
        // `plan status`: the user's tier and every plan it held.
        router.get("/v1/users/:user/plans") { request, context -> Response in
            let (_, userID) = try await services.user(of: request, context: context)
            let report = try await services.perform { engine, now in
                PlanReport(user: userID, tier: try engine.tier(user: userID, now: now), plans: try engine.plans(user: userID, now: now))
            }
            return try Reply.document(report).response
        }

        // `plan grant`: {"plan": "premium", "trial": "P7D"} or {"plan": …, "until": "2027-01-01T00:00:00Z"}.
        // Granting is what billing does: an admin key.
        router.post("/v1/users/:user/plans") { request, context -> Response in
            let caller = try await services.caller(of: request)
            try caller.requireKey(.admin)
            let userID = try RequestInput.segment("user", of: context)
            let bytes = try await RequestInput.body(of: request, limit: services.bodyLimit)
            let body = try RequestInput.object(bytes)
            let plan = try body.requiredText("plan")
            let trial = try body.text("trial").map { text in
                guard let span = TimeSpan(parsing: text) else {
                    throw GuestModeError(.usage, "'trial' is a duration (P7D, 24h), not '\(text)'")
                }
                return span
            }
            let until = try body.text("until").map { text in
                guard let time = Timestamp.parse(text) else {
                    throw GuestModeError(.usage, "'until' is an ISO 8601 time, not '\(text)'")
                }
                return time
            }
            if trial != nil && until != nil {
                throw GuestModeError(.usage, "give either 'trial' or 'until', not both")
            }
            return try await services.idempotent(request, principal: caller.principal, body: bytes) { engine, now in
                try Reply.document(engine.grantPlan(user: userID, plan: plan, trial: trial, until: until, now: now))
            }.response
        }

        // `plan revoke`: an admin key.
        router.delete("/v1/users/:user/plans/:plan") { request, context -> Response in
            try await services.caller(of: request).requireKey(.admin)
            let userID = try RequestInput.segment("user", of: context)
            let plan = try RequestInput.segment("plan", of: context)
            let status = try await services.perform { engine, now in
                try engine.revokePlan(user: userID, plan: plan, now: now)
            }
            return try Reply.document(status).response
        }
    }
}

/// `plan status --json`: the tier and the plans.
private struct PlanReport: Encodable, Sendable {
    var user: String
    var tier: TierLevel
    var plans: [PlanStatus]
}
