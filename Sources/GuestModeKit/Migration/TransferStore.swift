import Foundation

/// Moving one user's data into another's: checking, previewing, merging,
/// and adopting records written before any user existed. Each method is one
/// whole use case in one transaction, so a refusal or failure changes nothing.
public protocol TransferStore: Sendable {
    /// Refuses a pair that cannot be moved: an unknown guest or account
    /// (`user_not_found`), the same user twice, or a guest that has a linked
    /// identity (`User.checkCanMove(into:)`). Changes nothing.
    func checkTransfer(of guest: String, into account: String) throws

    /// What each of `steps` would move now, with the same checks as
    /// `checkTransfer`; changes nothing. Conflicts are settled as a union
    /// merge under `profile`'s collection rules.
    func previewTransfer(
        of guest: String, into account: String, steps: [TransferStep], profile: Profile
    ) throws
        -> [TransferStepPreview]

    /// Folds a guest into an account in one transaction: activity, every
    /// record (conflicts settled by `policy`, losers to the account's
    /// conflict archive), then the guest itself, under a `merge` journal.
    /// With `dryRun` it computes the same report and changes nothing. The
    /// report lists the capped collections the account is over afterwards.
    func mergeGuest(
        _ guest: String, into account: String, policy: MergePolicy, dryRun: Bool, profile: Profile, now: Date
    ) throws -> MergeReport

    /// Gives `user` the records owned by `profile.guestOwner` now; idempotent
    /// per record, so a later call adopts only ownerless records written
    /// since, and a call that moves nothing writes nothing at all. The
    /// per-user `adopted` flag is set by the first call that moves records
    /// and reported as `wasAlreadyAdopted`; it never blocks. Keys are rewritten
    /// by `Profile.adoptedKey`; a key the user already holds is reported and
    /// left with the guest owner. Queues a backup of the user when records moved.
    func adoptOwnerlessRecords(user: String, profile: Profile, now: Date) throws -> AdoptReport

    /// The conflict archive, oldest first: the rows of `owner` (which must
    /// exist), or all rows when nil.
    func archivedConflicts(owner: String?) throws -> [ArchivedConflict]

    /// In one transaction: reads archive row `id` (`conflict_not_found`
    /// when there is none), writes its data as a record of its owner under
    /// `key` (default: the first of `ArchivedConflict.restoredKeys(for:)`
    /// the owner does not hold; a given key the owner holds is refused with
    /// `record_key_taken` and nothing changes), deletes the archive row,
    /// moves last-seen and queues a backup when the profile asks for it.
    /// Caps do not apply: the record was the user's before the merge.
    func restoreArchivedConflict(id: Int64, key: String?, profile: Profile, now: Date) throws -> RestoredConflict
}
