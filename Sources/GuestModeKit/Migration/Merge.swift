import Foundation
import GRDB

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
}

public struct AdoptReport: Codable, Sendable {
    public struct Collision: Codable, Sendable, Equatable {
        public var collection: String
        public var key: String
        public var keyAfter: String
    }

    public var user: String
    public var moved: [String: Int]
    /// Records left with the guest owner because the user already has their key.
    public var collisions: [Collision]
    /// True when the user had adopted before: the run changed nothing.
    public var wasAlreadyAdopted: Bool
}

extension GuestMode {
    /// Folds a guest into an account in one transaction, for when linking
    /// failed because the identity already has an account. The guest is
    /// removed only once everything is in the account.
    public func merge(guest: String, into account: String, policy: MergePolicy, dryRun: Bool, now: Date) throws -> MergeReport {
        let work = { (db: Database) throws -> MergeReport in
            try checkMigration(guest: guest, account: account, db)
            var transfer = Transfer(profile: profile, store: store, source: guest, target: account, now: now)
            if dryRun {
                let conflicts = try transfer.conflicts(in: nil, policy: policy, db)
                let target = try store.requireUser(account, db)
                var overCap: [CollectionLimit] = []
                for collection in profile.collections {
                    var limit = try store.collectionLimit(of: target, collection: collection.name, profile: profile, now: now, db)
                    let incoming = try transfer.recordCounts([collection.name], db)
                    let merged = conflicts.filter { $0.collection == collection.name && $0.resolution != .keptBoth }.count
                    limit.used += incoming - merged
                    if let cap = limit.cap, limit.used > cap { overCap.append(limit) }
                }
                return MergeReport(
                    guest: guest, account: account, policy: policy, recordsMoved: try transfer.recordCounts(nil, db),
                    activityMoved: try transfer.activityCount(db), conflicts: conflicts, overCap: overCap, isDryRun: true,
                    journalID: nil)
            }
            try db.execute(
                sql: """
                    INSERT INTO migration_journals (kind, source_id, target_id, status, started_at, finished_at)
                    VALUES ('merge', ?, ?, 'done', ?, ?)
                    """,
                arguments: [guest, account, Timestamp.format(now), Timestamp.format(now)])
            transfer.journalID = db.lastInsertedRowID
            let activity = try transfer.moveActivity(db)
            let records = try transfer.moveRecords(nil, policy: policy, db)
            _ = try transfer.removeSource(db)
            let overCap = try overCapLimits(of: try store.requireUser(account, db), now: now, db)
            return MergeReport(
                guest: guest, account: account, policy: policy, recordsMoved: records.moved, activityMoved: activity,
                conflicts: records.conflicts, overCap: overCap, isDryRun: false, journalID: transfer.journalID)
        }
        return try dryRun ? store.read(work) : store.write(work)
    }

    /// Gives a user the records written before any user existed (owned by the
    /// profile's guest owner), once. Keys of collections with unique fields
    /// carry their owner as the first `/` segment and are rewritten; a key
    /// the user already has is reported and left where it was.
    public func adopt(user userID: String, now: Date) throws -> AdoptReport {
        let owner = profile.guestOwner
        return try store.write { db in
            _ = try store.requireUser(userID, db)
            if try Bool.fetchOne(
                db, sql: "SELECT 1 FROM user_flags WHERE user_id = ? AND flag = 'adopted'", arguments: [userID]) == true
            {
                return AdoptReport(user: userID, moved: [:], collisions: [], wasAlreadyAdopted: true)
            }
            var moved: [String: Int] = [:]
            var collisions: [AdoptReport.Collision] = []
            let rows = try Row.fetchAll(
                db, sql: "SELECT collection, key FROM records WHERE owner_id = ? ORDER BY collection, key", arguments: [owner])
            for row in rows {
                let collection: String = row["collection"]
                let key: String = row["key"]
                let keyAfter = adoptedKey(key, collection: collection, user: userID)
                if try Bool.fetchOne(
                    db, sql: "SELECT 1 FROM records WHERE owner_id = ? AND collection = ? AND key = ?",
                    arguments: [userID, collection, keyAfter]) == true
                {
                    collisions.append(AdoptReport.Collision(collection: collection, key: key, keyAfter: keyAfter))
                    continue
                }
                try db.execute(
                    sql: "UPDATE records SET owner_id = ?, key = ? WHERE owner_id = ? AND collection = ? AND key = ?",
                    arguments: [userID, keyAfter, owner, collection, key])
                moved[collection, default: 0] += 1
            }
            try db.execute(
                sql: "INSERT INTO user_flags (user_id, flag, set_at) VALUES (?, 'adopted', ?)",
                arguments: [userID, Timestamp.format(now)])
            if !moved.isEmpty { try store.noteChange(of: userID, profile: profile, now: now, db) }
            return AdoptReport(user: userID, moved: moved, collisions: collisions, wasAlreadyAdopted: false)
        }
    }

    func adoptedKey(_ key: String, collection: String, user: String) -> String {
        let prefix = profile.guestOwner + "/"
        guard profile.collection(named: collection)?.uniqueFields.isEmpty == false, key.hasPrefix(prefix) else {
            return key
        }
        return user + "/" + key.dropFirst(prefix.count)
    }
}
