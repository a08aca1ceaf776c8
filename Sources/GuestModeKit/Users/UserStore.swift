import Foundation

/// Creating, finding, listing, deleting and purging users.
/// Each method is one whole use case in one transaction.
public protocol UserStore: Sendable {
}
