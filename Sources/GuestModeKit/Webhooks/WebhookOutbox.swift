import Foundation

// Events are fanned out when they are raised: the change's transaction
// writes one outbox row per endpoint subscribing to the type, so each
// endpoint's delivery has its own attempts, backoff and hold, and an
// endpoint added to the profile later receives only what happens after.

extension StoreTransaction {
    /// Queues a `type` event about `user` for every endpoint that subscribes
    /// to it, in the caller's transaction: it goes out only if that commits.
    /// `at` is when it happened; a later time schedules it (a plan's expiry).
    func raiseWebhook(
        _ type: WebhookEventType, user userID: String, data: [String: JSONValue], at time: Date, profile: Profile,
        scope: String = ""
    ) throws {
        let endpoints = profile.webhooks.subscribers(of: type)
        guard !endpoints.isEmpty else { return }
        let event = WebhookEvent.make(type: type.rawValue, user: userID, data: data, at: time)
        for endpoint in endpoints {
            try enqueueWebhook(
                NewWebhookDelivery(
                    eventID: event.id, endpoint: endpoint.name, type: type.rawValue, userID: userID, createdAt: time,
                    scope: scope, payload: event.payload))
        }
    }
}

/// One event as a receiver sees it: `{"id","type","created_at","user_id","data"}`.
package struct WebhookEvent: Sendable, Equatable {
    package var id: String
    /// The exact body posted, compact JSON with sorted members.
    package var payload: String

    /// A new event with a fresh id (`evt_` and 32 hex digits).
    package static func make(
        type: String, user userID: String, data: [String: JSONValue], at time: Date
    )
        -> WebhookEvent
    {
        let id = "evt_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let body = JSONValue.object([
            ("id", .string(id)), ("type", .string(type)), ("created_at", .string(Timestamp.format(time))),
            ("user_id", .string(userID)), ("data", .object(data)),
        ])
        return WebhookEvent(id: id, payload: body.canonicalText)
    }
}

/// The outbox by endpoint, for `webhook list`.
public struct WebhookEndpointQueue: Codable, Sendable, Equatable {
    /// The endpoint's name.
    public var name: String
    /// Its address.
    public var url: String
    /// The event types it receives.
    public var events: [String]
    /// Deliveries waiting.
    public var pending: Int
    /// Deliveries held after failing too often.
    public var held: Int
    /// Deliveries made.
    public var delivered: Int
}

/// What one attempt at a delivery came to.
package enum WebhookAttempt: Sendable, Equatable {
    /// The endpoint answered 2xx.
    case delivered
    /// No answer, or another status; the reason is kept on the delivery.
    case failed(String)
}

/// Where a delivery stands after an attempt was settled.
package struct SettledDelivery: Sendable, Equatable {
    package var status: WebhookDeliveryStatus
    package var attempts: Int
    package var nextAttemptAt: Date?
}

extension GuestMode {
    /// The retry policy of this profile's webhooks.
    package var webhookRetry: WebhookRetryPolicy { WebhookRetryPolicy(maxAttempts: profile.webhooks.maxAttempts) }

    /// Every endpoint of the profile with its deliveries by status, and the
    /// deliveries of endpoints the profile no longer lists, under their names.
    public func webhookQueues() throws -> [WebhookEndpointQueue] {
        let counts = try store.read { try $0.webhookCounts() }
        func count(_ name: String, _ status: WebhookDeliveryStatus) -> Int {
            counts.first { $0.endpoint == name && $0.status == status }?.count ?? 0
        }
        var names = profile.webhooks.endpoints.map(\.name)
        for name in Set(counts.map(\.endpoint)).sorted() where !names.contains(name) { names.append(name) }
        return names.map { name in
            let endpoint = profile.webhooks.endpoint(named: name)
            return WebhookEndpointQueue(
                name: name, url: endpoint?.url ?? "", events: endpoint?.events.map(\.rawValue) ?? [],
                pending: count(name, .pending), held: count(name, .held), delivered: count(name, .delivered))
        }
    }

    /// Deliveries, oldest first: only `user`'s and in `status` when given.
    public func webhookDeliveries(user userID: String?, status: WebhookDeliveryStatus?) throws -> [WebhookDelivery] {
        if let userID { try TextRule.check(userID, what: "the user id") }
        return try store.read { try $0.webhookDeliveries(status: status, user: userID, limit: nil) }
    }

    /// The deliveries to attempt now, one per endpoint and user: the oldest
    /// pending one of each, when it is due (its event has happened and its
    /// retry time has come, or `retryingNow`). A later event of a user waits
    /// behind an earlier pending one; a held one no longer blocks it. Pairs
    /// in `skipping` (endpoint, user) are left out. At most `limit` are
    /// returned, oldest first: the outbox is read a page of heads at a time,
    /// so a backlog of millions costs the same memory as a few.
    package func dueWebhookDeliveries(
        now: Date, retryingNow: Bool, skipping: Set<[String]> = [], limit: Int = 256
    ) throws -> [WebhookDelivery] {
        var cursor: WebhookCursor?
        while true {
            let heads = try store.read { try $0.pendingWebhookHeads(after: cursor, limit: limit) }
            guard let last = heads.last else { return [] }
            var due: [WebhookDelivery] = []
            for delivery in heads where !skipping.contains([delivery.endpoint, delivery.userID]) {
                // Heads come in order of creation: every one after this is scheduled later still.
                guard delivery.createdAt <= now else { return due }
                if !retryingNow, let next = delivery.nextAttemptAt, next > now { continue }
                due.append(delivery)
            }
            if !due.isEmpty { return due }
            cursor = WebhookCursor(createdAt: Timestamp.format(last.createdAt), deliveryID: last.deliveryID)
        }
    }

    /// How long a delivered event stays in the outbox, for `webhook events`:
    /// 30 days, as long as Stripe keeps its events.
    package static let deliveredRetention: TimeInterval = 30 * 86_400

    /// Removes delivered deliveries whose event is older than
    /// `deliveredRetention`, at most `limit` in one transaction so a delivery
    /// pass never holds the store long; returns how many went. Pending and
    /// held deliveries are never removed.
    package func pruneDeliveredWebhooks(now: Date, limit: Int = 10_000) throws -> Int {
        let cutoff = now.addingTimeInterval(-Self.deliveredRetention)
        return try store.write { try $0.deleteDeliveredWebhooks(createdBefore: cutoff, limit: limit) }
    }

    /// Records an attempt at `delivery` made at `now`. A failure counts one
    /// attempt more and sets the next try (`WebhookRetryPolicy`), or holds the
    /// delivery after the profile's `max_attempts`. A delivery settled meanwhile
    /// (delivered by another process, retried by hand) is left as it is.
    package func settleWebhook(
        _ delivery: WebhookDelivery, attempt: WebhookAttempt, now: Date
    ) throws
        -> SettledDelivery
    {
        let retry = webhookRetry
        return try store.write { transaction in
            guard let current = try transaction.webhookDelivery(delivery.deliveryID, locking: true),
                current.status == .pending, current.attempts == delivery.attempts
            else {
                let current = try transaction.webhookDelivery(delivery.deliveryID, locking: false)
                return SettledDelivery(
                    status: current?.status ?? .delivered, attempts: current?.attempts ?? delivery.attempts,
                    nextAttemptAt: current?.nextAttemptAt)
            }
            switch attempt {
            case .delivered:
                try transaction.setWebhookState(
                    of: current.deliveryID, status: .delivered, attempts: current.attempts, lastError: nil,
                    nextAttemptAt: nil, deliveredAt: now)
                return SettledDelivery(status: .delivered, attempts: current.attempts, nextAttemptAt: nil)
            case .failed(let reason):
                let attempts = current.attempts + 1
                let held = retry.isHeld(attempts: attempts)
                let next =
                    held
                    ? nil
                    : now.addingTimeInterval(
                        WebhookRetryPolicy.delay(afterAttempts: attempts, delivery: current.deliveryID))
                try transaction.setWebhookState(
                    of: current.deliveryID, status: held ? .held : .pending, attempts: attempts, lastError: reason,
                    nextAttemptAt: next, deliveredAt: nil)
                return SettledDelivery(status: held ? .held : .pending, attempts: attempts, nextAttemptAt: next)
            }
        }
    }

    /// Puts held deliveries back in the queue with no attempts, to be tried
    /// at the next delivery: the one numbered `id`, or every held one when
    /// `id` is nil. Returns those retried. An `id` that is not held is
    /// refused (`webhook_not_found` when there is no such delivery).
    public func retryWebhooks(id: Int64?) throws -> [WebhookDelivery] {
        try store.write { transaction in
            let chosen: [WebhookDelivery]
            if let id {
                guard let delivery = try transaction.webhookDelivery(id, locking: true) else {
                    throw GuestModeError(.webhookNotFound, "there is no webhook delivery \(id)")
                }
                guard delivery.status != .delivered else {
                    throw GuestModeError(
                        .webhookDelivered,
                        "webhook delivery \(id) was delivered at \(delivery.deliveredAt.map(Timestamp.format) ?? "?"); it is not sent again"
                    )
                }
                chosen = [delivery]
            } else {
                chosen = try transaction.webhookDeliveries(status: .held, user: nil, limit: nil)
            }
            for delivery in chosen {
                try transaction.setWebhookState(
                    of: delivery.deliveryID, status: .pending, attempts: 0, lastError: nil, nextAttemptAt: nil,
                    deliveredAt: nil)
            }
            return try chosen.compactMap { try transaction.webhookDelivery($0.deliveryID, locking: false) }
        }
    }

    /// A `ping` event for `endpoint`, not queued: what a test delivery posts.
    package func pingEvent(for endpoint: String, now: Date) throws -> WebhookEvent {
        guard profile.webhooks.endpoint(named: endpoint) != nil else { throw unknownWebhook(endpoint) }
        return WebhookEvent.make(
            type: WebhookEventType.ping, user: "", data: ["endpoint": .string(endpoint)], at: now)
    }

    /// The endpoint named `name`, or `unknown_webhook`.
    package func requireWebhookEndpoint(_ name: String) throws -> WebhookEndpoint {
        guard let endpoint = profile.webhooks.endpoint(named: name) else { throw unknownWebhook(name) }
        return endpoint
    }

    private func unknownWebhook(_ name: String) -> GuestModeError {
        let known = profile.webhooks.endpoints.map(\.name)
        return GuestModeError(
            .unknownWebhook,
            "profile '\(profile.name)' has no webhook endpoint '\(name)'; \(known.isEmpty ? "it has no webhooks section" : "endpoints: \(known.joined(separator: ", "))")"
        )
    }
}
