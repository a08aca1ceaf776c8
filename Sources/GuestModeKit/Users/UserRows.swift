import Foundation

/// The user rows of one transaction (see `StoreTransaction`).
public protocol UserRows {
    /// The user, or nil when there is none. With `locking`, the row stays
    /// locked until the transaction ends, so every decision about one user
    /// (a cap, a meter, a key, a link) is taken by one writer at a time.
    func user(_ id: String, locking: Bool) throws -> User?

    /// Sets the user's last-seen time to `time` unless the stored one is
    /// later: replaying old activity never makes a user look less recent.
    func advanceLastSeen(of userID: String, to time: Date) throws
}

extension UserRows {
    /// The user; throws `user_not_found` when there is none.
    public func requireUser(_ id: String, locking: Bool = false) throws -> User {
        guard let user = try user(id, locking: locking) else {
            throw GuestModeError.notFound("no user '\(id)' in this store", code: .userNotFound)
        }
        return user
    }
}
