import Foundation

/// Granting and revoking plans; reading grants.
/// Each method is one whole use case in one transaction.
public protocol PlanStore: Sendable {
}
