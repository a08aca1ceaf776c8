import Foundation
import GRDB

public struct StoredRecord: Codable, Sendable, Equatable {
    public var owner: String
    public var collection: String
    public var key: String
    /// The JSON document, exactly as stored.
    public var data: String
    public var createdAt: Date
    public var updatedAt: Date
}

public struct PutResult: Codable, Sendable, Equatable {
    public var outcome: CapOutcome
    public var isReplacement: Bool
    public var limit: CollectionLimit
}

/// Where a user stands against one collection's cap.
public struct CollectionLimit: Codable, Sendable, Equatable {
    public var collection: String
    public var tier: TierLevel
    public var used: Int
    /// nil: unlimited for this tier.
    public var cap: Int?
    /// What a new record would get now.
    public var outcome: CapOutcome
}

extension GuestMode {
    /// Writes a record unless it would exceed the user's tier cap; replacing
    /// an existing key never counts against the cap. Refused writes change
    /// nothing and report what the app should ask for.
    public func putRecord(user userID: String, collection: String, key: String, json: String, now: Date) throws -> PutResult {
        try requireCollection(collection)
        guard !key.isEmpty else { throw GuestModeError.usage("the record key must not be empty") }
        let canonical = try canonicalJSON(json)
        return try store.write { db in
            let user = try store.requireUser(userID, db)
            let exists = try Bool.fetchOne(
                db, sql: "SELECT 1 FROM records WHERE owner_id = ? AND collection = ? AND key = ?",
                arguments: [userID, collection, key]) ?? false
            var limit = try store.collectionLimit(of: user, collection: collection, profile: profile, now: now, db)
            if !exists && limit.outcome != .allowed {
                return PutResult(outcome: limit.outcome, isReplacement: false, limit: limit)
            }
            let nowText = Timestamp.format(now)
            try db.execute(
                sql: """
                    INSERT INTO records (owner_id, collection, key, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT(owner_id, collection, key) DO UPDATE SET data = excluded.data, updated_at = excluded.updated_at
                    """,
                arguments: [userID, collection, key, canonical, nowText, nowText])
            try store.touch(userID, at: now, db)
            try store.noteChange(of: userID, profile: profile, now: now, db)
            if !exists { limit = try store.collectionLimit(of: user, collection: collection, profile: profile, now: now, db) }
            return PutResult(outcome: .allowed, isReplacement: exists, limit: limit)
        }
    }

    public func record(user userID: String, collection: String, key: String) throws -> StoredRecord {
        try requireCollection(collection)
        return try store.read { db in
            _ = try store.requireUser(userID, db)
            guard let row = try Row.fetchOne(
                db, sql: "SELECT * FROM records WHERE owner_id = ? AND collection = ? AND key = ?",
                arguments: [userID, collection, key])
            else {
                throw GuestModeError.notFound("user '\(userID)' has no record '\(key)' in \(collection)", code: "record_not_found")
            }
            return StoredRecord(row)
        }
    }

    public func records(user userID: String, collection: String) throws -> [StoredRecord] {
        try requireCollection(collection)
        return try store.read { db in
            _ = try store.requireUser(userID, db)
            return try Row.fetchAll(
                db, sql: "SELECT * FROM records WHERE owner_id = ? AND collection = ? ORDER BY key",
                arguments: [userID, collection]
            ).map(StoredRecord.init)
        }
    }

    public func deleteRecord(user userID: String, collection: String, key: String, now: Date) throws {
        try requireCollection(collection)
        try store.write { db in
            _ = try store.requireUser(userID, db)
            try db.execute(
                sql: "DELETE FROM records WHERE owner_id = ? AND collection = ? AND key = ?",
                arguments: [userID, collection, key])
            if db.changesCount == 0 {
                throw GuestModeError.notFound("user '\(userID)' has no record '\(key)' in \(collection)", code: "record_not_found")
            }
            try store.touch(userID, at: now, db)
            try store.noteChange(of: userID, profile: profile, now: now, db)
        }
    }

    /// Limits of the named collection, or of every collection some tier caps.
    public func limits(user userID: String, collection: String?, now: Date) throws -> [CollectionLimit] {
        if let collection { try requireCollection(collection) }
        return try store.read { db in
            let user = try store.requireUser(userID, db)
            let names = collection.map { [$0] }
                ?? profile.collections.map(\.name).filter { name in profile.tiers.contains { $0.cap(for: name) != nil } }
            return try names.map { try store.collectionLimit(of: user, collection: $0, profile: profile, now: now, db) }
        }
    }

    func requireCollection(_ name: String) throws {
        guard profile.collection(named: name) != nil else {
            throw GuestModeError.usage(
                "unknown collection '\(name)'; this profile's collections are: \(profile.collections.map(\.name).joined(separator: ", "))",
                code: "unknown_collection")
        }
    }

    /// Records are stored as compact JSON so equal documents compare equal.
    func canonicalJSON(_ text: String) throws -> String {
        guard let data = text.data(using: .utf8),
            let value = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        else {
            throw GuestModeError.badData("the record data is not valid JSON: \(text.prefix(80))", code: "invalid_json")
        }
        let encoded = try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed, .withoutEscapingSlashes])
        return String(decoding: encoded, as: UTF8.self)
    }
}

extension StoredRecord {
    init(_ row: Row) {
        self.init(
            owner: row["owner_id"], collection: row["collection"], key: row["key"], data: row["data"],
            createdAt: Timestamp.parse(row["created_at"]) ?? .distantPast,
            updatedAt: Timestamp.parse(row["updated_at"]) ?? .distantPast)
    }
}
