import Foundation

/// Creating, finding, listing, deleting and purging users, and the legacy
/// anonymous credentials a guest may keep.
///
/// Each method is one whole use case in one transaction, so a failure leaves
/// the store as it was. A missing user is reported as a `GuestModeError` of
/// kind `.notFound` with code `user_not_found` by every method that names one.
public protocol UserStore: Sendable {
    /// Inserts a new user and, when given, its anonymous credentials.
    ///
    /// The secret is hashed by the engine before this call (hashing is slow
    /// on purpose and must not hold a write transaction open). A username
    /// already in use by any user is refused as a conflict with code
    /// `username_taken`, and then no user is created.
    func createUser(_ user: User, credentials: StoredCredentials?) throws

    /// Like `createUser`, but when `user.device` is set and a user with that
    /// device exists, that user (the oldest, if several) is returned with
    /// `created` false and nothing is written; a device id survives a
    /// reinstall, so it names the same guest. Concurrent calls with one
    /// device create one user.
    func createUserUnlessDeviceKnown(
        _ user: User, credentials: StoredCredentials?
    ) throws -> (user: User, created: Bool)

    /// The user with this id; throws `user_not_found`.
    func user(id: String) throws -> User

    /// Users in creation order, with how many identities and records each
    /// holds. Either condition may be nil; `lastSeenBefore` keeps users whose
    /// last activity is strictly earlier.
    func users(state: UserState?, lastSeenBefore: Date?) throws -> [UserSummary]

    /// What `user show` reports about one user that this area keeps, read in
    /// one transaction so its parts agree; throws `user_not_found`.
    func userOverview(id: String) throws -> UserOverview

    /// Deletes the user and everything it owns (identities, credentials,
    /// events, counters, records, usage, plans, prompts, queued backups) and
    /// nothing of any other user; throws `user_not_found`.
    func deleteUser(id: String) throws

    /// Finds anonymous users last seen before `policy.cutoff`, asks the
    /// policy which to delete, and unless `isDryRun` deletes them as
    /// `deleteUser` would, all in one transaction so nobody becomes active
    /// (or buys a plan) between the decision and the deletion. Both lists are
    /// ordered by last activity, oldest first.
    ///
    /// Set-based and streamed: the decisions go to a temporary table, each
    /// table is cleared with one statement, and every candidate is handed to
    /// `report` (kept ones first, then purged ones, each list in that order)
    /// instead of being held in memory, so memory stays flat at any size.
    func purgeUsers(
        under policy: PurgePolicy, isDryRun: Bool, report: (_ candidate: PurgeCandidate, _ purged: Bool) throws -> Void
    ) throws -> PurgeTally

    /// The stored credentials for an anonymous username, or nil when no user
    /// keeps that username.
    func anonymousCredentials(username: String) throws -> StoredCredentials?

    /// Records a successful verification of a legacy secret: moves the
    /// user's last-seen time forward to `now`, and when `upgradedHash` is
    /// given replaces the stored hash with it, but only if the stored hash is
    /// still `verifiedHash` (a concurrent change wins). Returns the user, or
    /// nil when the credentials are gone (the user linked or was deleted
    /// meanwhile) and nothing was changed.
    func recordAnonymousSignIn(username: String, verifiedHash: String, upgradedHash: String?, now: Date) throws -> User?
}

/// Anonymous credentials as a store keeps them: never the secret itself.
public struct StoredCredentials: Sendable, Equatable {
    public var userID: String
    public var username: String
    /// A `SecretHash` string, which names its scheme.
    public var secretHash: String
    public var createdAt: Date

    public init(userID: String, username: String, secretHash: String, createdAt: Date) {
        self.userID = userID
        self.username = username
        self.secretHash = secretHash
        self.createdAt = createdAt
    }
}

/// One user's state, identities, counters, record counts and plan grants,
/// read together.
public struct UserOverview: Sendable, Equatable {
    public var user: User
    public var identities: [Identity]
    public var hasAnonymousCredentials: Bool
    public var counters: [String: Int]
    /// Records per collection; collections without records are absent.
    public var records: [String: Int]
    /// Every grant the user ever held, oldest first.
    public var grants: [PlanGrant]

    public init(
        user: User, identities: [Identity], hasAnonymousCredentials: Bool, counters: [String: Int],
        records: [String: Int], grants: [PlanGrant]
    ) {
        self.user = user
        self.identities = identities
        self.hasAnonymousCredentials = hasAnonymousCredentials
        self.counters = counters
        self.records = records
        self.grants = grants
    }
}

/// What a purge removed (or, in a dry run, would remove) and what it kept.
public struct PurgeSelection: Sendable, Equatable {
    public var purged: [PurgeCandidate]
    public var kept: [PurgeCandidate]

    public init(purged: [PurgeCandidate], kept: [PurgeCandidate]) {
        self.purged = purged
        self.kept = kept
    }
}

/// How many candidates a purge removed (or would remove) and kept.
public struct PurgeTally: Sendable, Equatable {
    public var purged: Int
    public var kept: Int

    public init(purged: Int, kept: Int) {
        self.purged = purged
        self.kept = kept
    }
}

extension UserStore {
    /// The streamed purge, collected into lists (for tests and small stores).
    public func purgeUsers(under policy: PurgePolicy, isDryRun: Bool) throws -> PurgeSelection {
        var selection = PurgeSelection(purged: [], kept: [])
        _ = try purgeUsers(under: policy, isDryRun: isDryRun) { candidate, purged in
            if purged { selection.purged.append(candidate) } else { selection.kept.append(candidate) }
        }
        return selection
    }
}
