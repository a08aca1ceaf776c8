import Foundation

public struct MergeReport: Codable, Sendable {
    public var guest: String
    public var account: String
    public var policy: MergePolicy
    public var recordsMoved: Int
    public var activityMoved: Int
    public var conflicts: [RecordConflict]
    /// Caps re-checked after the merge: collections the account is now over.
    public var overCap: [CollectionLimit]
    public var isDryRun: Bool
    public var journalID: Int64?

    public init(
        guest: String, account: String, policy: MergePolicy, recordsMoved: Int, activityMoved: Int,
        conflicts: [RecordConflict], overCap: [CollectionLimit], isDryRun: Bool, journalID: Int64?
    ) {
        self.guest = guest
        self.account = account
        self.policy = policy
        self.recordsMoved = recordsMoved
        self.activityMoved = activityMoved
        self.conflicts = conflicts
        self.overCap = overCap
        self.isDryRun = isDryRun
        self.journalID = journalID
    }
}

public struct AdoptReport: Codable, Sendable {
    public struct Collision: Codable, Sendable, Equatable {
        public var collection: String
        public var key: String
        public var keyAfter: String

        public init(collection: String, key: String, keyAfter: String) {
            self.collection = collection
            self.key = key
            self.keyAfter = keyAfter
        }
    }

    public var user: String
    public var moved: [String: Int]
    /// Records left with the guest owner because the user already has their key.
    public var collisions: [Collision]
    /// True when the user had adopted ownerless records in an earlier run.
    /// Adoption is idempotent per record, so such a run still adopts the
    /// ownerless records that appeared since; a run that moves nothing
    /// changes nothing.
    public var wasAlreadyAdopted: Bool

    public init(user: String, moved: [String: Int], collisions: [Collision], wasAlreadyAdopted: Bool) {
        self.user = user
        self.moved = moved
        self.collisions = collisions
        self.wasAlreadyAdopted = wasAlreadyAdopted
    }
}

extension GuestMode {
    /// Folds a guest into an account in one transaction, for when linking
    /// failed because the identity already has an account. The guest is
    /// removed only once everything is in the account.
    public func merge(
        guest: String, into account: String, policy: MergePolicy, dryRun: Bool, now: Date
    ) throws -> MergeReport {
        try TextRule.check(["the guest's id": guest, "the account's id": account])
        return try store.mergeGuest(guest, into: account, policy: policy, dryRun: dryRun, profile: profile, now: now)
    }

    /// Gives a user the records written before any user existed (owned by the
    /// profile's guest owner). Idempotent per record: a later run adopts the
    /// ownerless records written since, nothing twice. Keys of collections with unique fields
    /// carry their owner as the first `/` segment and are rewritten; a key
    /// the user already has is reported and left where it was.
    public func adopt(user userID: String, now: Date) throws -> AdoptReport {
        try TextRule.check(userID, what: "the user id")
        return try store.adoptOwnerlessRecords(user: userID, profile: profile, now: now)
    }
}
