import Foundation
import GuestModeKit

/// What became of one RevenueCat event: the answer of `POST /v1/integrations/revenuecat` and one line
/// of `plan import --format revenuecat`.
///
/// ```json
/// {"event_id": "5f0c…", "type": "RENEWAL", "outcome": "applied", "user_id": "u1", "plans": ["premium"], "note": null}
/// ```
package struct RevenueCatReceipt: Encodable, Sendable, Equatable {
    package enum Outcome: String, Encodable, Sendable {
        /// The plans changed as the event says.
        case applied
        /// This event id was applied before; nothing changed.
        case duplicate
        /// A later event of the same purchase was applied before; nothing changed.
        case superseded
        /// None of the event's app user ids is a guestmode user; nothing changed.
        case unknownUser = "unknown_user"
        /// The event changes no plan (TEST, a sandbox event the server does not take, a type or an
        /// entitlement guestmode does not act on); `note` says which.
        case ignored
    }

    package var eventID: String
    package var type: String
    package var outcome: Outcome
    /// The guestmode user the event was applied to (for a TRANSFER, the one the plans moved to).
    package var user: String?
    /// The plans the event changed or would have changed.
    package var plans: [String]
    /// Why nothing changed, for `ignored`.
    package var note: String?

    package init(
        event: RevenueCatEvent, outcome: Outcome, user: String? = nil, plans: [String] = [], note: String? = nil
    ) {
        eventID = event.id
        type = event.typeName
        self.outcome = outcome
        self.user = user
        self.plans = plans
        self.note = note
    }
}

extension RevenueCatReceipt.Outcome {
    /// The engine's outcome of a store plan change, as the answer names it.
    init(_ outcome: StorePlanOutcome) {
        switch outcome {
        case .applied: self = .applied
        case .duplicate: self = .duplicate
        case .superseded: self = .superseded
        case .unknownUser: self = .unknownUser
        }
    }
}
