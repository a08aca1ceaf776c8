import Foundation
import GuestModeKit
import GuestModePurchases
import Hummingbird
import Logging

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
            of: request, limit: min(context.maxUploadSize, 3 * PurchaseController.bodyLimit))
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
        // Apple's ids only: no signed payload, no token, no user's appAccountToken.
        context.logger.info(
            "app store notification",
            metadata: [
                "notification_type": "\(notification.notificationType)",
                "subtype": "\(notification.subtype ?? "")",
                "notification_uuid": "\(notification.notificationUUID)",
                "outcome": "\(outcome)",
            ])
        return try Reply.document(Answer(outcome: outcome)).response
    }
}
