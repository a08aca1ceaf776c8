import Foundation

/// Where one delivery of an event to one endpoint stands.
public enum WebhookDeliveryStatus: String, Codable, Sendable, CaseIterable {
    /// Waiting for its first or next attempt.
    case pending
    /// Failed as many times in a row as the profile allows; kept, tried again only when retried by hand.
    case held
    /// The endpoint answered 2xx.
    case delivered
}

/// One event on its way to one endpoint: the webhook outbox holds one row per
/// subscribing endpoint, written in the transaction of the change.
public struct WebhookDelivery: Codable, Sendable, Equatable {
    /// The row's number; rows of one user and endpoint go out in the order of
    /// their creation time, then of this number.
    public var deliveryID: Int64
    /// The event's id, the same in every attempt and for every endpoint.
    public var eventID: String
    /// The endpoint it goes to.
    public var endpoint: String
    /// The event type (`WebhookEventType`).
    public var type: String
    /// The user the event is about.
    public var userID: String
    /// When the event happened; a scheduled event (a plan's expiry) is not
    /// sent before.
    public var createdAt: Date
    /// What the event concerns within its type (a plan's name), for
    /// cancelling a scheduled event; empty when nothing.
    public var scope: String
    /// The exact body posted, JSON.
    public var payload: String
    /// Where it stands.
    public var status: WebhookDeliveryStatus
    /// Failed attempts in a row.
    public var attempts: Int
    /// Why the last attempt failed.
    public var lastError: String?
    /// When the next attempt may be made; nil when now.
    public var nextAttemptAt: Date?
    /// When the endpoint accepted it.
    public var deliveredAt: Date?

    package init(
        deliveryID: Int64, eventID: String, endpoint: String, type: String, userID: String, createdAt: Date,
        scope: String, payload: String, status: WebhookDeliveryStatus, attempts: Int, lastError: String?,
        nextAttemptAt: Date?, deliveredAt: Date?
    ) {
        self.deliveryID = deliveryID
        self.eventID = eventID
        self.endpoint = endpoint
        self.type = type
        self.userID = userID
        self.createdAt = createdAt
        self.scope = scope
        self.payload = payload
        self.status = status
        self.attempts = attempts
        self.lastError = lastError
        self.nextAttemptAt = nextAttemptAt
        self.deliveredAt = deliveredAt
    }
}

/// A delivery to add to the outbox (`WebhookRows.enqueueWebhook`).
package struct NewWebhookDelivery: Sendable, Equatable {
    package var eventID: String
    package var endpoint: String
    package var type: String
    package var userID: String
    package var createdAt: Date
    package var scope: String
    package var payload: String
}

/// A place in the outbox's order: a delivery's creation time (as
/// `WebhookDelivery.createdAt` gives it) and its id.
package struct WebhookCursor: Sendable, Equatable {
    package var createdAt: String
    package var deliveryID: Int64

    package init(createdAt: String, deliveryID: Int64) {
        self.createdAt = createdAt
        self.deliveryID = deliveryID
    }
}

/// How many deliveries of one endpoint are in one status.
package struct WebhookCount: Sendable, Equatable {
    package var endpoint: String
    package var status: WebhookDeliveryStatus
    package var count: Int

    package init(endpoint: String, status: WebhookDeliveryStatus, count: Int) {
        self.endpoint = endpoint
        self.status = status
        self.count = count
    }
}

/// The webhook outbox's rows in one transaction (see `StoreTransaction`).
/// Rows are not tied to their user: an event about a deleted user must
/// still go out.
package protocol WebhookRows {
    /// Adds a pending delivery with no attempts.
    func enqueueWebhook(_ delivery: NewWebhookDelivery) throws

    /// Deliveries ordered by creation time, then delivery id: only those in
    /// `status` and of `user` when given, and at most `limit` when given.
    func webhookDeliveries(status: WebhookDeliveryStatus?, user: String?, limit: Int?) throws -> [WebhookDelivery]

    /// The oldest pending delivery of each endpoint and user (what may go
    /// out next), ordered by creation time then delivery id, only those
    /// after `cursor` (a delivery's `createdAt` text and id), at most `limit`:
    /// a delivery pass pages through a backlog of any size in bounded memory.
    func pendingWebhookHeads(after cursor: WebhookCursor?, limit: Int) throws -> [WebhookDelivery]

    /// One delivery, locked until the end of the transaction with `locking`.
    func webhookDelivery(_ id: Int64, locking: Bool) throws -> WebhookDelivery?

    /// Sets where a delivery stands; changes nothing when there is none.
    func setWebhookState(
        of id: Int64, status: WebhookDeliveryStatus, attempts: Int, lastError: String?, nextAttemptAt: Date?,
        deliveredAt: Date?) throws

    /// Removes the pending deliveries of `user` of `type` and `scope`
    /// created after `time` (scheduled ones); returns how many went.
    func cancelScheduledWebhooks(user: String, type: String, scope: String, after time: Date) throws -> Int

    /// Removes up to `limit` delivered deliveries whose event happened
    /// before `time`, oldest first; returns how many went.
    func deleteDeliveredWebhooks(createdBefore time: Date, limit: Int) throws -> Int

    /// The number of deliveries per endpoint and status (only those above zero).
    func webhookCounts() throws -> [WebhookCount]
}
