import Foundation

/// The rows a profile upgrade reads and rewrites inside one transaction (see
/// `StoreTransaction`): every owner's records at once, and the binding of
/// the store to its profile.
package protocol ProfileRows {
    /// Holds the store's profile binding until the transaction ends, so one
    /// profile upgrade runs at a time: a second one waits until the first
    /// has committed, then sees the data as the first left it.
    func lockProfileBinding() throws

    /// Records of every owner in `collection`.
    func countRecords(in collection: String) throws -> Int

    /// Moves every owner's records of `collection` to `newName`.
    func renameCollection(_ collection: String, to newName: String) throws

    /// Up to `limit` records of every owner in `collection`, ordered by
    /// owner then key, starting after `position` (from the first when nil),
    /// and no more of them than keep their data within `maximumBytes`
    /// (always the first, whatever its size). A page at a time, so the
    /// engine can rewrite a collection of any size, of records of any size,
    /// in bounded memory; the order is the backend's own, but the same for
    /// every page of one transaction. An empty page is the end.
    func recordPage(
        in collection: String, after position: RecordPosition?, limit: Int, maximumBytes: Int
    ) throws -> [StoredRecord]

    /// Replaces the data of each record (found by owner, collection and
    /// key) with its `data`, keeping its creation and update times: a
    /// profile upgrade reshapes records, it does not write them anew.
    func replaceRecordData(_ records: [StoredRecord]) throws

    /// Binds the store to the profile `text` read from `origin`, at `time`.
    func setBoundProfile(text: String, origin: String, at time: Date) throws
}

/// Where a page of `ProfileRows.recordPage` ends: the next page starts
/// after this owner's record under this key.
package struct RecordPosition: Sendable, Equatable {
    /// The owner of the last record read.
    package var owner: String
    /// The key of the last record read.
    package var key: String

    /// The position just after `record`.
    package init(after record: StoredRecord) {
        owner = record.owner
        key = record.key
    }
}
