import Foundation

/// Per-user JSON records under the tier's caps.
/// Each method is one whole use case in one transaction.
public protocol RecordStore: Sendable {
}
