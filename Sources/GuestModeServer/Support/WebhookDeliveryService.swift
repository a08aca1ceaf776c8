import Foundation
import GuestModeKit
import GuestModeRemote
import Logging
import NIOPosix
import ServiceLifecycle

/// Delivers the webhook outbox while the server runs: a pass every
/// `interval`, on a thread of its own (a delivery waits on the network up to
/// its timeout, which must not hold a thread requests need). Shutdown
/// cancels the wait between passes; a pass in progress finishes its
/// delivery, and anything not settled is sent again by the next run.
struct WebhookDeliveryService: Service {
    let sender: WebhookSender
    let clock: @Sendable () throws -> Date
    let interval: Duration
    let logger: Logger

    func run() async throws {
        let thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        let sender = sender
        let clock = clock
        let logger = logger
        let interval = interval
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                do {
                    let report = try await thread.runIfActive {
                        try sender.deliverDue(clock: clock, retryingNow: false)
                    }
                    for failed in report.failed {
                        logger.warning(
                            "webhook delivery \(failed.deliveryID) to \(failed.endpoint) failed (attempt \(failed.attempts)): \(failed.error)"
                        )
                    }
                    for skipped in report.skipped {
                        logger.warning("webhooks to \(skipped.endpoint) skipped: \(skipped.error)")
                    }
                } catch {
                    logger.error("webhook delivery stopped a pass: \(error)")
                }
                try await Task.sleep(for: interval)
            }
        }
        try? await thread.shutdownGracefully()
    }
}
