import Foundation
import GuestModeKit
import Hummingbird

enum PromptRoutes {
    static func add(to router: ServerRouter, _ services: Services) {
        // `prompt next`: the prompt to show now (`?trigger=` names the moment the app is at); when none
        // is due, or with `?explain=true`, the decision with the reason for every rule ("due": false says
        // none is). Nothing due is an answer, not a failure: 200 either way.
        router.get("/v1/users/:user/prompts/next") { request, context -> Response in
            let (_, userID) = try await services.user(of: request, context: context)
            let trigger = try RequestInput.query("trigger", of: request)
            let explain = try RequestInput.query("explain", of: request) == "true"
            let explanation = try await services.perform { engine, now in
                try engine.explainPrompt(user: userID, trigger: trigger, now: now)
            }
            if let offer = explanation.offer, !explain { return try Reply.document(offer).response }
            return try Reply.document(explanation).response
        }

        // `prompt record`: {"context": "guest_cap_reached", "outcome": "dismissed"}.
        router.post("/v1/users/:user/prompts") { request, context -> Response in
            let (caller, userID) = try await services.user(of: request, context: context)
            let bytes = try await RequestInput.body(of: request, limit: services.bodyLimit)
            let body = try RequestInput.object(bytes)
            let promptContext = try body.requiredText("context")
            let outcomeText = try body.requiredText("outcome")
            guard let outcome = PromptOutcome(rawValue: outcomeText) else {
                let known = PromptOutcome.allCases.map(\.rawValue).joined(separator: ", ")
                throw GuestModeError(.usage, "'outcome' is one of \(known), not '\(outcomeText)'")
            }
            return try await services.idempotent(request, principal: caller.principal, body: bytes) { engine, now in
                try Reply.document(engine.recordPrompt(outcome, context: promptContext, user: userID, now: now))
            }.response
        }

        // `prompt reset`.
        router.post("/v1/users/:user/prompts/reset") { request, context -> Response in
            let (caller, userID) = try await services.user(of: request, context: context)
            return try await services.idempotent(request, principal: caller.principal, body: []) { engine, now in
                try Reply.document(engine.resetPrompts(user: userID, now: now))
            }.response
        }

        // `prompt history`.
        router.get("/v1/users/:user/prompts/history") { request, context -> Response in
            let (_, userID) = try await services.user(of: request, context: context)
            let history = try await services.perform { engine, _ in try engine.promptHistory(user: userID) }
            return try Reply.document(history).response
        }
    }
}
