import Foundation

/// The outbox of queued backups.
/// Each method is one whole use case in one transaction.
public protocol OutboxStore: Sendable {
}
