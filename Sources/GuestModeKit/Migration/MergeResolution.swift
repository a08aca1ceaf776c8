import Foundation

/// One side's version of a record stored under a key both users hold.
package struct RecordVersion: Sendable, Equatable {
    package var data: String
    package var updatedAt: Date

    package init(data: String, updatedAt: Date) {
        self.data = data
        self.updatedAt = updatedAt
    }
}

/// The two sides of a transfer: the guest whose data moves, the account that receives it.
package enum TransferSide: String, Codable, Sendable, CaseIterable {
    case guest, account
}

extension MergePolicy {
    /// How this policy settles two records under one key. `rule` is the
    /// collection's `on_merge_conflict`; only `union` reads it (both are kept
    /// where the collection allows, else the record updated last wins, the
    /// account's on a tie).
    package func resolution(
        guest: RecordVersion, account: RecordVersion, rule: MergeConflictRule
    ) -> RecordConflict.Resolution {
        switch self {
        case .keepGuest: .keptGuest
        case .keepAccount: .keptAccount
        case .union:
            if rule == .keepBoth {
                .keptBoth
            } else if guest.updatedAt > account.updatedAt {
                .keptGuest
            } else {
                .keptAccount
            }
        }
    }
}

extension RecordConflict.Resolution {
    /// Whose record goes to the conflict archive; nil when both are kept.
    package var archivedSide: TransferSide? {
        switch self {
        case .keptGuest: .account
        case .keptAccount: .guest
        case .keptBoth: nil
        }
    }

    /// Whose records stay in the account after the merge.
    package var survivingSides: [TransferSide] {
        switch self {
        case .keptGuest: [.guest]
        case .keptAccount: [.account]
        case .keptBoth: [.account, .guest]
        }
    }
}

extension RecordConflict {
    /// The conflict between a guest's and an account's record under one key,
    /// settled by `policy` inside the transfer's transaction; `freeKey` is
    /// asked only when both records are kept, for the key the
    /// guest's record moves to (the first of `keptBothKeys(for:)` neither
    /// user holds).
    package static func settling(
        collection: String, key: String, guest: RecordVersion, account: RecordVersion, policy: MergePolicy,
        rule: MergeConflictRule, freeKey: () throws -> String
    ) rethrows -> RecordConflict {
        let resolution = policy.resolution(guest: guest, account: account, rule: rule)
        var conflict = RecordConflict(
            collection: collection, key: key, guestUpdatedAt: guest.updatedAt, accountUpdatedAt: account.updatedAt,
            resolution: resolution, guestKeyAfter: nil, archivedData: nil)
        switch resolution.archivedSide {
        case .guest: conflict.archivedData = guest.data
        case .account: conflict.archivedData = account.data
        case nil: conflict.guestKeyAfter = try freeKey()
        }
        return conflict
    }

    /// Keys a guest's record may move to when both records are kept, in the
    /// order they are tried: `key~guest`, `key~guest2`, `key~guest3`, …
    package static func keptBothKeys(for key: String) -> some Sequence<String> {
        (1...).lazy.map { attempt in attempt == 1 ? "\(key)~guest" : "\(key)~guest\(attempt)" }
    }
}
