import Foundation

/// The user and credential rows of one transaction (see `StoreTransaction`).
package protocol UserRows {
    /// The user, or nil when there is none. With `locking`, the row stays
    /// locked until the transaction ends, so every decision about one user
    /// (a cap, a meter, a key, a link) is taken by one writer at a time.
    func user(_ id: String, locking: Bool) throws -> User?

    /// Sets the user's last-seen time to `time` unless the stored one is
    /// later: replaying old activity never makes a user look less recent.
    func advanceLastSeen(of userID: String, to time: Date) throws

    /// Inserts a new user row, as given.
    func insertUser(_ user: User) throws

    /// Those of `ids` that are users, by id; with `locking`, each row stays locked as `user(_:locking:)`
    /// locks it. One question for many users: `user import` asks it once a chunk of accounts.
    func users(_ ids: [String], locking: Bool) throws -> [String: User]

    /// Inserts new user rows, as given.
    func insertUsers(_ users: [User]) throws

    /// The oldest user (by creation time, then id byte by byte) whose device
    /// is `device`, or nil when there is none. With `locking`, transactions
    /// asking for the same device wait for each other until the end of the
    /// transaction, so a device found unknown stays unknown until this
    /// transaction has created its user.
    func oldestUser(device: String, locking: Bool) throws -> User?

    /// Users in creation order (then id, byte by byte), each with how many
    /// identities and records it holds. A nil condition matches everyone;
    /// `lastSeenBefore` keeps users whose last activity is strictly earlier.
    func userSummaries(state: UserState?, lastSeenBefore: Date?) throws -> [UserSummary]

    /// The users `lookup` names, in creation order (then id, byte by byte), each with how many
    /// identities and records it holds, as `userSummaries(state:lastSeenBefore:)` gives them.
    /// `.identity` matches the identity's provider and subject exactly; `.email` matches
    /// identities whose address (their email, or, for an identity of the `email` provider that
    /// carries none, its subject), ASCII letters folded to lower case, equals the address folded
    /// the same way; `.device` matches the users' device exactly. Each is answered from an index:
    /// the identities' key, `identities_email`, `users_device`.
    func userSummaries(_ lookup: UserLookup) throws -> [UserSummary]

    /// Stores anonymous credentials unless their username is taken by any
    /// user: then it writes nothing and returns false. PostgreSQL waits for
    /// a transaction storing the same username and returns false if that
    /// one commits, so one username is stored once however many race for it.
    func insertCredentials(_ credentials: StoredCredentials) throws -> Bool

    /// The credentials stored under `username`, or nil.
    func credentials(username: String) throws -> StoredCredentials?

    /// The user's anonymous credentials, or nil when it keeps none.
    func credentials(of userID: String) throws -> StoredCredentials?

    /// Replaces the hash of the user's anonymous credentials.
    func setSecretHash(of userID: String, to secretHash: String) throws

    /// Deletes the user and everything it owns (identities, credentials,
    /// events, counters, records, usage, plans, prompts, queued backups),
    /// nothing of any other user.
    func deleteUser(_ id: String) throws

    /// Hands over, in batches, at most `limit` users in `state` last seen
    /// strictly before `cutoff` whose ids sort after `idAfter` (all when it
    /// is nil), in the order of their ids (the store's order of its key),
    /// each with its record count and every plan grant it ever held. With
    /// `locking`, each batch's rows are locked as they are read and stay
    /// locked until the transaction ends. Streamed: no batch and no query
    /// grows with the number of users.
    func inactiveUsers(
        state: UserState, lastSeenBefore cutoff: Date, idAfter: String?, limit: Int, locking: Bool,
        _ body: ([InactiveUser]) throws -> Void
    ) throws

    /// Deletes users and everything they own, as `deleteUser` does, set-based:
    /// `listing` hands the ids over in batches through the function it is
    /// given, then each table is cleared with one statement.
    func deleteUsers(listing: (_ add: ([String]) throws -> Void) throws -> Void) throws
}

extension UserRows {
    /// The user; throws `user_not_found` when there is none.
    package func requireUser(_ id: String, locking: Bool = false) throws -> User {
        guard let user = try user(id, locking: locking) else {
            throw GuestModeError(.userNotFound, "no user '\(id)' in this store")
        }
        return user
    }
}

/// What a purge decides a candidate on: one user's last activity, records
/// and plan grants, as `UserRows.inactiveUsers` reads them.
package struct InactiveUser: Sendable, Equatable {
    package var id: String
    package var state: UserState
    package var lastSeenAt: Date
    package var records: Int
    /// Every grant the user ever held, oldest first.
    package var grants: [PlanGrant]

    package init(id: String, state: UserState, lastSeenAt: Date, records: Int, grants: [PlanGrant]) {
        self.id = id
        self.state = state
        self.lastSeenAt = lastSeenAt
        self.records = records
        self.grants = grants
    }
}

/// Anonymous credentials as a store keeps them: never the secret itself.
package struct StoredCredentials: Sendable, Equatable {
    package var userID: String
    package var username: String
    /// A `SecretHash` string, which names its scheme.
    package var secretHash: String
    package var createdAt: Date

    package init(userID: String, username: String, secretHash: String, createdAt: Date) {
        self.userID = userID
        self.username = username
        self.secretHash = secretHash
        self.createdAt = createdAt
    }
}

// A store whose questions cost no round trip (SQLite, in the process) answers the many-row questions one row
// at a time; PostgreSQL answers each in one statement.
extension UserRows {
    package func users(_ ids: [String], locking: Bool) throws -> [String: User] {
        var users: [String: User] = [:]
        for id in ids where users[id] == nil {
            if let user = try user(id, locking: locking) { users[id] = user }
        }
        return users
    }

    package func insertUsers(_ users: [User]) throws {
        for user in users { try insertUser(user) }
    }
}
