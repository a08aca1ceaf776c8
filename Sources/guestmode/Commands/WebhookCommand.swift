import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit
import GuestModeRemote

struct WebhookCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhook",
        abstract: "List, deliver, retry and test the webhooks the profile sends.",
        discussion: """
            Every change the profile's webhooks subscribe to writes its event into the webhook outbox in the \
            change's own transaction; 'guestmode serve' delivers them continuously, 'webhook deliver' once \
            (for cron). Each delivery is a signed POST (Guestmode-Signature); only a 2xx answer counts; a \
            failure is retried with backoff and held after the profile's max_attempts (default 8). \
            See guestmode-webhook(1).

            Examples:
              guestmode webhook list
              guestmode webhook events --status held
              guestmode webhook deliver --timeout 5
              guestmode webhook retry --all-held
              guestmode webhook test crm
            """,
        subcommands: [List.self, Events.self, Deliver.self, Retry.self, Test.self]
    )

    /// `--timeout`, shared by the commands that send.
    struct TimeoutOption: ParsableArguments {
        @Option(
            name: .long,
            help: ArgumentHelp(
                "Give each delivery this many seconds to be answered, connecting included (default 10).",
                valueName: "seconds"))
        var timeout: Double = 10

        func validate() throws {
            guard timeout.isFinite, timeout > 0, timeout <= 300 else {
                throw ValidationError("--timeout must be more than 0 and at most 300 seconds, not \(timeout)")
            }
        }

        func sender(for engine: GuestMode) -> WebhookSender {
            WebhookSender(
                engine: engine,
                transport: HTTPTransport(userAgent: "guestmode/\(GuestModeVersion.current)", timeout: timeout),
                secrets: WebhookSecrets(environment: ProcessInfo.processInfo.environment))
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List the profile's webhook endpoints with their deliveries by status.",
            discussion: "Example:\n  guestmode webhook list --json")

        @OptionGroup var global: GlobalOptions
        @OptionGroup var listing: ListingOptions

        func run() throws {
            let queues = try global.openEngine().webhookQueues()
            if queues.isEmpty && listing.resolved(global) == .table {
                global.output.note("the profile has no webhook endpoints")
                return
            }
            try listing.render(
                queues, header: ["NAME", "URL", "EVENTS", "PENDING", "HELD", "DELIVERED"],
                rows: queues.map {
                    [
                        $0.name, $0.url,
                        $0.events.count == WebhookEventType.allCases.count ? "*" : $0.events.joined(separator: ","),
                        "\($0.pending)", "\($0.held)",
                        "\($0.delivered)",
                    ]
                }, global: global)
        }
    }

    struct Events: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "events", abstract: "List deliveries in the webhook outbox, oldest first.",
            discussion:
                "Examples:\n  guestmode webhook events --user USER\n  guestmode webhook events --status held --json")

        @OptionGroup var global: GlobalOptions
        @OptionGroup var listing: ListingOptions

        @Option(name: .long, help: ArgumentHelp("Only this user's deliveries.", valueName: "user"))
        var user: String?

        @Option(name: .long, help: ArgumentHelp("Only deliveries pending, held or delivered.", valueName: "status"))
        var status: WebhookDeliveryStatus?

        func run() throws {
            let deliveries = try global.openEngine().webhookDeliveries(user: user, status: status)
            if deliveries.isEmpty && listing.resolved(global) == .table {
                global.output.note("no webhook deliveries")
                return
            }
            try listing.render(
                deliveries,
                header: [
                    "DELIVERY_ID", "EVENT_ID", "ENDPOINT", "TYPE", "USER_ID", "CREATED_AT", "STATUS", "ATTEMPTS",
                    "NEXT_ATTEMPT_AT", "LAST_ERROR",
                ],
                rows: deliveries.map {
                    [
                        "\($0.deliveryID)", $0.eventID, $0.endpoint, $0.type, $0.userID, Timestamp.format($0.createdAt),
                        $0.status.rawValue, "\($0.attempts)", $0.nextAttemptAt.map(Timestamp.format) ?? "",
                        $0.lastError ?? "",
                    ]
                }, global: global)
        }
    }

    struct Deliver: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "deliver",
            abstract: "Send every due webhook delivery once, then stop.",
            discussion: """
                Deliveries of one user to one endpoint go out oldest first; after a failure the user's later \
                ones wait. A delivery leaves the queue only on a 2xx answer; when something could not be \
                delivered (a failure, a held delivery, an unreadable secret) it stays and the command exits 75. \
                Progress goes to standard error.

                Example (cron, every minute):
                  * * * * * guestmode --store /srv/app.sqlite webhook deliver --quiet
                """)

        @OptionGroup var global: GlobalOptions
        @OptionGroup var timeout: TimeoutOption

        @Flag(name: .long, help: "Try every pending delivery now, even those whose next retry time has not come.")
        var retryNow = false

        func run() throws {
            let engine = try global.openEngine()
            let output = global.output
            let progress = Progress("webhook deliver", unit: "deliveries", global: global)
            var attempts = 0
            let report = try timeout.sender(for: engine).deliverDue(
                clock: { try global.currentTime() }, retryingNow: retryNow,
                progress: { delivery, settled, failure in
                    attempts += 1
                    progress.update(done: attempts, total: nil)
                    if let failure {
                        output.detail(
                            "delivery \(delivery.deliveryID) to \(delivery.endpoint) failed (attempt \(settled.attempts)): \(failure)"
                        )
                    }
                })
            progress.finish()
            try output.result(report) {
                for item in report.delivered {
                    output.line(
                        "delivered \(item.eventID) \(item.type) of \(item.userID) to \(item.endpoint) (HTTP \(item.status))"
                    )
                }
                for item in report.failed {
                    let next = item.isHeld ? "held" : "next at \(item.nextAttemptAt ?? "now")"
                    output.line(
                        "failed \(item.eventID) \(item.type) of \(item.userID) to \(item.endpoint): \(item.error) (attempt \(item.attempts); \(next))"
                    )
                }
                for item in report.skipped { output.line("skipped \(item.endpoint): \(item.error)") }
                if report.delivered.isEmpty && report.failed.isEmpty && report.skipped.isEmpty {
                    output.note("nothing to deliver (\(report.pending) pending, \(report.held) held)")
                }
            }
            if report.needsRetry {
                let undelivered = report.failed.count + report.skipped.count
                throw GuestModeError(
                    .webhooksUndelivered,
                    "\(undelivered) webhook \(undelivered == 1 ? "delivery" : "deliveries or endpoints") failed in this run and \(report.held) \(report.held == 1 ? "is" : "are") held; nothing was lost: deliver again later, and retry held ones once their endpoint works"
                )
            }
        }
    }

    struct Retry: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "retry",
            abstract: "Put held deliveries back in the queue, to be sent at the next delivery.",
            discussion: "Examples:\n  guestmode webhook retry 42\n  guestmode webhook retry --all-held")

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The delivery id (webhook events lists them).") var id: Int64?

        @Flag(name: .long, help: "Retry every held delivery.") var allHeld = false

        func validate() throws {
            if (id == nil) == !allHeld { throw ValidationError("give a delivery id or --all-held, one of the two") }
        }

        func run() throws {
            let retried = try global.openEngine().retryWebhooks(id: allHeld ? nil : id)
            let output = global.output
            try output.result(WebhookRetryReport(retried: retried)) {
                for delivery in retried {
                    output.line(
                        "queued \(delivery.deliveryID) (\(delivery.type) of \(delivery.userID) to \(delivery.endpoint))"
                    )
                }
                if retried.isEmpty { output.note("no held deliveries") }
            }
        }
    }

    struct Test: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "test",
            abstract: "Send a signed ping event to one endpoint now, outside the queue.",
            discussion: """
                Exits 0 on a 2xx answer, 75 otherwise (no answer, or another status).

                Example:
                  guestmode webhook test crm --timeout 3
                """)

        @OptionGroup var global: GlobalOptions
        @OptionGroup var timeout: TimeoutOption

        @Argument(help: "The endpoint, as the profile names it.") var endpoint: String

        func run() throws {
            let engine = try global.openEngine()
            let sent = try timeout.sender(for: engine).ping(endpoint: endpoint, now: try global.currentTime())
            let result = WebhookTestReport(
                endpoint: endpoint, eventID: sent.event, status: sent.answer.status, isDelivered: sent.answer.isSuccess)
            try global.output.result(result) {
                global.output.line("ping \(sent.event) to \(endpoint): HTTP \(sent.answer.status)")
            }
            guard sent.answer.isSuccess else {
                throw GuestModeError(
                    .webhooksUndelivered,
                    "webhook endpoint '\(endpoint)' answered the ping with HTTP \(sent.answer.status), not 2xx")
            }
        }
    }
}

extension WebhookDeliveryStatus: ArgumentChoice {}

/// `webhook retry --json`.
struct WebhookRetryReport: Encodable {
    var retried: [WebhookDelivery]
}

/// `webhook test --json`.
struct WebhookTestReport: Encodable {
    var endpoint: String
    var eventID: String
    var status: Int
    var isDelivered: Bool
}
