import Foundation

/// Linking and unlinking identities, with the upgrade lock and credentials.
/// Each method is one whole use case in one transaction.
public protocol IdentityStore: Sendable {
}
