import Foundation
import GuestModeKit

/// What one pass over the webhook outbox did.
package struct WebhookDeliveryReport: Codable, Sendable {
    /// A delivery the endpoint accepted.
    package struct Delivered: Codable, Sendable {
        package var deliveryID: Int64
        package var eventID: String
        package var endpoint: String
        package var type: String
        package var userID: String
        /// The endpoint's HTTP status.
        package var status: Int
    }

    /// A delivery that failed this time; it stays in the outbox.
    package struct Failed: Codable, Sendable {
        package var deliveryID: Int64
        package var eventID: String
        package var endpoint: String
        package var type: String
        package var userID: String
        package var error: String
        /// Failed attempts in a row so far.
        package var attempts: Int
        /// When it is tried again; absent once it is held.
        package var nextAttemptAt: String?
        /// Whether this failure held it.
        package var isHeld: Bool
    }

    /// An endpoint nothing was sent to: its secret cannot be read, or the
    /// profile no longer lists it.
    package struct Skipped: Codable, Sendable {
        package var endpoint: String
        package var error: String
    }

    package var delivered: [Delivered] = []
    package var failed: [Failed] = []
    package var skipped: [Skipped] = []
    /// Deliveries still pending after the pass (waiting for their retry time or behind another).
    package var pending = 0
    /// Deliveries held after too many failures, retried only by hand.
    package var held = 0

    /// Whether something could not be delivered: the caller tries again later (nothing is lost).
    package var needsRetry: Bool { !failed.isEmpty || !skipped.isEmpty || held > 0 }
}

/// Sends the webhook outbox's due deliveries: each POSTed with its signature,
/// counted delivered only on a 2xx answer, settled in the outbox right after.
/// A process killed between the answer and the settling sends that delivery
/// again next time, with the same event id: delivery is at least once.
package struct WebhookSender: Sendable {
    package static let eventIdHeader = "Guestmode-Event-Id"

    private let engine: GuestMode
    private let transport: HTTPTransport
    private let secrets: WebhookSecrets

    package init(engine: GuestMode, transport: HTTPTransport, secrets: WebhookSecrets) {
        self.engine = engine
        self.transport = transport
        self.secrets = secrets
    }

    /// Delivers until nothing more is due: after a user's delivery to an
    /// endpoint succeeds, their next one is sent in the same pass; after one
    /// fails, none of theirs to that endpoint is tried again in this pass.
    /// Then delivered events more than 30 days old leave the outbox
    /// (`GuestMode.pruneDeliveredWebhooks(now:limit:)`).
    /// `clock` gives the time of each attempt (the signature's and the
    /// outbox's); `retryingNow` ignores retry times; `progress` sees each
    /// attempt as it is settled.
    package func deliverDue(
        clock: () throws -> Date, retryingNow: Bool,
        progress: (WebhookDelivery, SettledDelivery, String?) -> Void = { _, _, _ in }
    ) throws -> WebhookDeliveryReport {
        var report = WebhookDeliveryReport()
        var blocked: Set<[String]> = []
        var unusable: [String: String] = [:]
        var keys: [String: [UInt8]] = [:]
        while true {
            let due = try engine.dueWebhookDeliveries(now: try clock(), retryingNow: retryingNow, skipping: blocked)
            if due.isEmpty { break }
            for delivery in due {
                let pair = [delivery.endpoint, delivery.userID]
                if unusable[delivery.endpoint] != nil {
                    blocked.insert(pair)
                    continue
                }
                let endpoint: WebhookEndpoint
                let destination: RemoteURL
                do {
                    endpoint = try engine.requireWebhookEndpoint(delivery.endpoint)
                    destination = try RemoteURL(endpoint.url, what: "the webhook endpoint '\(endpoint.name)' url")
                    if keys[endpoint.name] == nil { keys[endpoint.name] = try secrets.secret(of: endpoint) }
                } catch let error as GuestModeError {
                    unusable[delivery.endpoint] = error.message
                    report.skipped.append(.init(endpoint: delivery.endpoint, error: error.message))
                    blocked.insert(pair)
                    continue
                }
                let time = try clock()
                let body = Array(delivery.payload.utf8)
                let headers = [
                    ("Content-Type", "application/json"),
                    (
                        WebhookSignature.headerName,
                        WebhookSignature.header(secret: keys[endpoint.name]!, time: time, body: body)
                    ),
                    (Self.eventIdHeader, delivery.eventID),
                ]
                var status = 0
                let attempt: WebhookAttempt
                do {
                    let answer = try transport.sendWaiting("POST", to: destination, headers: headers, body: body)
                    status = answer.status
                    attempt = answer.isSuccess ? .delivered : .failed(Self.describe(answer))
                } catch let error as GuestModeError where error.code == .destinationUnavailable {
                    attempt = .failed(error.message)
                }
                let settled = try engine.settleWebhook(delivery, attempt: attempt, now: time)
                switch attempt {
                case .delivered:
                    report.delivered.append(
                        .init(
                            deliveryID: delivery.deliveryID, eventID: delivery.eventID, endpoint: delivery.endpoint,
                            type: delivery.type, userID: delivery.userID, status: status))
                    progress(delivery, settled, nil)
                case .failed(let reason):
                    blocked.insert(pair)
                    report.failed.append(
                        .init(
                            deliveryID: delivery.deliveryID, eventID: delivery.eventID, endpoint: delivery.endpoint,
                            type: delivery.type, userID: delivery.userID, error: reason, attempts: settled.attempts,
                            nextAttemptAt: settled.nextAttemptAt.map(Timestamp.format),
                            isHeld: settled.status == .held))
                    progress(delivery, settled, reason)
                }
            }
        }
        _ = try engine.pruneDeliveredWebhooks(now: try clock())
        for queue in try engine.webhookQueues() {
            report.pending += queue.pending
            report.held += queue.held
        }
        return report
    }

    /// Sends one `ping` event to `endpoint` now, outside the outbox.
    package func ping(endpoint name: String, now: Date) throws -> (event: String, answer: HTTPAnswer) {
        let endpoint = try engine.requireWebhookEndpoint(name)
        let destination = try RemoteURL(endpoint.url, what: "the webhook endpoint '\(endpoint.name)' url")
        let event = try engine.pingEvent(for: name, now: now)
        let body = Array(event.payload.utf8)
        let headers = [
            ("Content-Type", "application/json"),
            (
                WebhookSignature.headerName,
                WebhookSignature.header(secret: try secrets.secret(of: endpoint), time: now, body: body)
            ),
            (Self.eventIdHeader, event.id),
        ]
        return (event.id, try transport.sendWaiting("POST", to: destination, headers: headers, body: body))
    }

    /// An answer that is not 2xx, for the outbox's `last_error`: the status and
    /// the start of the body, on one line.
    static func describe(_ answer: HTTPAnswer) -> String {
        let text = answer.bodyText.prefix(200).map { $0.isNewline ? " " : $0 }
        let snippet = String(text).trimmingCharacters(in: .whitespaces)
        return "HTTP \(answer.status)" + (snippet.isEmpty ? "" : ": \(snippet)")
    }
}
