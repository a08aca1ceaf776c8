import Foundation

/// The record rows of one transaction (see `StoreTransaction`).
package protocol RecordRows {
    /// Whether `owner` holds a record under `key` in `collection`.
    func recordExists(owner: String, collection: String, key: String) throws -> Bool

    /// How many records `owner` holds in `collection`.
    func countRecords(owner: String, collection: String) throws -> Int

    /// How many records `owner` holds in each collection; collections
    /// without records are absent.
    func recordCounts(owner: String) throws -> [String: Int]

    /// Writes the record, or replaces the data of the one under `key`
    /// (keeping its creation time); `time` is its creation or update time.
    func upsertRecord(owner: String, collection: String, key: String, data: String, at time: Date) throws

    /// The record under `key`, or nil.
    func record(owner: String, collection: String, key: String) throws -> StoredRecord?

    /// Whether there is a user `userID` and, when there is, its record under `key`, or nil. A record's
    /// owner need not be a user (the profile's guest owner holds records too), so a record found says
    /// nothing of the user; a backend may read both in one statement (SQLite) or one round trip
    /// (PostgreSQL).
    func record(
        ofUser userID: String, collection: String, key: String
    ) throws -> (userExists: Bool, record: StoredRecord?)

    /// The owner's records in `collection`, ordered by key (byte order): those whose key comes after
    /// `after` only, at most `limit`; nil for either is no bound.
    func records(owner: String, collection: String, after: String?, limit: Int?) throws -> [StoredRecord]

    /// Deletes the record under `key`; false when there was none.
    func deleteRecord(owner: String, collection: String, key: String) throws -> Bool
}
