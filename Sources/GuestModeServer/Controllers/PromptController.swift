import Foundation
import GuestModeKit
import Hummingbird

/// `prompt next`, `prompt record`, `prompt reset` and `prompt history`
/// (`/v1/users/{user}/prompts`).
struct PromptController {
    let services: Services

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .get("next", use: next)
            .post(use: record)
            .post("reset", use: reset)
            .get("history", use: history)
    }

    /// `{"context": "guest_cap_reached", "outcome": "dismissed"}`.
    struct RecordBody: Decodable {
        var context: String
        var outcome: String
    }

    /// The prompt to show now (`?trigger=` names the moment the app is at); when none is due, or with
    /// `?explain=true`, the decision with the reason for every rule ("due": false says none is).
    /// Nothing due is an answer, not a failure: 200 either way.
    @Sendable func next(_ request: Request, context: ServerContext) async throws -> Response {
        let credential = try await services.credential(of: request)
        let input = Result {
            (
                trigger: try RequestInput.query("trigger", of: request),
                explain: try RequestInput.query("explain", of: request) == "true"
            )
        }
        let explain = (try? input.get())?.explain ?? false
        let explanation = try await services.perform(as: credential, context: context, writing: false, input: input) {
            engine, now, _, userID, input in
            try engine.explainPrompt(user: userID, trigger: input.trigger, now: now)
        }
        if let offer = explanation.offer, !explain { return try Reply.document(offer).response }
        return try Reply.document(explanation).response
    }

    @Sendable func record(_ request: Request, context: ServerContext) async throws -> Response {
        let (caller, userID) = try await services.user(of: request, context: context)
        let bytes = try await RequestInput.body(of: request, context: context)
        let body = try StrictRequestDecoder.decode(RecordBody.self, from: bytes)
        guard let outcome = PromptOutcome(rawValue: body.outcome) else {
            let known = PromptOutcome.allCases.map(\.rawValue).joined(separator: ", ")
            throw GuestModeError(.usage, "'outcome' is one of \(known), not '\(body.outcome)'")
        }
        return try await services.idempotent(request, principal: caller.principal, body: bytes) { engine, now in
            try Reply.document(engine.recordPrompt(outcome, context: body.context, user: userID, now: now))
        }.response
    }

    @Sendable func reset(_ request: Request, context: ServerContext) async throws -> Response {
        let (caller, userID) = try await services.user(of: request, context: context)
        return try await services.idempotent(request, principal: caller.principal, body: []) { engine, now in
            try Reply.document(engine.resetPrompts(user: userID, now: now))
        }.response
    }

    @Sendable func history(_ request: Request, context: ServerContext) async throws -> Response {
        let (_, userID) = try await services.user(of: request, context: context)
        let history = try await services.perform { engine, _ in try engine.promptHistory(user: userID) }
        return try Reply.document(history).response
    }
}
