import Foundation

/// Merging a guest into an account and adopting ownerless data, each in one transaction.
/// Each method is one whole use case in one transaction.
public protocol TransferStore: Sendable {
}
