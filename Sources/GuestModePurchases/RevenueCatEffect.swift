import Foundation
import GuestModeKit

/// What a RevenueCat event does to the plans its entitlements map to, before any store is read.
///
/// ```swift
/// let effect = RevenueCatEffect(of: event)  // .activate(until: …, trial: false) for an INITIAL_PURCHASE
/// ```
package enum RevenueCatEffect: Sendable, Equatable {
    /// The plan is in force until `until` (nil: no end, a lifetime purchase), as a trial or paid.
    case activate(until: Date?, trial: Bool)
    /// The plan stays in force, in a billing grace period, until `until`.
    case gracePeriod(until: Date)
    /// The plan ends now.
    case expire
    /// The plan is taken back now (a refund).
    case revoke
    /// The purchase moves from one app user to another, its plans with it.
    case transfer(from: [String], to: [String])
    /// Acknowledged; nothing changes (`why` says so in the answer).
    case nothing(why: String)

    package init(of event: RevenueCatEvent) {
        switch event.type {
        case .initialPurchase, .renewal, .productChange, .uncancellation, .subscriptionExtended:
            self = .activate(until: event.expiration, trial: event.isTrial)
        case .nonRenewingPurchase:
            self = .activate(until: event.expiration, trial: false)
        case .cancellation:
            // A refund ends the plan at once; any other cancellation only stops the renewal, so the
            // plan stays in force until the end already paid for.
            self =
                event.cancelReason == "CUSTOMER_SUPPORT"
                ? .revoke : .activate(until: event.expiration, trial: event.isTrial)
        case .billingIssue:
            if let end = event.gracePeriodExpiration {
                self = .gracePeriod(until: end)
            } else {
                self = .nothing(
                    why: "a billing issue without a grace period: the plan keeps its end, an EXPIRATION event ends it")
            }
        case .expiration:
            self = .expire
        case .transfer:
            self = .transfer(from: event.transferredFrom, to: event.transferredTo)
        case .test:
            self = .nothing(why: "a TEST event changes nothing")
        case .other(let name):
            self = .nothing(why: "guestmode does not act on \(name) events")
        }
    }
}
