import Foundation
import GuestModeKit
import GuestModePurchases
import Hummingbird

/// App Store Server Notifications V2 (`/v1/integrations/app-store`): no
/// session, the signature is the credential. Whatever was done with a
/// verified notification (applied, a repeat, older than what was applied,
/// for nobody known, a type that changes no plan) is 200, so Apple does not
/// retry it; a notification that does not verify is 401.
struct AppStoreController {
    let services: Services

    static let notConfigured = GuestModeError(
        .appStoreNotConfigured,
        "this server takes no App Store purchases; start it with --app-store-root-ca and --app-store-bundle-id")

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .post("app-store", use: receive)
    }

    /// `{"signedPayload": "<JWS>"}`, as Apple posts it.
    struct NotificationBody: Decodable {
        var signedPayload: String
    }

    /// What was done, for Apple and the log.
    struct Answer: Encodable, Sendable {
        var outcome: String
    }

    @Sendable func receive(_ request: Request, context: ServerContext) async throws -> Response {
        guard let verifier = services.appStore else { throw Self.notConfigured }
        let bytes = try await RequestInput.body(
            of: request, context: context, limit: min(context.maxUploadSize, 3 * PurchaseController.bodyLimit))
        let body = try StrictRequestDecoder.decode(NotificationBody.self, from: bytes)
        let notification = try await verifier.notification(body.signedPayload)
        let outcome: String
        switch AppStorePlanChanges.change(for: notification, profile: services.engine.profile) {
        case .acknowledged:
            outcome = "acknowledged"
        case .change(let change):
            outcome = try await services.perform { engine, now in
                try engine.applyStorePlanChange(change, now: now).outcome.rawValue
            }
        }
        // On the request's access line: Apple's type, subtype and id, and the outcome; never the payload.
        let note = FailureNote.current
        note?.add("notification_type", notification.notificationType)
        if let subtype = notification.subtype { note?.add("notification_subtype", subtype) }
        note?.add("notification_uuid", notification.notificationUUID)
        note?.add("outcome", outcome)
        return try Reply.document(Answer(outcome: outcome)).response
    }
}
