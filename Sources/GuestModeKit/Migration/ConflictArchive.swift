import Foundation

/// A record that lost a merge, kept in the conflict archive of the user
/// who received the merge (`user_id`), so no merge ever loses data.
public struct ArchivedConflict: Codable, Sendable, Equatable {
    /// The archived record's id, which restoring names.
    public var id: Int64
    /// The user who received the merge.
    public var userID: String
    /// The merge journal that archived it, in the store where the merge ran.
    public var journalID: Int64?
    /// The record's collection.
    public var collection: String
    /// The key the record had when it lost.
    public var key: String
    /// The record's JSON, as it was.
    @RecordJSON public var data: String
    /// When the losing record was last written.
    public var updatedAt: Date
    /// Why it lost, e.g. `keep-account (was owned by GUEST)`.
    public var reason: String
    /// When the record was archived.
    public var archivedAt: Date

    package init(
        id: Int64, userID: String, journalID: Int64?, collection: String, key: String, data: String, updatedAt: Date,
        reason: String, archivedAt: Date
    ) {
        self.id = id
        self.userID = userID
        self.journalID = journalID
        self.collection = collection
        self.key = key
        self.data = data
        self.updatedAt = updatedAt
        self.reason = reason
        self.archivedAt = archivedAt
    }
}

/// What `merge conflicts restore` did.
public struct RestoredConflict: Codable, Sendable, Equatable {
    /// The archived record's id.
    public var id: Int64
    /// The user the record was restored to.
    public var userID: String
    /// The record's collection.
    public var collection: String
    /// The key the record had when it lost.
    public var key: String
    /// The key it is restored under, next to the winner.
    public var restoredKey: String

    package init(id: Int64, userID: String, collection: String, key: String, restoredKey: String) {
        self.id = id
        self.userID = userID
        self.collection = collection
        self.key = key
        self.restoredKey = restoredKey
    }
}

extension ArchivedConflict {
    /// Keys a restored record may take when none is given, in the order
    /// they are tried: `key~restored`, `key~restored2`, …
    package static func restoredKeys(for key: String) -> some Sequence<String> {
        (1...).lazy.map { attempt in attempt == 1 ? "\(key)~restored" : "\(key)~restored\(attempt)" }
    }
}

extension GuestMode {
    /// Records that lost a merge: the user's (it must exist), or every
    /// user's when `userID` is nil; oldest first.
    public func archivedConflicts(user userID: String?) throws -> [ArchivedConflict] {
        try store.read { transaction in
            if let userID { _ = try transaction.requireUser(userID) }
            return try transaction.archivedConflicts(owner: userID)
        }
    }

    /// Brings an archived losing record back as a record of the user who
    /// received the merge, under `key` (default: the first free of
    /// `key~restored`, `key~restored2`, …), never touching the record that
    /// won. The archive entry is removed in the same transaction, last-seen
    /// moves and a backup is queued when the profile asks for it. A `key`
    /// the user already holds is refused and nothing changes. Caps do not
    /// apply: the record was the user's before the merge. With `userID`, a
    /// conflict of any other user is not found, as an id that never was:
    /// what a server answers a caller who may reach only that user.
    ///
    /// ```swift
    /// let restored = try engine.restoreConflict(id: 7, of: account.id, key: nil, now: now)
    /// // restored.restoredKey == "theme~restored"
    /// ```
    public func restoreConflict(
        id: Int64, of userID: String? = nil, key: String?, now: Date
    ) throws
        -> RestoredConflict
    {
        if let key, key.isEmpty {
            throw GuestModeError(.emptyKey, "the record key must not be empty")
        }
        try TextRule.check(["the record key": key])
        return try store.write { transaction in
            guard let conflict = try transaction.archivedConflict(id: id, locking: true),
                userID == nil || conflict.userID == userID
            else {
                throw GuestModeError(.conflictNotFound, "no archived conflict with id \(id)")
            }
            _ = try transaction.requireUser(conflict.userID, locking: true)
            func isTaken(_ candidate: String) throws -> Bool {
                try transaction.recordExists(owner: conflict.userID, collection: conflict.collection, key: candidate)
            }
            let restoredKey: String
            if let key {
                if try isTaken(key) {
                    throw GuestModeError(
                        .recordKeyTaken,
                        "user '\(conflict.userID)' already has a record '\(key)' in \(conflict.collection); choose another key"
                    )
                }
                restoredKey = key
            } else {
                var found: String?
                for candidate in ArchivedConflict.restoredKeys(for: conflict.key) where try !isTaken(candidate) {
                    found = candidate
                    break
                }
                guard let found else {
                    throw GuestModeError(.internalFailure, "no free key to restore under")
                }
                restoredKey = found
            }
            try transaction.upsertRecord(
                owner: conflict.userID, collection: conflict.collection, key: restoredKey, data: conflict.data, at: now)
            try transaction.deleteArchivedConflict(id: id)
            try transaction.noteActivity(of: conflict.userID, profile: profile, now: now)
            return RestoredConflict(
                id: id, userID: conflict.userID, collection: conflict.collection, key: conflict.key,
                restoredKey: restoredKey)
        }
    }
}
