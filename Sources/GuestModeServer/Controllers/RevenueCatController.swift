import Foundation
import GuestModeKit
import GuestModePurchases
import Hummingbird

/// RevenueCat's webhooks (`POST /v1/integrations/revenuecat`): each event changes the plans its
/// entitlements map to. RevenueCat retries anything but a 2xx, so every event read is answered 200,
/// applied or not (the document says which); only a wrong Authorization (401) or a body that is no
/// RevenueCat event (4xx) is refused, and neither changes anything.
struct RevenueCatController {
    let services: Services

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .post("revenuecat", use: receive)
    }

    @Sendable func receive(_ request: Request, context: ServerContext) async throws -> Response {
        guard let settings = services.revenueCat else {
            throw GuestModeError(
                .revenueCatNotConfigured,
                "this server takes no RevenueCat webhooks (guestmode serve --revenuecat-authorization-file)")
        }
        // Checked before the body is read: a caller without the value gets nothing parsed.
        guard settings.accepts(request.headers[.authorization]) else {
            throw GuestModeError(
                .unauthorized, "the Authorization header is not the value set for RevenueCat's webhooks")
        }
        let bytes = try await RequestInput.body(
            of: request, context: context, limit: min(context.maxUploadSize, RevenueCatEvent.maximumSize))
        let event = try RevenueCatEvent(json: bytes)
        let receipt = try await services.perform { engine, now in
            try RevenueCatApplication(engine: engine, acceptsSandbox: settings.acceptsSandbox).apply(event, now: now)
        }
        // On the request's access line: RevenueCat's type and id, and the outcome; never the body.
        let note = FailureNote.current
        note?.add("event_type", receipt.type)
        note?.add("event_id", receipt.eventID)
        note?.add("outcome", receipt.outcome.rawValue)
        return try Reply.document(receipt).response
    }
}
