import Foundation

/// What a merge of a guest into an account did, or with `isDryRun` would do.
public struct MergeReport: Codable, Sendable {
    /// The guest's id.
    public var guest: String
    /// The account's id.
    public var account: String
    /// How records under the same key were settled.
    public var policy: MergePolicy
    /// Records moved into the account.
    public var recordsMoved: Int
    /// Events, counters and other activity rows moved.
    public var activityMoved: Int
    /// Records both users had under one key, and how each was settled.
    public var conflicts: [RecordConflict]
    /// Caps re-checked after the merge: collections the account is now over.
    public var overCap: [CollectionLimit]
    /// True when nothing was written: the report says what a merge would do.
    public var isDryRun: Bool
    /// The journal of the merge; nil for a dry run.
    public var journalID: Int64?

    package init(
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

/// What adopting ownerless records did.
public struct AdoptReport: Codable, Sendable {
    /// An ownerless record the user could not adopt because they already hold its key.
    public struct Collision: Codable, Sendable, Equatable {
        /// The record's collection.
        public var collection: String
        /// The record's key while ownerless.
        public var key: String
        /// The key it would have had as the user's.
        public var keyAfter: String

        package init(collection: String, key: String, keyAfter: String) {
            self.collection = collection
            self.key = key
            self.keyAfter = keyAfter
        }
    }

    /// The adopting user's id.
    public var user: String
    /// Records adopted, by collection.
    public var moved: [String: Int]
    /// Records left with the guest owner because the user already has their key.
    public var collisions: [Collision]
    /// True when the user had adopted ownerless records in an earlier run.
    /// Adoption is idempotent per record, so such a run still adopts the
    /// ownerless records that appeared since; a run that moves nothing
    /// changes nothing.
    public var wasAlreadyAdopted: Bool

    package init(user: String, moved: [String: Int], collisions: [Collision], wasAlreadyAdopted: Bool) {
        self.user = user
        self.moved = moved
        self.collisions = collisions
        self.wasAlreadyAdopted = wasAlreadyAdopted
    }
}

extension GuestMode {
    /// Folds a guest into an account in one durable transaction, for when
    /// linking failed because the identity already has an account: activity,
    /// every record (conflicts settled by `policy`, losers to the account's
    /// conflict archive), then the guest itself, under a `merge` journal. The
    /// guest is removed only once everything is in the account. With `dryRun`
    /// the same report is computed and nothing changes. The report lists the
    /// capped collections the account is over afterwards.
    ///
    /// ```swift
    /// let preview = try engine.merge(
    ///     guest: guest.id, into: account.id, policy: .union, dryRun: true, now: now)
    /// // preview.recordsMoved, preview.conflicts; run again with dryRun: false
    /// ```
    public func merge(
        guest: String, into account: String, policy: MergePolicy, dryRun: Bool, now: Date
    ) throws -> MergeReport {
        try TextRule.check(["the guest's id": guest, "the account's id": account])
        if dryRun {
            // A read-only snapshot: the report is what a merge would do now, and nothing is locked or written.
            return try store.read { transaction in
                try plannedMerge(of: guest, into: account, policy: policy, now: now, in: transaction)
            }
        }
        return try store.write(durable: true) { transaction in
            // Both users stay locked until the merge commits: a concurrent merge, migration step or
            // write to either waits, and then sees the guest gone.
            let pair = try transaction.transferPair(guest: guest, account: account, locking: true)
            let journalID = try transaction.createJournal(
                kind: .merge, source: guest, target: account, status: .done, backupPath: nil, startedAt: now,
                finishedAt: now, steps: [], stepStatus: .done)
            let transfer = Transfer(
                transaction: transaction, profile: profile, guest: guest, account: account, now: now,
                journalID: journalID)
            let activity = try transfer.moveActivity()
            let records = try transfer.moveRecords(nil, policy: policy)
            _ = try transfer.removeGuest()
            try transaction.raiseWebhook(
                .userMerged, user: guest,
                data: [
                    "account_user_id": .string(account), "journal_id": .number(String(journalID)),
                    "records_moved": .number(String(records.moved)),
                    "conflicts": .number(String(records.conflicts.count)),
                ], at: now, profile: profile)
            let level = try transaction.tier(of: pair.account, profile: profile, now: now)
            let overCap = try profile.collections.map {
                try transaction.collectionLimit(of: pair.account, collection: $0.name, tier: level, profile: profile)
            }
            .filter(\.isOverCap)
            return MergeReport(
                guest: guest, account: account, policy: policy, recordsMoved: records.moved, activityMoved: activity,
                conflicts: records.conflicts, overCap: overCap, isDryRun: false, journalID: journalID)
        }
    }

    /// What `merge` would report now, counted without writing: the account's
    /// use of each collection grows by the guest's records, less those that
    /// a conflict settles into one.
    private func plannedMerge(
        of guest: String, into account: String, policy: MergePolicy, now: Date, in transaction: any StoreTransaction
    ) throws -> MergeReport {
        let pair = try transaction.transferPair(guest: guest, account: account, locking: false)
        let transfer = Transfer(transaction: transaction, profile: profile, guest: guest, account: account, now: now)
        let conflicts = try transfer.conflicts(in: nil, policy: policy)
        var overCap: [CollectionLimit] = []
        let level = try transaction.tier(of: pair.account, profile: profile, now: now)
        for collection in profile.collections {
            var limit = try transaction.collectionLimit(
                of: pair.account, collection: collection.name, tier: level, profile: profile)
            let incoming = try transfer.recordCount([collection.name])
            let merged = conflicts.filter { $0.collection == collection.name && $0.resolution != .keptBoth }.count
            limit.used = (limit.used ?? 0) + incoming - merged
            if limit.isOverCap { overCap.append(limit) }
        }
        return MergeReport(
            guest: guest, account: account, policy: policy,
            // As the merge counts them: a guest record that loses to the account's is archived, not moved.
            recordsMoved: try transfer.recordCount(nil) - conflicts.filter { $0.resolution == .keptAccount }.count,
            activityMoved: try transfer.activityCount(), conflicts: conflicts, overCap: overCap, isDryRun: true,
            journalID: nil)
    }

    /// Gives a user the records written before any user existed (owned by the
    /// profile's guest owner), in one durable transaction. Idempotent per
    /// record: a later run adopts the ownerless records written since, nothing
    /// twice, and a run that moves nothing writes nothing at all. Keys of
    /// collections with unique fields carry their owner as the first `/`
    /// segment and are rewritten (`Profile.adoptedKey`); a key the user
    /// already has is reported and left where it was. The user's `adopted`
    /// flag is set by the first run that moves records and reported as
    /// `wasAlreadyAdopted`; it never blocks. Queues a backup of the user when
    /// records moved.
    ///
    /// ```swift
    /// let report = try engine.adopt(user: account.id, now: now)
    /// // report.moved["recipes"]: ownerless records now the account's
    /// ```
    public func adopt(user userID: String, now: Date) throws -> AdoptReport {
        try TextRule.check(userID, what: "the user id")
        let owner = profile.guestOwner
        return try store.write(durable: true) { transaction in
            // The user's lock makes a second adoption by the same user wait and then see what is left.
            _ = try transaction.requireUser(userID, locking: true)
            let adoptedBefore = try transaction.hasFlag(.adopted, of: userID)
            var moved: [String: Int] = [:]
            var collisions: [AdoptReport.Collision] = []
            // The ownerless records are locked too: another user adopting at the same time waits, then
            // finds the records that are no longer the guest owner's gone, and counts only what it moved.
            for record in try transaction.recordKeys(owner: owner, locking: true) {
                let keyAfter = profile.adoptedKey(record.key, collection: record.collection, user: userID)
                if try transaction.recordExists(owner: userID, collection: record.collection, key: keyAfter) {
                    collisions.append(
                        AdoptReport.Collision(collection: record.collection, key: record.key, keyAfter: keyAfter))
                    continue
                }
                if try transaction.moveRecord(
                    owner: owner, collection: record.collection, key: record.key, to: userID, key: keyAfter)
                {
                    moved[record.collection, default: 0] += 1
                }
            }
            if !moved.isEmpty {
                if !adoptedBefore { try transaction.setFlag(.adopted, of: userID, at: now) }
                try transaction.noteChange(of: userID, profile: profile, now: now)
            }
            return AdoptReport(user: userID, moved: moved, collisions: collisions, wasAlreadyAdopted: adoptedBefore)
        }
    }
}
