import Foundation
import GuestModeKit

// Pending: replaced by PostgresStore+RecordStore.swift when the area is ported; never shipped.
extension PostgresStore: RecordStore {
    public func putRecord(owner userID: String, collection: String, key: String, data: String, profile: Profile, now: Date) throws -> PutResult {
        throw PostgresStore.pending("RecordStore")
    }

    public func record(owner userID: String, collection: String, key: String) throws -> StoredRecord? {
        throw PostgresStore.pending("RecordStore")
    }

    public func records(owner userID: String, collection: String) throws -> [StoredRecord] {
        throw PostgresStore.pending("RecordStore")
    }

    public func deleteRecord(owner userID: String, collection: String, key: String, profile: Profile, now: Date) throws -> Bool {
        throw PostgresStore.pending("RecordStore")
    }

    public func collectionLimits(of userID: String, collections: [String], profile: Profile, now: Date) throws -> [CollectionLimit] {
        throw PostgresStore.pending("RecordStore")
    }
}
