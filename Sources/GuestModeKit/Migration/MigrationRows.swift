import Foundation

/// The rows a transfer, a migration journal, an adoption and the conflict
/// archive read and write inside one transaction (see `StoreTransaction`).
/// Moves are set-based (one statement per table or per list of
/// collections) so that moving a guest with a million records costs a few
/// statements; which rows move, and how a clash is settled, is the engine's
/// choice (`Transfer`).
package protocol MigrationRows {
    // MARK: Activity

    /// How many rows of `table` belong to the user.
    func countActivity(in table: ActivityTable, of userID: String) throws -> Int

    /// Gives `target` every row of `source` in `table` and returns how many
    /// moved. The caller settles unique keys both hold first: a clash fails.
    func reassignActivity(in table: ActivityTable, from source: String, to target: String) throws -> Int

    /// Copies to `target` the rows of `source` in `table` whose unique key
    /// (a flag, an experiment, a meter warning) `target` does not hold yet,
    /// and returns how many were copied; `source`'s rows stay.
    func copyActivity(in table: ActivityTable, from source: String, to target: String) throws -> Int

    /// Deletes every row of the user in `table`.
    func deleteActivity(in table: ActivityTable, of userID: String) throws

    /// Appends `suffix` to the idempotency key of each row of `source` in
    /// `table` whose key `target` also used (for meter usage: on the same
    /// meter). Only events, meter usage and meter grants carry idempotency
    /// keys.
    func suffixSharedIdempotencyKeys(
        in table: ActivityTable, of source: String, sharedWith target: String, suffix: String
    ) throws

    /// Adds each counter total of `source` to `target`'s counter of the same
    /// action, creating it where `target` has none, and returns how many of
    /// `source`'s counters were added; `source`'s rows stay. A total that
    /// would pass `Bounds.maximumCounterTotal`, or a stored total that is
    /// not a count, throws `count_overflow` and changes nothing.
    func addCounters(of source: String, to target: String) throws -> Int

    /// Sets the user's creation time to `time` unless the stored one is
    /// earlier: a person is first seen when their earliest identity was.
    func backdateCreation(of userID: String, to time: Date) throws

    /// Deletes the user with every row it owns: records, archived conflicts,
    /// a queued backup, flags, and (through the schema) its identities,
    /// credentials and activity.
    func removeUser(_ userID: String) throws

    // MARK: Records

    /// How many records `owner` holds in `collections`; in every
    /// collection when `collections` is nil.
    func countRecords(owner: String, in collections: [String]?) throws -> Int

    /// The keys `guest` and `account` both hold in `collections` (every
    /// collection when nil), with both records, ordered by collection and
    /// key in byte order.
    func sharedRecordKeys(
        guest: String, account: String, in collections: [String]?
    ) throws -> [SharedRecordKey]

    /// Gives `target` every record `source` holds in `collections` (every
    /// collection when nil) and returns how many moved. The caller settles
    /// the keys both hold first: a clash fails.
    func reassignRecords(from source: String, to target: String, in collections: [String]?) throws -> Int

    /// Moves the record under `key` to `newOwner` and `newKey`; false when
    /// `owner` no longer holds it.
    func moveRecord(
        owner: String, collection: String, key: String, to newOwner: String, key newKey: String
    ) throws -> Bool

    /// Every key `owner` holds, ordered by collection and key in byte order.
    /// With `locking`, the records stay locked until the transaction ends
    /// (the guest owner is not a user row that could be locked instead).
    func recordKeys(owner: String, locking: Bool) throws -> [RecordKey]

    /// Whether the user holds `flag`.
    func hasFlag(_ flag: UserFlag, of userID: String) throws -> Bool

    /// Sets `flag` on the user at `time`; a flag already set keeps its time.
    func setFlag(_ flag: UserFlag, of userID: String, at time: Date) throws

    // MARK: Conflict archive

    /// Copies the record under `key` of `owner` into the conflict archive of
    /// `archiveOwner`, with the journal that settled it and why it lost.
    func archiveRecord(
        owner: String, collection: String, key: String, for archiveOwner: String, journalID: Int64?, reason: String,
        at time: Date
    ) throws

    /// The archived losers of `owner`, or of every user when nil, ordered by
    /// archive time (in byte order) and id.
    func archivedConflicts(owner: String?) throws -> [ArchivedConflict]

    /// One archived loser, or nil. With `locking`, the row stays locked
    /// until the transaction ends.
    func archivedConflict(id: Int64, locking: Bool) throws -> ArchivedConflict?

    /// Deletes one archived loser.
    func deleteArchivedConflict(id: Int64) throws

    // MARK: Journals

    /// The id of the newest journal of `kind` from `source` into `target`
    /// whose status is not `status`, or nil.
    func newestJournal(
        kind: JournalKind, from source: String, into target: String, statusOtherThan status: JournalStatus
    ) throws -> Int64?

    /// Writes a journal with one entry of `stepStatus` per name of `steps`,
    /// in order (positions from 1), and returns its id.
    func createJournal(
        kind: JournalKind, source: String, target: String, status: JournalStatus, backupPath: String?,
        startedAt: Date, finishedAt: Date?, steps: [String], stepStatus: JournalStepStatus
    ) throws -> Int64

    /// One journal with its steps, or nil. With `locking`, the journal row
    /// stays locked until the transaction ends and the steps are read after
    /// the lock is held.
    func migrationJournal(id: Int64, locking: Bool) throws -> MigrationJournal?

    /// Journals of every migration and merge, oldest first, or of those
    /// where `user` is the source or the target.
    func migrationJournals(involving user: String?) throws -> [MigrationJournal]

    /// Sets the journal's status and its error (nil clears it).
    func setJournalStatus(_ id: Int64, to status: JournalStatus, error: String?) throws

    /// Sets the time the journal finished.
    func setJournalFinishTime(_ id: Int64, to time: Date) throws

    /// Sets the status of the journal's step at `position`, with the rows
    /// it moved and the time it finished.
    func setJournalStep(journalID: Int64, position: Int, to status: JournalStepStatus, rows: Int, at time: Date) throws

    /// Adds one to the journal's count of resumes (`report migrations`).
    func countJournalResume(_ id: Int64) throws

    /// Adds one to the count of failures of the journal's step at
    /// `position` (`report migrations`).
    func countStepFailure(journalID: Int64, position: Int) throws
}

/// Tables of what a user did rather than what it stored: the rows a
/// transfer moves as the user's activity.
package enum ActivityTable: CaseIterable, Sendable {
    /// Tracked events, each with an optional idempotency key.
    case events
    /// One total per action.
    case counters
    /// Metered usage, each with an optional idempotency key per meter.
    case meterUsage
    /// Meter warnings already given, one per meter, period and threshold.
    case meterWarnings
    /// Grants of extra allowance on a meter, each with an optional
    /// idempotency key per user.
    case meterGrants
    /// Plan grants.
    case plans
    /// Prompt outcomes (shown, dismissed, …).
    case promptOutcomes
    /// The variant of each experiment the user was given.
    case experimentAssignments
    /// Named flags with the time each was set.
    case flags
    /// The store subscriptions the user holds (whose a later notification is).
    case storePurchases
}

/// A record's place: its collection and key.
package struct RecordKey: Sendable, Hashable {
    /// The record's collection.
    package var collection: String
    /// The record's key in its collection.
    package var key: String

    package init(collection: String, key: String) {
        self.collection = collection
        self.key = key
    }
}

/// A key two users both hold, with each one's record.
package struct SharedRecordKey: Sendable, Equatable {
    /// The collection both records are in.
    package var collection: String
    /// The key both users hold.
    package var key: String
    /// The guest's record under the key.
    package var guest: RecordVersion
    /// The account's record under the key.
    package var account: RecordVersion

    package init(collection: String, key: String, guest: RecordVersion, account: RecordVersion) {
        self.collection = collection
        self.key = key
        self.guest = guest
        self.account = account
    }
}

/// A named mark on a user that the engine sets and reads (prompt flags,
/// which the profile names, are not among them).
package enum UserFlag: String, Sendable, CaseIterable {
    /// The user adopted ownerless records (`GuestMode.adopt`); a second
    /// adoption reports it as already adopted.
    case adopted
}
