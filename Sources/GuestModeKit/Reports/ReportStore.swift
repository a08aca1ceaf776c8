import Foundation

/// Reports computed by the store.
/// Each method is one whole use case in one transaction.
public protocol ReportStore: Sendable {
}
