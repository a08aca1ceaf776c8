import Foundation

/// Appending events, one or a batch, and reading counters.
/// Each method is one whole use case in one transaction.
public protocol EventStore: Sendable {
}
