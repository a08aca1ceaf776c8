import Foundation
import GuestModeKit
import GuestModePurchases
import Hummingbird

/// A StoreKit 2 transaction the app sends after a purchase
/// (`/v1/users/{user}/purchases`): verified as Apple signs it, applied to the
/// user's plan, answered with the plan status document.
struct PurchaseController {
    let services: Services

    /// The largest body taken: a signed transaction is a few kilobytes.
    static let bodyLimit = AppStoreVerifier.maximumLength + 1024

    var endpoints: RouteCollection<ServerContext> {
        RouteCollection(context: ServerContext.self)
            .post(use: record)
    }

    /// `{"signed_transaction": "<StoreKit's jwsRepresentation>"}`.
    struct PurchaseBody: Decodable {
        var signedTransaction: String

        enum CodingKeys: String, CodingKey { case signedTransaction = "signed_transaction" }
    }

    /// The user's own session, or a server key, as every user route; the signature proves the purchase.
    @Sendable func record(_ request: Request, context: ServerContext) async throws -> Response {
        guard let verifier = services.appStore else { throw AppStoreController.notConfigured }
        let (_, userID) = try await services.user(of: request, context: context)
        let bytes = try await RequestInput.body(
            of: request, context: context, limit: min(context.maxUploadSize, Self.bodyLimit))
        if let unknown = try RequestInput.object(bytes).keys.sorted().first(where: { $0 != "signed_transaction" }) {
            throw GuestModeError(
                .usage,
                "the request body has a member '\(unknown)' this route does not take; send only signed_transaction")
        }
        let body = try StrictRequestDecoder.decode(PurchaseBody.self, from: bytes)
        let transaction = try await verifier.transaction(body.signedTransaction)
        let report = try await services.perform { engine, now in
            let change = try AppStorePlanChanges.change(for: transaction, user: userID, profile: engine.profile)
            let result = try engine.applyStorePlanChange(change, now: now)
            guard result.outcome != .unknownUser else {
                throw GuestModeError(.userNotFound, "no user '\(userID)' in this store")
            }
            return PlanReport(
                user: userID, tier: try engine.tier(user: userID, now: now),
                plans: try engine.plans(user: userID, now: now))
        }
        return try Reply.document(report).response
    }
}
