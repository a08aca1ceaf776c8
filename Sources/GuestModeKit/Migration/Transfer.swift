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

public struct RecordConflict: Codable, Sendable, Equatable {
    public enum Resolution: String, Codable, Sendable {
        case keptGuest = "kept-guest"
        case keptAccount = "kept-account"
        case keptBoth = "kept-both"
    }

    public var collection: String
    public var key: String
    public var guestUpdatedAt: Date
    public var accountUpdatedAt: Date
    public var resolution: Resolution
    /// With keptBoth, the key the guest's record moved to.
    public var guestKeyAfter: String?
    /// The losing record's JSON, also kept in the store's conflict archive.
    public var archivedData: String?
}

/// What one part of moving a guest into an account moves. `migrate` runs
/// one per journaled step; a backend runs a step in one transaction.
public struct TransferStep: Codable, Sendable, Equatable {
    /// The step's name in the journal.
    public var name: String
    /// Counters, events, usage, plans, prompt history, experiments and
    /// flags: what the guest did rather than what it stored.
    public var movesActivity: Bool
    /// Collections whose records move, conflicts settled by a union merge.
    public var collections: [String]
    /// Removes the guest once nothing of it is left (refused while any of
    /// its records remain, so nothing is ever lost).
    public var removesGuest: Bool

    public init(name: String, movesActivity: Bool, collections: [String], removesGuest: Bool) {
        self.name = name
        self.movesActivity = movesActivity
        self.collections = collections
        self.removesGuest = removesGuest
    }
}

/// What a step would move now, counted without changing anything.
public struct TransferStepPreview: Codable, Sendable, Equatable {
    /// Rows the step would move, plus one for removing the guest.
    public var rows: Int
    /// Keys both users hold, settled as a union merge would.
    public var conflicts: [RecordConflict]

    public init(rows: Int, conflicts: [RecordConflict]) {
        self.rows = rows
        self.conflicts = conflicts
    }
}

extension User {
    /// Refuses moving this user into `account` unless this user is a guest
    /// and a different user. Backends call it inside the transaction that
    /// moves or plans, with both users as they are then.
    public func checkCanMove(into account: User) throws {
        if id == account.id {
            throw GuestModeError(.usage, code: .sameUser, "cannot move a user into itself")
        }
        if state != .anonymous {
            throw GuestModeError(
                .conflict, code: .notAGuest,
                "'\(id)' is not a guest (it has a linked identity); only guests are migrated or merged into accounts")
        }
    }
}
