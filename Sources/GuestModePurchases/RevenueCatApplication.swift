import Foundation
import GuestModeKit

/// Applies RevenueCat events through the engine's store plan changes: the same steps for the webhook
/// route and `plan import --format revenuecat`, so a replayed event is a duplicate of the delivered one.
///
/// ```swift
/// let receipt = try RevenueCatApplication(engine: engine, acceptsSandbox: false).apply(event, now: now)
/// // receipt.outcome == .applied, receipt.plans == ["premium"]
/// ```
package struct RevenueCatApplication: Sendable {
    package let engine: GuestMode
    /// Whether `environment: SANDBOX` events change plans.
    package let acceptsSandbox: Bool

    package init(engine: GuestMode, acceptsSandbox: Bool) {
        self.engine = engine
        self.acceptsSandbox = acceptsSandbox
    }

    /// The changes `event` makes, without applying them; empty with the reason when it makes none.
    package func changes(of event: RevenueCatEvent) throws -> (changes: [StorePlanChange], note: String?) {
        if !event.isProduction && !acceptsSandbox {
            return ([], "a SANDBOX event; sandbox events are not applied here")
        }
        let environment: StorePlanChange.Environment = event.isProduction ? .production : .sandbox
        let kind: (String) -> StorePlanChange.Kind
        switch RevenueCatEffect(of: event) {
        case .activate(let until, let trial): kind = { .activate(plan: $0, expiresAt: until, trial: trial) }
        case .gracePeriod(let until): kind = { .gracePeriod(plan: $0, until: until) }
        case .expire: kind = { .expire(plan: $0) }
        case .revoke: kind = { .revoke(plan: $0) }
        case .nothing(let why): return ([], why)
        case .transfer(let from, let to):
            // A transfer names users, not a subscription (the purchases are kept per plan, under
            // "ID#PLAN"), so it is keyed by the event itself: the engine finds no one subscription and
            // moves every RevenueCat purchase the first known user of `from` holds.
            return (
                [
                    StorePlanChange(
                        source: .revenueCat, eventID: event.id,
                        originalTransactionID: event.id,
                        transactionID: event.transactionID ?? event.id, signedAt: event.timestamp,
                        environment: environment, users: [], kind: .transfer(from: from, to: to))
                ], nil
            )
        }
        var plans: [String] = []
        for entitlement in event.entitlementIDs {
            if let plan = engine.profile.plan(revenueCatEntitlement: entitlement)?.name, !plans.contains(plan) {
                plans.append(plan)
            }
        }
        guard !plans.isEmpty else {
            let named =
                event.entitlementIDs.isEmpty
                ? "the event names no entitlement"
                : "no plan of the profile lists \(event.entitlementIDs.map { "'\($0)'" }.joined(separator: ", ")) in its revenuecat_entitlements"
            return ([], named)
        }
        guard let subscription = event.originalTransactionID ?? event.transactionID else {
            throw GuestModeError(
                .invalidJson,
                "'event.original_transaction_id' is missing; a \(event.typeName) event names the purchase it is about")
        }
        // Each plan is its own subscription to the engine: the purchase's events are ordered and
        // counted once per plan its entitlements map to.
        return (
            plans.map { plan in
                return StorePlanChange(
                    source: .revenueCat, eventID: "\(event.id)#\(plan)",
                    originalTransactionID: "\(subscription)#\(plan)",
                    transactionID: event.transactionID ?? subscription, signedAt: event.timestamp,
                    environment: environment, users: event.userCandidates, kind: kind(plan))
            }, nil
        )
    }

    /// Applies the event: every plan it maps to, each in its own transaction (a retry finds the ones
    /// done as duplicates).
    package func apply(_ event: RevenueCatEvent, now: Date) throws -> RevenueCatReceipt {
        let (changes, note) = try changes(of: event)
        guard !changes.isEmpty else { return RevenueCatReceipt(event: event, outcome: .ignored, note: note) }
        var outcomes: [StorePlanOutcome] = []
        var user: String?
        var plans: [String] = []
        for change in changes {
            let result = try engine.applyStorePlanChange(change, now: now)
            outcomes.append(result.outcome)
            user = user ?? result.userID
            if let plan = change.kind.planName ?? result.status?.plan, !plans.contains(plan) { plans.append(plan) }
        }
        // Applied when any plan changed; otherwise the first plan's reason.
        let outcome = RevenueCatReceipt.Outcome(outcomes.contains(.applied) ? .applied : outcomes[0])
        return RevenueCatReceipt(event: event, outcome: outcome, user: user, plans: plans)
    }
}

extension StorePlanChange.Kind {
    /// The plan the change names; nil for a transfer.
    var planName: String? {
        switch self {
        case .activate(let plan, _, _), .gracePeriod(let plan, _), .expire(let plan), .revoke(let plan): plan
        case .transfer: nil
        }
    }
}
