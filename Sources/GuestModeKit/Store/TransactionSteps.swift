import Foundation

/// Decisions every area's use cases share, taken inside their transaction.
extension StoreTransaction {
    /// The tier whose caps and allowances apply to `user` now: its state and
    /// the plans it holds.
    func tier(of user: User, profile: Profile, now: Date) throws -> TierLevel {
        profile.tier(for: user.state, grants: try planGrants(of: user.id, mayBeInForceAt: now), now: now)
    }

    /// Where `user` stands against one collection's cap under `level`, the
    /// tier in force: read once by a caller that asks about several.
    func collectionLimit(
        of user: User, collection: String, tier level: TierLevel, profile: Profile
    ) throws
        -> CollectionLimit
    {
        profile.collectionLimit(collection, tier: level, used: try countRecords(owner: user.id, collection: collection))
    }

    /// Moves last-seen and, when the profile keeps continuous backups, queues
    /// a backup of the user: what every change of a user's data does.
    func noteActivity(of userID: String, profile: Profile, now: Date) throws {
        try advanceLastSeen(of: userID, to: now)
        try noteChange(of: userID, profile: profile, now: now)
    }

    /// Queues a backup of the user when the profile keeps continuous backups,
    /// coalesced to one pending entry per user. A repeat moves the queue time
    /// strictly forward, so the exporter can tell a change made after it read
    /// the user from the one it exported.
    func noteChange(of userID: String, profile: Profile, now: Date) throws {
        guard profile.backup.queuesOnChange else { return }
        try queueBackup(of: userID, at: backupQueueTime(after: try backupQueuedAt(of: userID, locking: true), now: now))
    }
}

/// The queue time of a backup queued at `now` when the user's pending one
/// was queued at `previous`: a repeat moves it strictly forward.
func backupQueueTime(after previous: Date?, now: Date) -> Date {
    guard let previous, previous >= now else { return now }
    return previous.addingTimeInterval(0.001)
}
