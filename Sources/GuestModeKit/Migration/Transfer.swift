import Foundation

/// How a merge settles two records under one key.
public enum MergePolicy: String, Codable, Sendable, CaseIterable {
    /// The guest's record replaces the account's.
    case keepGuest = "keep-guest"
    /// The account's record stays; the guest's is archived.
    case keepAccount = "keep-account"
    /// Both where the collection allows (`on_merge_conflict: keep-both`),
    /// else the newest wins.
    case union
}

/// A record both users held under one key, and how a migration or merge settled it.
public struct RecordConflict: Codable, Sendable, Equatable {
    /// How the conflict was settled.
    public enum Resolution: String, Codable, Sendable {
        case keptGuest = "kept-guest"
        case keptAccount = "kept-account"
        case keptBoth = "kept-both"
    }

    /// The record's collection.
    public var collection: String
    /// The key both users held.
    public var key: String
    /// When the guest's record was last written.
    public var guestUpdatedAt: Date
    /// When the account's record was last written.
    public var accountUpdatedAt: Date
    /// How it was settled.
    public var resolution: Resolution
    /// With keptBoth, the key the guest's record moved to.
    public var guestKeyAfter: String?
    /// The losing record's JSON, also kept in the store's conflict archive.
    public var archivedData: String?
}

/// What one part of moving a guest into an account moves. `migrate` runs
/// one per journaled step, each in one transaction.
package struct TransferStep: Codable, Sendable, Equatable {
    /// The step's name in the journal.
    package var name: String
    /// Counters, events, usage, plans, prompt history, experiments and
    /// flags: what the guest did rather than what it stored.
    package var movesActivity: Bool
    /// Collections whose records move, conflicts settled by a union merge.
    package var collections: [String]
    /// Removes the guest once nothing of it is left (refused while any of
    /// its records remain, so nothing is ever lost).
    package var removesGuest: Bool

    package init(name: String, movesActivity: Bool, collections: [String], removesGuest: Bool) {
        self.name = name
        self.movesActivity = movesActivity
        self.collections = collections
        self.removesGuest = removesGuest
    }
}

/// What a step would move now, counted without changing anything.
package struct TransferStepPreview: Codable, Sendable, Equatable {
    /// Rows the step would move, plus one for removing the guest.
    package var rows: Int
    /// Keys both users hold, settled as a union merge would.
    package var conflicts: [RecordConflict]

    package init(rows: Int, conflicts: [RecordConflict]) {
        self.rows = rows
        self.conflicts = conflicts
    }
}

extension User {
    /// Refuses moving this user into `account` unless this user is a guest
    /// and a different user. Checked inside the transaction that moves or
    /// plans, with both users as they are then.
    package func checkCanMove(into account: User) throws {
        if id == account.id {
            throw GuestModeError(.sameUser, "cannot move a user into itself")
        }
        if state != .anonymous {
            throw GuestModeError(
                .notAGuest,
                "'\(id)' is not a guest (it has a linked identity); only guests are migrated or merged into accounts")
        }
    }
}

extension StoreTransaction {
    /// The guest and the account as they are in this transaction, refused
    /// unless the guest may move into the account (`User.checkCanMove`); a
    /// missing user is `user_not_found`, the guest's first. With `locking`,
    /// both rows are locked in the order of their ids, so two transfers of
    /// one pair (in either direction) never deadlock.
    func transferPair(guest: String, account: String, locking: Bool) throws -> (guest: User, account: User) {
        let found = try existingUsers([guest, account], locking: locking)
        let source = try found[guest] ?? requireUser(guest)
        let target = try found[account] ?? requireUser(account)
        try source.checkCanMove(into: target)
        return (source, target)
    }

    /// The users of `ids` that exist; with `locking`, locked one at a time
    /// in sorted id order (the rule for every transaction that locks several).
    func existingUsers(_ ids: [String], locking: Bool) throws -> [String: User] {
        var found: [String: User] = [:]
        for id in Set(ids).sorted() {
            if let user = try user(id, locking: locking) { found[id] = user }
        }
        return found
    }
}

/// Moving one user's data into another's inside one transaction: the steps
/// a journaled migration step and a merge share. Each move is a few
/// set-based row operations, whatever the number of records.
struct Transfer {
    let transaction: any StoreTransaction
    let profile: Profile
    let guest: String
    let account: String
    let now: Date
    /// The journal that settles conflicts, kept with each archived loser.
    var journalID: Int64?

    /// Counters, events, usage, grants, plans, prompt history, experiments
    /// and flags: what the guest did rather than what it stored. Returns the
    /// rows moved.
    func moveActivity() throws -> Int {
        // The guest must still be there: a concurrent run that already moved it is a conflict, and a
        // guest that is gone must never lend the account its times.
        guard let source = try transaction.user(guest, locking: false) else {
            throw GuestModeError(
                .guestAlreadyMoved,
                "the guest '\(guest)' is no longer in the store: another run has already moved or removed it")
        }
        var moved = 0
        // Idempotency keys stay unique per user: a key both users used is
        // kept on the guest's row under a suffix, so nothing is dropped.
        let suffix = "@" + guest
        try transaction.suffixSharedIdempotencyKeys(in: .events, of: guest, sharedWith: account, suffix: suffix)
        moved += try transaction.reassignActivity(in: .events, from: guest, to: account)
        moved += try transaction.addCounters(of: guest, to: account)
        try transaction.deleteActivity(in: .counters, of: guest)
        try transaction.suffixSharedIdempotencyKeys(in: .meterUsage, of: guest, sharedWith: account, suffix: suffix)
        moved += try transaction.reassignActivity(in: .meterUsage, from: guest, to: account)
        // A warning is given once per threshold and period, whichever side was given it.
        moved += try transaction.copyActivity(in: .meterWarnings, from: guest, to: account)
        try transaction.deleteActivity(in: .meterWarnings, of: guest)
        // Grants go with the usage that draws on them.
        try transaction.suffixSharedIdempotencyKeys(in: .meterGrants, of: guest, sharedWith: account, suffix: suffix)
        moved += try transaction.reassignActivity(in: .meterGrants, from: guest, to: account)
        // A subscription goes with the plan it granted: the store's next word finds the account.
        for table in [ActivityTable.plans, .storePurchases, .promptOutcomes] {
            moved += try transaction.reassignActivity(in: table, from: guest, to: account)
        }
        // The account's own assignments and flags win: they are what it has seen.
        for table in [ActivityTable.experimentAssignments, .flags] {
            moved += try transaction.copyActivity(in: table, from: guest, to: account)
            try transaction.deleteActivity(in: table, of: guest)
        }
        // The person was first seen as the guest.
        try transaction.backdateCreation(of: account, to: source.createdAt)
        try transaction.advanceLastSeen(of: account, to: source.lastSeenAt)
        return moved
    }

    /// The guest's records of `collections` (all when nil) that share a key
    /// with the account's, and how `policy` settles each.
    func conflicts(in collections: [String]?, policy: MergePolicy) throws -> [RecordConflict] {
        try transaction.sharedRecordKeys(guest: guest, account: account, in: collections).map { shared in
            try RecordConflict.settling(
                collection: shared.collection, key: shared.key, guest: shared.guest, account: shared.account,
                policy: policy, rule: profile.collection(named: shared.collection)?.onMergeConflict ?? .newestWins,
                freeKey: { try freeKey(for: shared.key, collection: shared.collection) })
        }
    }

    /// Moves the guest's records of `collections` (all when nil), settling
    /// conflicts by `policy`; losers go to the conflict archive.
    func moveRecords(_ collections: [String]?, policy: MergePolicy) throws -> (moved: Int, conflicts: [RecordConflict])
    {
        let conflicts = try self.conflicts(in: collections, policy: policy)
        try settle(conflicts)
        return (try transaction.reassignRecords(from: guest, to: account, in: collections), conflicts)
    }

    /// Archives each conflict's loser, or moves the guest's record aside
    /// when both are kept; a conflict that keeps both without a key for the
    /// guest's record is refused before anything is written.
    func settle(_ conflicts: [RecordConflict]) throws {
        if let unkeyed = conflicts.first(where: { $0.resolution == .keptBoth && $0.guestKeyAfter == nil }) {
            throw GuestModeError(
                .noFreeKey,
                "no key was chosen for the guest's '\(unkeyed.key)' in \(unkeyed.collection)")
        }
        for conflict in conflicts {
            switch conflict.resolution {
            case .keptGuest:
                try archiveAndDelete(owner: account, conflict, reason: "lost to the guest's record")
            case .keptAccount:
                try archiveAndDelete(owner: guest, conflict, reason: "lost to the account's record")
            case .keptBoth:
                guard let keyAfter = conflict.guestKeyAfter else { continue }
                _ = try transaction.moveRecord(
                    owner: guest, collection: conflict.collection, key: conflict.key, to: guest, key: keyAfter)
            }
        }
    }

    /// What is left of the guest once everything has moved: credentials,
    /// queued backups, and the user itself. Refused while any of its
    /// records remain, so nothing is ever lost.
    func removeGuest() throws -> Int {
        let leftovers = try transaction.countRecords(owner: guest, in: nil)
        guard leftovers == 0 else {
            throw GuestModeError(
                .recordsLeftBehind,
                "\(leftovers) records of '\(guest)' were not moved; the guest was kept")
        }
        try transaction.removeUser(guest)
        try transaction.noteChange(of: account, profile: profile, now: now)
        return 1
    }

    /// The guest's records of `collections` (all when nil).
    func recordCount(_ collections: [String]?) throws -> Int {
        try transaction.countRecords(owner: guest, in: collections)
    }

    /// The guest's activity rows, as `moveActivity` would find them.
    func activityCount() throws -> Int {
        try ActivityTable.allCases.reduce(0) { total, table in
            total + (try transaction.countActivity(in: table, of: guest))
        }
    }

    /// Keeps a losing record in the account's conflict archive, whichever
    /// side it came from, so it stays with the person and their backups,
    /// and removes it from its owner.
    private func archiveAndDelete(owner: String, _ conflict: RecordConflict, reason: String) throws {
        try transaction.archiveRecord(
            owner: owner, collection: conflict.collection, key: conflict.key, for: account, journalID: journalID,
            reason: "\(reason) (was owned by \(owner))", at: now)
        _ = try transaction.deleteRecord(owner: owner, collection: conflict.collection, key: conflict.key)
    }

    /// The first of `RecordConflict.keptBothKeys(for:)` that neither user holds.
    private func freeKey(for key: String, collection: String) throws -> String {
        for candidate in RecordConflict.keptBothKeys(for: key) {
            let isTaken =
                try transaction.recordExists(owner: guest, collection: collection, key: candidate)
                || transaction.recordExists(owner: account, collection: collection, key: candidate)
            if !isTaken { return candidate }
        }
        // The candidates never run out; this only satisfies the compiler.
        throw GuestModeError(.noFreeKey, "no free key for '\(key)' in \(collection)")
    }
}
