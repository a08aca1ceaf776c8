import Foundation

/// A change to a plan that a store reported: an App Store transaction or
/// notification, a RevenueCat event, or a line of `plan import`. The front
/// end verifies and translates what the store sent; the engine decides
/// (`GuestMode.applyStorePlanChange`).
///
/// ```swift
/// let change = StorePlanChange(
///     source: .appStore, eventID: "6f2c…", originalTransactionID: "2000000123456789",
///     transactionID: "2000000123456790", signedAt: signed, environment: .production,
///     users: [guest.id], kind: .activate(plan: "premium", expiresAt: end, trial: false))
/// let result = try engine.applyStorePlanChange(change, now: now)  // result.outcome == .applied
/// ```
public struct StorePlanChange: Sendable, Equatable {
    /// Who reported the change.
    public enum Source: String, Sendable, Codable, CaseIterable {
        /// A StoreKit 2 transaction or an App Store Server Notification V2.
        case appStore = "app_store"
        /// A RevenueCat webhook event.
        case revenueCat = "revenuecat"
        /// A line of `guestmode plan import`.
        case `import`
    }

    /// The store's environment the change happened in.
    public enum Environment: String, Sendable, Codable, CaseIterable {
        case production, sandbox
    }

    /// What happened to the subscription.
    public enum Kind: Sendable, Equatable {
        /// A purchase or a renewal: the plan is in force until `expiresAt`
        /// (open-ended when nil), as a trial when `trial`.
        case activate(plan: String, expiresAt: Date?, trial: Bool)
        /// A renewal failed but the store keeps the plan until `until`.
        case gracePeriod(plan: String, until: Date)
        /// The subscription ended: the plan stops now if it had not already.
        case expire(plan: String)
        /// Refunded or revoked: the plan is revoked now.
        case revoke(plan: String)
        /// The store moved the subscription to another user: the plan leaves
        /// the first of `from` that exists (else the subscription's recorded
        /// owner) for the first of `to` that exists, with the same end.
        case transfer(from: [String], to: [String])
    }

    /// Who reported it.
    public var source: Source
    /// The id the store gives the notification or event (App Store's
    /// notificationUUID, RevenueCat's event id, or a device-sent
    /// transaction's transactionId and signedDate): applied once.
    public var eventID: String
    /// The subscription's original transaction id (RevenueCat's
    /// original_transaction_id): whose subscription it is is kept under it.
    public var originalTransactionID: String
    /// The transaction or event `plan status` names as the plan's origin.
    public var transactionID: String
    /// The signed date (or the event date): a change older than the newest
    /// applied to the subscription is superseded.
    public var signedAt: Date
    /// The store's environment.
    public var environment: Environment
    /// The guestmode user ids the store names, best first (App Store's
    /// appAccountToken; RevenueCat's app_user_id, original_app_user_id,
    /// aliases). The first that exists is the user; when none does, the
    /// subscription's recorded owner is.
    public var users: [String]
    /// What happened.
    public var kind: Kind

    /// A change as a store reported it; see the type's example.
    public init(
        source: Source, eventID: String, originalTransactionID: String, transactionID: String, signedAt: Date,
        environment: Environment, users: [String], kind: Kind
    ) {
        self.source = source
        self.eventID = eventID
        self.originalTransactionID = originalTransactionID
        self.transactionID = transactionID
        self.signedAt = signedAt
        self.environment = environment
        self.users = users
        self.kind = kind
    }
}

/// What applying a store's change did; the front ends translate it (a
/// notification for nobody known is not an error: the store must not retry it).
public enum StorePlanOutcome: String, Sendable, Codable, CaseIterable {
    /// The plan changed as the store said.
    case applied
    /// This event was applied before: nothing changed.
    case duplicate
    /// A newer change to the same subscription was applied before: nothing changed.
    case superseded
    /// No user the change names, and no recorded owner of the subscription: nothing changed.
    case unknownUser = "unknown_user"
}

/// The result of `GuestMode.applyStorePlanChange`.
public struct StorePlanResult: Sendable, Equatable, Encodable {
    /// What was done.
    public var outcome: StorePlanOutcome
    /// The user whose plan the change is about (for a transfer, the user it
    /// moved to); nil for an unknown user.
    public var userID: String?
    /// The plan's status after the change; nil when the user or the plan is unknown.
    public var status: PlanStatus?

    /// A result; the engine makes them.
    public init(outcome: StorePlanOutcome, userID: String?, status: PlanStatus?) {
        self.outcome = outcome
        self.userID = userID
        self.status = status
    }
}

extension Profile {
    /// The plan an App Store product id is mapped to (`plans.NAME.app_store_products`).
    ///
    /// ```swift
    /// profile.plan(appStoreProduct: "com.example.voice.premium.monthly")?.name  // "premium"
    /// ```
    public func plan(appStoreProduct product: String) -> Plan? {
        plans.first { $0.appStoreProducts.contains(product) }
    }

    /// The plan a RevenueCat entitlement is mapped to (`plans.NAME.revenuecat_entitlements`).
    ///
    /// ```swift
    /// profile.plan(revenueCatEntitlement: "premium")?.name  // "premium"
    /// ```
    public func plan(revenueCatEntitlement entitlement: String) -> Plan? {
        plans.first { $0.revenueCatEntitlements.contains(entitlement) }
    }
}

extension GuestMode {
    /// Applies a plan change a store reported, once per event and never
    /// over a newer change to the same subscription, through the plan use
    /// cases' steps (webhooks, backup queue, the tier the gates read) in one
    /// transaction. An unknown user is an outcome, not an error.
    ///
    /// ```swift
    /// let result = try engine.applyStorePlanChange(change, now: now)
    /// switch result.outcome {
    /// case .applied, .duplicate, .superseded, .unknownUser: break  // 200 to the store in every case
    /// }
    /// ```
    public func applyStorePlanChange(_ change: StorePlanChange, now: Date) throws -> StorePlanResult {
        try TextRule.check([
            "the event id": change.eventID, "the original transaction id": change.originalTransactionID,
            "the transaction id": change.transactionID,
        ])
        for user in change.users { try TextRule.check(user, what: "the user id") }
        if let plan = change.kind.plan, profile.plan(named: plan) == nil {
            throw GuestModeError(
                .unknownPlan,
                "no plan '\(plan)' in profile \(profile.name); plans: \(profile.plans.map(\.name).joined(separator: ", "))"
            )
        }
        return try store.write { transaction in
            try StorePlanSteps(transaction: transaction, profile: profile, change: change, now: now).apply()
        }
    }

    /// The store purchases that made the user's current plan grants, by
    /// plan and grant time: what `plans(user:now:)` names as each plan's origin.
    static func annotated(
        _ statuses: [PlanStatus], of userID: String, in transaction: some StoreTransaction
    ) throws
        -> [PlanStatus]
    {
        let purchases = try transaction.storePurchases(of: userID)
        guard !purchases.isEmpty else { return statuses }
        return statuses.map { status in
            var status = status
            if let purchase = purchases.last(where: { $0.plan == status.plan && $0.grantedAt == status.grantedAt }) {
                status.source = purchase.source.rawValue
                status.sourceID = purchase.transactionID
            }
            return status
        }
    }
}

extension StorePlanChange.Kind {
    /// The plan the change names; nil for a transfer (the subscription's).
    var plan: String? {
        switch self {
        case .activate(let plan, _, _), .gracePeriod(let plan, _), .expire(let plan), .revoke(let plan): plan
        case .transfer: nil
        }
    }
}

/// One store change applied inside a write transaction.
private struct StorePlanSteps {
    let transaction: any StoreTransaction
    let profile: Profile
    let change: StorePlanChange
    let now: Date

    func apply() throws -> StorePlanResult {
        let recorded = try transaction.storePurchase(
            source: change.source, originalTransactionID: change.originalTransactionID)
        if case .transfer(let from, let to) = change.kind {
            return try transfer(from: from, to: to, recorded: recorded)
        }
        guard let userID = try firstUser(change.users) ?? recorded?.userID,
            try transaction.user(userID, locking: true) != nil
        else {
            return StorePlanResult(outcome: .unknownUser, userID: nil, status: nil)
        }
        // A repeat is a duplicate first: Apple and RevenueCat retry until they are answered.
        let superseded = recorded.map { change.signedAt < $0.signedAt } ?? false
        guard try claim(superseded ? .superseded : .applied) else {
            return try finish(.duplicate, userID: userID, plan: change.kind.plan ?? recorded?.plan)
        }
        if superseded { return try finish(.superseded, userID: userID, plan: change.kind.plan ?? recorded?.plan) }
        // A subscription another user held moves with the store's word: the
        // plan leaves its former owner.
        if let recorded, recorded.userID != userID, try transaction.user(recorded.userID, locking: true) != nil {
            try stop(plan: recorded.plan, grantedAt: recorded.grantedAt, of: recorded.userID, revoking: true)
        }
        // The grant this subscription made for this user, the one the store's word may end.
        let made = recorded.flatMap { $0.userID == userID ? $0 : nil }
        var grantedAt: Date?
        let plan: String
        switch change.kind {
        case .activate(let name, let expiresAt, let trial):
            plan = name
            let isTrial = trial && expiresAt != nil
            grantedAt = try grant(
                PlanGrant(
                    plan: name, grantedAt: now, trialEndsAt: isTrial ? expiresAt : nil,
                    endsAt: isTrial ? nil : expiresAt), to: userID, renewing: recorded)
        case .gracePeriod(let name, let until):
            plan = name
            grantedAt = try grant(
                PlanGrant(plan: name, grantedAt: now, endsAt: until), to: userID, renewing: recorded)
        case .expire(let name):
            plan = name
            try stop(plan: made?.plan ?? name, grantedAt: made?.grantedAt, of: userID, revoking: false)
            grantedAt = made?.grantedAt
        case .revoke(let name):
            plan = name
            try stop(plan: made?.plan ?? name, grantedAt: made?.grantedAt, of: userID, revoking: true)
            grantedAt = made?.grantedAt
        case .transfer:
            throw GuestModeError(.internalFailure, "a transfer reached the change of one user")
        }
        try transaction.putStorePurchase(
            StorePurchase(
                source: change.source, originalTransactionID: change.originalTransactionID, userID: userID,
                plan: plan, signedAt: change.signedAt, transactionID: change.transactionID,
                environment: change.environment, grantedAt: grantedAt))
        return try finish(.applied, userID: userID, plan: plan)
    }

    /// The plan leaves the first existing user of `from` (else the
    /// subscription's recorded owner) for the first existing one of `to`,
    /// ending when it ended there.
    private func transfer(from: [String], to: [String], recorded: StorePurchase?) throws -> StorePlanResult {
        guard let target = try firstUser(to), try transaction.user(target, locking: true) != nil else {
            return StorePlanResult(outcome: .unknownUser, userID: nil, status: nil)
        }
        let source = try firstUser(from) ?? recorded?.userID
        let superseded = recorded.map { change.signedAt < $0.signedAt } ?? false
        guard try claim(superseded ? .superseded : .applied) else {
            return try finish(.duplicate, userID: target, plan: recorded?.plan)
        }
        if superseded { return try finish(.superseded, userID: target, plan: recorded?.plan) }
        // What moves: the named subscription, or every subscription of this
        // source the former owner holds (RevenueCat names users, not transactions).
        var moving: [StorePurchase] = []
        if let recorded {
            moving = [recorded]
        } else if let source {
            moving = try transaction.storePurchases(of: source).filter { $0.source == change.source }
        }
        guard let source, source != target, try transaction.user(source, locking: true) != nil else {
            return try finish(.applied, userID: target, plan: moving.first?.plan)
        }
        for purchase in moving where purchase.userID == source {
            // The grant the subscription made; one the former owner was given otherwise stays.
            let held = profile.planStatuses(
                of: try transaction.planGrants(of: source).filter {
                    $0.plan == purchase.plan && $0.grantedAt == purchase.grantedAt
                }, now: now
            ).first
            var grantedAt = purchase.grantedAt
            if let held, held.isInForce {
                try stop(plan: purchase.plan, grantedAt: purchase.grantedAt, of: source, revoking: true)
                let isTrial = held.state == .trial
                try grant(
                    PlanGrant(
                        plan: purchase.plan, grantedAt: now, trialEndsAt: isTrial ? held.endsAt : nil,
                        endsAt: isTrial ? nil : held.endsAt), to: target, replacing: nil)
                grantedAt = now
            }
            var moved = purchase
            moved.userID = target
            moved.grantedAt = grantedAt
            moved.signedAt = max(purchase.signedAt, change.signedAt)
            moved.transactionID = change.transactionID
            try transaction.putStorePurchase(moved)
        }
        return try finish(.applied, userID: target, plan: moving.first?.plan)
    }

    /// The first of `candidates` that is a user of the store.
    private func firstUser(_ candidates: [String]) throws -> String? {
        for candidate in candidates where try transaction.user(candidate, locking: false) != nil {
            return candidate
        }
        return nil
    }

    /// Notes the event as seen with its outcome; false when it was seen before.
    private func claim(_ outcome: StorePlanOutcome) throws -> Bool {
        try transaction.claimStoreEvent(
            source: change.source, eventID: change.eventID, originalTransactionID: change.originalTransactionID,
            outcome: outcome.rawValue, at: now)
    }

    /// Stores a grant as `plan grant` does. The store's latest word is the
    /// subscription's end: the grant it made before (`previous`), still in
    /// force, ends now (a renewal that ends sooner than the last, a grace
    /// period, are what the store says), and the expiry scheduled for the
    /// plan is cancelled. A grant the store did not make (`plan grant`) stays.
    private func grant(_ grant: PlanGrant, to userID: String, replacing previous: Date?) throws {
        if let previous {
            _ = try transaction.endPlanGrant(of: userID, plan: grant.plan, grantedAt: previous, at: now)
        }
        try add(grant, to: userID)
    }

    /// `grant(_:to:)`, unless the grant the subscription made last is in
    /// force with the same term: a transaction the device sends again (StoreKit
    /// signs it anew each time), a renewal status that changes no date, grant
    /// nothing and raise no webhook. Returns the time of the grant in force.
    private func grant(_ grant: PlanGrant, to userID: String, renewing recorded: StorePurchase?) throws -> Date {
        if let recorded, recorded.userID == userID, recorded.plan == grant.plan, let grantedAt = recorded.grantedAt,
            let held = try transaction.planGrants(of: userID).last(where: {
                $0.plan == grant.plan && $0.grantedAt == grantedAt
            }),
            held.revokedAt == nil, held.trialEndsAt == grant.trialEndsAt, held.endsAt == grant.endsAt,
            held.status(in: profile, now: now).isInForce
        {
            return grantedAt
        }
        let previous = recorded.flatMap { $0.userID == userID && $0.plan == grant.plan ? $0.grantedAt : nil }
        try self.grant(grant, to: userID, replacing: previous)
        return now
    }

    private func add(_ grant: PlanGrant, to userID: String) throws {
        _ = try transaction.cancelScheduledWebhooks(
            user: userID, type: WebhookEventType.planExpired.rawValue, scope: grant.plan, after: now)
        try transaction.addPlanGrant(grant, to: userID)
        try transaction.noteChange(of: userID, profile: profile, now: now)
        try transaction.raisePlanWebhooks(of: grant, user: userID, profile: profile, now: now)
    }

    /// Revokes the grant the subscription made (`plan revoke`'s steps) or
    /// ends it now (`plan.expired` now instead of at its end); nothing when
    /// it made none, or it is no longer in force. Grants of the plan the store
    /// did not make stay.
    private func stop(plan: String, grantedAt: Date?, of userID: String, revoking: Bool) throws {
        guard let grantedAt else { return }
        let changed =
            revoking
            ? try transaction.revokePlanGrant(of: userID, plan: plan, grantedAt: grantedAt, at: now)
            : try transaction.endPlanGrant(of: userID, plan: plan, grantedAt: grantedAt, at: now)
        guard changed > 0 else { return }
        try transaction.noteChange(of: userID, profile: profile, now: now)
        _ = try transaction.cancelScheduledWebhooks(
            user: userID, type: WebhookEventType.planExpired.rawValue, scope: plan, after: now)
        if revoking {
            try transaction.raiseWebhook(
                .planRevoked, user: userID, data: ["plan": .string(plan)], at: now, profile: profile, scope: plan)
        } else {
            try transaction.raiseWebhook(
                .planExpired, user: userID, data: ["plan": .string(plan), "trial": .bool(false)], at: now,
                profile: profile, scope: plan)
        }
    }

    private func finish(_ outcome: StorePlanOutcome, userID: String, plan: String?) throws -> StorePlanResult {
        guard let plan else { return StorePlanResult(outcome: outcome, userID: userID, status: nil) }
        let grants = try transaction.planGrants(of: userID)
        let statuses = try GuestMode.annotated(
            profile.planStatuses(of: grants, now: now), of: userID, in: transaction)
        return StorePlanResult(outcome: outcome, userID: userID, status: statuses.first { $0.plan == plan })
    }
}
