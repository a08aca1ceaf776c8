import Foundation

/// The primitive row operations of this area inside one transaction (see
/// `StoreTransaction`): they read and write rows and decide nothing.
public protocol ProfileRows {}
