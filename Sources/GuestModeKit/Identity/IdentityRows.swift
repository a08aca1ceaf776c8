import Foundation

/// The primitive row operations of this area inside one transaction (see
/// `StoreTransaction`): they read and write rows and decide nothing.
public protocol IdentityRows {
    /// The user's identities, oldest link first (then by provider).
    func identities(of userID: String) throws -> [Identity]
}
