import Foundation

/// Per-user JSON records under the tier's caps.
/// Each method is one whole use case in one transaction. Every method throws
/// when the user does not exist.
public protocol RecordStore: Sendable {
    /// Writes `data` (canonical JSON, already validated) under `key`, in one
    /// transaction with the cap check: the tier in force
    /// (`profile.tier(for:grants:now:)`) and the records held give the limit
    /// (`profile.collectionLimit`); unless `limit.admits(isReplacement:)`,
    /// nothing is written and the refusal is returned. A write moves the
    /// user's last-seen and queues a backup when the profile asks for it; the
    /// result carries the limit after the write.
    func putRecord(
        owner userID: String, collection: String, key: String, data: String, profile: Profile, now: Date
    ) throws -> PutResult

    /// Writes `data` under `key` owned by `profile.guestOwner`: data an app
    /// wrote before any user existed, waiting for `migrate adopt`. No user,
    /// no cap, no last-seen, no backup. Returns true when it replaced a
    /// record.
    func putOwnerlessRecord(
        collection: String, key: String, data: String, profile: Profile, now: Date
    ) throws -> Bool

    /// The record under `key`, or nil when there is none.
    func record(owner userID: String, collection: String, key: String) throws -> StoredRecord?

    /// The user's records in `collection`, ordered by key.
    func records(owner userID: String, collection: String) throws -> [StoredRecord]

    /// Deletes the record under `key`; false (and nothing changed) when
    /// there was none. A deletion moves last-seen and queues a backup when
    /// the profile asks for it.
    func deleteRecord(owner userID: String, collection: String, key: String, profile: Profile, now: Date) throws -> Bool

    /// Where the user stands against each named collection's cap now, in
    /// the order given.
    func collectionLimits(
        of userID: String, collections: [String], profile: Profile, now: Date
    ) throws
        -> [CollectionLimit]

    /// Many puts in one transaction (`record put --from`): `feed` calls the
    /// given `put` once per record; each is decided as `putRecord` decides
    /// (the tier's cap counted per user and collection, only where a cap
    /// applies) and `onConflict` says what an existing key gets. Last-seen
    /// and the backup queue are updated once per user. Everything is rolled
    /// back when `feed` throws, so the load is all or nothing. `put` throws
    /// `user_not_found` for a missing user.
    func putRecords(
        profile: Profile, now: Date, onConflict: RecordConflictPolicy,
        _ feed: (_ put: (BulkRecord) throws -> BulkPutOutcome) throws -> Void
    ) throws
}
