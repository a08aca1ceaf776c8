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
            let trigger = RequestInput.query("trigger", of: request)
            let explain = RequestInput.query("explain", of: request) == "true"
            let explanation = try await services.perform { engine, now in
                try engine.explainPrompt(user: userID, trigger: trigger, now: now)
            }
            if let offer = explanation.offer, !explain { return try Reply.document(offer).response }
            return try Reply.document(explanation).response
        }
    }
}
