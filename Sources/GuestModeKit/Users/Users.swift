import Foundation

/// A guest or an account.
public struct User: Codable, Sendable, Equatable {
    /// The user's id, kept when a guest links an identity.
    public var id: String
    /// The device the guest was created for, if any.
    public var device: String?
    /// Guest (`anonymous`) or account (`linked`).
    public var state: UserState
    /// Where the user stands with sign-in prompts (`anonymous`, `prompted`, `dismissed`, `never_ask`, `authenticated`).
    public var promptState: String

    /// The prompt state a new guest starts in, however it is created (a
    /// guest, a user first seen in a log of events, a replayed user).
    package static let newGuestPromptState = "anonymous"
    /// When the user was created.
    public var createdAt: Date
    /// When the user was last seen by any call.
    public var lastSeenAt: Date
    /// When the user first linked an identity; nil for a guest.
    public var linkedAt: Date?

    package init(
        id: String, device: String?, state: UserState, promptState: String, createdAt: Date, lastSeenAt: Date,
        linkedAt: Date?
    ) {
        self.id = id
        self.device = device
        self.state = state
        self.promptState = promptState
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.linkedAt = linkedAt
    }

    /// The user's first activity: a guest exists from its first event.
    public var firstSeenAt: Date { createdAt }
}

/// An identity linked to a user.
public struct Identity: Codable, Sendable, Equatable {
    /// The provider, such as `apple`.
    public var provider: String
    /// The subject at the provider.
    public var subject: String
    /// The email the provider gave, if any.
    public var email: String?
    /// When it was linked.
    public var linkedAt: Date

    package init(provider: String, subject: String, email: String?, linkedAt: Date) {
        self.provider = provider
        self.subject = subject
        self.email = email
        self.linkedAt = linkedAt
    }
}

/// A legacy anonymous username/secret pair an app kept for a guest; only a
/// salted hash of the secret is stored.
public struct AnonymousCredentials: Sendable {
    /// The username.
    public var username: String
    /// The secret, in clear; only its salted hash is stored.
    public var secret: String

    /// A username and its secret.
    public init(username: String, secret: String) {
        self.username = username
        self.secret = secret
    }
}

/// Which users a listing returns.
public struct UserFilter: Sendable {
    /// Only users in this state; nil for both.
    public var state: UserState?
    /// Only users not seen for at least this long before `now`.
    public var inactive: TimeSpan?

    /// Users in `state` (any when nil), not seen for `inactive` (any when nil).
    public init(state: UserState? = nil, inactive: TimeSpan? = nil) {
        self.state = state
        self.inactive = inactive
    }

    /// Users in `state` (any when nil), not seen for `inactiveDays` days (any when nil).
    public init(state: UserState? = nil, inactiveDays: Int?) {
        self.init(state: state, inactive: inactiveDays.map { TimeSpan(amount: $0, unit: .days) })
    }
}

/// A user in a listing.
public struct UserSummary: Codable, Sendable, Equatable {
    /// The user's id.
    public var id: String
    /// Guest or account.
    public var state: UserState
    /// When the user was created.
    public var createdAt: Date
    /// When the user was last seen.
    public var lastSeenAt: Date
    /// Identities linked.
    public var identities: Int
    /// Records held.
    public var records: Int

    package init(id: String, state: UserState, createdAt: Date, lastSeenAt: Date, identities: Int, records: Int) {
        self.id = id
        self.state = state
        self.createdAt = createdAt
        self.lastSeenAt = lastSeenAt
        self.identities = identities
        self.records = records
    }
}

/// Everything `user show` reports.
public struct UserDetails: Codable, Sendable {
    /// The user.
    public var user: User
    /// The user's tier now.
    public var tier: TierLevel
    /// Identities linked.
    public var identities: [Identity]
    /// True when the user has an anonymous username and secret.
    public var hasAnonymousCredentials: Bool
    /// Counters, by action.
    public var counters: [String: Int]
    /// Records held, by collection.
    public var records: [String: Int]
    /// Every meter of the profile, as it stands for the user.
    public var meters: [MeterStatus]
    /// Plans held or held before.
    public var plans: [PlanStatus]
}

/// An inactive guest a purge considered.
public struct PurgeCandidate: Codable, Sendable, Equatable {
    /// The guest's id.
    public var id: String
    /// When the guest was last seen.
    public var lastSeenAt: Date
    /// Records the guest owns.
    public var records: Int

    package init(id: String, lastSeenAt: Date, records: Int) {
        self.id = id
        self.lastSeenAt = lastSeenAt
        self.records = records
    }
}

/// What `guest new` did: created a user, or found the one of its device.
public struct GuestCreation: Sendable {
    /// The guest, new or found.
    public var user: User
    /// True when this call created the guest; false when the device already had one.
    public var isNew: Bool

    package init(user: User, created: Bool) {
        self.user = user
        self.isNew = created
    }
}

/// What a purge of inactive guests did, or with `isDryRun` would do.
public struct PurgeReport: Codable, Sendable {
    /// The inactivity asked for, in the short form (`90d`, `3 months`).
    public var inactive: String
    /// The same in whole days when it is whole days (`90d`, `2w`), else null.
    public var inactiveDays: Int?
    /// Guests last seen before this time were candidates.
    public var cutoff: Date
    /// Guests purged, with everything they owned.
    public var purged: [PurgeCandidate]
    /// Inactive guests kept because they own records or hold an active plan.
    public var kept: [PurgeCandidate]
    /// True when nothing was deleted: the report says what a purge would do.
    public var isDryRun: Bool
}

/// How many candidates a purge removed (or would remove) and kept.
public struct PurgeTally: Sendable, Equatable {
    /// Candidates purged.
    public var purged: Int
    /// Candidates kept.
    public var kept: Int

    package init(purged: Int, kept: Int) {
        self.purged = purged
        self.kept = kept
    }
}

/// One user's state, identities, counters, record counts and plan grants,
/// read together.
struct UserOverview: Sendable, Equatable {
    var user: User
    var identities: [Identity]
    var hasAnonymousCredentials: Bool
    var counters: [String: Int]
    /// Records per collection; collections without records are absent.
    var records: [String: Int]
    /// Every grant the user ever held, oldest first.
    var grants: [PlanGrant]
}

extension StoreTransaction {
    /// Inserts a new user and, when given, its anonymous credentials. A
    /// username already kept by any user throws `username_taken`, so the
    /// transaction rolls back and no user is created.
    func createUser(_ user: User, credentials: StoredCredentials?) throws {
        try insertUser(user)
        guard let credentials else { return }
        guard try insertCredentials(credentials) else {
            throw GuestModeError(
                .usernameTaken, "the anonymous username '\(credentials.username)' is already taken")
        }
    }

    /// What `user show` reports about one user besides its meters; throws
    /// `user_not_found`.
    func overview(of id: String) throws -> UserOverview {
        UserOverview(
            user: try requireUser(id), identities: try identities(of: id),
            hasAnonymousCredentials: try credentials(of: id) != nil, counters: try counters(of: id),
            records: try recordCounts(owner: id), grants: try planGrants(of: id))
    }
}

extension GuestMode {
    /// Creates an anonymous user, optionally keeping a legacy anonymous
    /// username with a slow salted hash of its secret.
    ///
    /// ```swift
    /// let guest = try engine.createGuest(device: "phone-1", now: now)
    /// // guest.state == .anonymous
    /// ```
    public func createGuest(device: String?, credentials: AnonymousCredentials? = nil, now: Date) throws -> User {
        let (user, stored) = try newGuest(device: device, credentials: credentials, now: now)
        try store.write { transaction in try transaction.createUser(user, credentials: stored) }
        return user
    }

    /// Like `createGuest`, but idempotent per device: when a user with
    /// `device` exists, that user (the oldest, if several) is returned
    /// (`isNew` false) and nothing is written, since a device id survives
    /// a reinstall. Credentials given with a known device are not stored.
    /// Concurrent calls with one device create one user.
    ///
    /// ```swift
    /// let creation = try engine.createOrFindGuest(device: "phone-1", now: now)
    /// if creation.isNew { /* first launch on this device */ }
    /// ```
    public func createOrFindGuest(
        device: String?, credentials: AnonymousCredentials? = nil, now: Date
    ) throws -> GuestCreation {
        let (user, stored) = try newGuest(device: device, credentials: credentials, now: now)
        return try store.write { transaction in
            if let device, let known = try transaction.oldestUser(device: device, locking: true) {
                return GuestCreation(user: known, created: false)
            }
            try transaction.createUser(user, credentials: stored)
            return GuestCreation(user: user, created: true)
        }
    }

    /// Refuses a device id a guest could not be created with: empty, longer
    /// than 256 characters, or holding a control character. A front end
    /// checks it before it spends anything on the request (a sign-in
    /// bucket's token).
    ///
    /// ```swift
    /// try GuestMode.checkDevice("phone-1")
    /// ```
    ///
    /// - Throws: ``GuestModeError`` `invalid_device`.
    public static func checkDevice(_ device: String) throws {
        guard !device.isEmpty, device.count <= 256,
            !device.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw GuestModeError(
                .invalidDevice,
                "the device id must be 1 to 256 characters without control characters, not \(device.debugDescription)")
        }
    }

    /// The new user and its stored credentials, validated; the secret is
    /// hashed here, before any transaction, since hashing is slow on purpose.
    private func newGuest(
        device: String?, credentials: AnonymousCredentials?, now: Date
    ) throws -> (User, StoredCredentials?) {
        if let device { try Self.checkDevice(device) }
        if let username = credentials?.username {
            let trimmed = username.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty, trimmed == username, username.count <= 256,
                !username.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                throw GuestModeError(
                    .invalidUsername,
                    "the username must be 1 to 256 characters, without control characters or leading or trailing spaces, not \(username.debugDescription)"
                )
            }
        }
        let user = User(
            id: UUID().uuidString.lowercased(), device: device, state: .anonymous,
            promptState: User.newGuestPromptState,
            createdAt: now, lastSeenAt: now, linkedAt: nil)
        let stored = try credentials.map { credentials in
            StoredCredentials(
                userID: user.id, username: credentials.username, secretHash: try SecretHash.make(credentials.secret),
                createdAt: now)
        }
        return (user, stored)
    }

    /// The user with this id.
    ///
    /// ```swift
    /// let user = try engine.user(guest.id)
    /// // user.state, user.lastSeenAt
    /// ```
    ///
    /// - Throws: ``GuestModeError`` `user_not_found` when there is none.
    public func user(_ id: String) throws -> User {
        try TextRule.check(id, what: "the user id")
        return try store.read { transaction in try transaction.requireUser(id) }
    }

    /// The users `filter` selects, oldest first.
    ///
    /// ```swift
    /// let guests = try engine.users(matching: UserFilter(state: .anonymous), now: now)
    /// ```
    public func users(matching filter: UserFilter, now: Date) throws -> [UserSummary] {
        try store.read { transaction in
            try transaction.userSummaries(
                state: filter.state, lastSeenBefore: filter.inactive.map { $0.subtracted(from: now) })
        }
    }

    /// Everything `user show` reports. The user, its identities, counters,
    /// records and plans (so its tier) come from one read; meter usage is
    /// the meter area's and is read after it, one meter at a time.
    public func details(user id: String, now: Date) throws -> UserDetails {
        try TextRule.check(id, what: "the user id")
        let overview = try store.read { transaction in try transaction.overview(of: id) }
        return UserDetails(
            user: overview.user, tier: profile.tier(for: overview.user.state, grants: overview.grants, now: now),
            identities: overview.identities, hasAnonymousCredentials: overview.hasAnonymousCredentials,
            counters: overview.counters, records: overview.records,
            meters: try profile.meters.map { try meterStatus(user: id, meter: $0.name, now: now) },
            plans: profile.planStatuses(of: overview.grants, now: now))
    }

    /// Deletes a user and everything it owns, nothing else.
    public func deleteUser(_ id: String, now: Date) throws {
        try TextRule.check(id, what: "the user id")
        try store.write { transaction in
            // Locked first, so a concurrent write to the user finishes (or waits) rather than racing the deletion.
            _ = try transaction.requireUser(id, locking: true)
            try transaction.deleteUser(id)
            try transaction.raiseWebhook(.userDeleted, user: id, data: [:], at: now, profile: profile)
        }
    }

    /// Removes anonymous users inactive for `inactiveDays`.
    public func purge(inactiveDays: Int, includingUsersWithData: Bool, dryRun: Bool, now: Date) throws -> PurgeReport {
        try purge(
            inactive: TimeSpan(amount: inactiveDays, unit: .days), includingUsersWithData: includingUsersWithData,
            dryRun: dryRun, now: now)
    }

    /// Removes anonymous users inactive for at least `inactive`. Users that
    /// own records are kept unless `includingUsersWithData`; users holding an
    /// active plan are always kept, since they paid (see `PurgePolicy`).
    /// Both lists are ordered by last activity, oldest first.
    public func purge(inactive: TimeSpan, includingUsersWithData: Bool, dryRun: Bool, now: Date) throws -> PurgeReport {
        var purged: [PurgeCandidate] = []
        var kept: [PurgeCandidate] = []
        let (cutoff, _) = try purge(
            inactive: inactive, includingUsersWithData: includingUsersWithData, dryRun: dryRun, now: now
        ) { candidate, isPurged in
            if isPurged { purged.append(candidate) } else { kept.append(candidate) }
        }
        return PurgeReport(
            inactive: inactive.description, inactiveDays: inactive.wholeDays, cutoff: cutoff, purged: purged,
            kept: kept, isDryRun: dryRun)
    }

    /// How many ids one `UserRows.deleteUsers` batch carries.
    static let purgeDeletionBatch = 1000
    /// How many candidates one purge transaction decides.
    static let purgeChunkSize = 50_000

    /// The purge of `purge(inactive:…)`, streamed: each candidate goes to
    /// `report` (kept ones first, then purged ones, each list by last
    /// activity, then id) and only the counts are returned, so memory stays
    /// flat at any number of users. `progress` hears how many candidates
    /// have been decided each time a chunk commits; what it throws stops the
    /// purge there, with the chunks so far done.
    ///
    /// The candidates are taken in chunks of `purgeChunkSize`, in the order
    /// of their ids, each chunk in a transaction of its own that finds them,
    /// locking each (so nobody becomes active, buys a plan or adds a record
    /// between the decision and the deletion), decides each with
    /// `PurgePolicy`, and deletes the purged ones set-based. Each guest goes
    /// whole or not at all, with its webhook event; an interrupted purge
    /// keeps the chunks that committed, and the same purge run again finds
    /// the rest. One transaction for millions of guests would hold every
    /// lock, and SQLite's WAL (with the index of it SQLite maps into the
    /// process) would grow with it until the end. Chunks follow the ids
    /// because everything a user owns is keyed by the user's id: a chunk
    /// rewrites one stretch of each table, where chunks by last activity
    /// would each rewrite pages all over them.
    /// The decisions wait in spools, sorted by last activity, until the last
    /// chunk commits, so the report lists what is done and never holds a
    /// transaction open.
    public func purge(
        inactive: TimeSpan, includingUsersWithData: Bool, dryRun: Bool, now: Date,
        progress: (_ decided: Int) throws -> Void = { _ in },
        report: (_ candidate: PurgeCandidate, _ purged: Bool) throws -> Void
    ) throws -> (cutoff: Date, tally: PurgeTally) {
        try purge(
            inactive: inactive, includingUsersWithData: includingUsersWithData, dryRun: dryRun, now: now,
            chunkSize: Self.purgeChunkSize, progress: progress, report: report)
    }

    /// `purge(inactive:…)` in chunks of `chunkSize` candidates (tests make
    /// them small).
    func purge(
        inactive: TimeSpan, includingUsersWithData: Bool, dryRun: Bool, now: Date, chunkSize: Int,
        progress: (_ decided: Int) throws -> Void = { _ in },
        report: (_ candidate: PurgeCandidate, _ purged: Bool) throws -> Void
    ) throws -> (cutoff: Date, tally: PurgeTally) {
        try requirePositive(inactive)
        let cutoff = inactive.subtracted(from: now)
        let policy = PurgePolicy(
            profile: profile, cutoff: cutoff, includesUsersWithRecords: includingUsersWithData, now: now)
        let kept = PurgeSpool(sortedByActivity: true)
        let purged = PurgeSpool(sortedByActivity: true)
        var idAfter: String?
        while true {
            var chunkKept = PurgeSpool()
            var chunkPurged = PurgeSpool()
            var lastID: String?
            let decide = { (transaction: any StoreTransaction) throws in
                // A rerun after a serialization failure decides the chunk again from its start.
                chunkKept = PurgeSpool()
                chunkPurged = PurgeSpool()
                lastID = nil
                try transaction.inactiveUsers(
                    state: PurgePolicy.candidateState, lastSeenBefore: cutoff, idAfter: idAfter, limit: chunkSize,
                    locking: !dryRun
                ) { batch in
                    for user in batch {
                        let decision = policy.decision(
                            state: user.state, lastSeenAt: user.lastSeenAt, records: user.records,
                            grants: user.grants)
                        let candidate = PurgeCandidate(id: user.id, lastSeenAt: user.lastSeenAt, records: user.records)
                        try (decision == .delete ? chunkPurged : chunkKept).append(candidate)
                    }
                    lastID = batch.last?.id ?? lastID
                }
                guard !dryRun, chunkPurged.count > 0 else { return }
                try transaction.deleteUsers { add in
                    var ids: [String] = []
                    try chunkPurged.forEach { candidate in
                        ids.append(candidate.id)
                        try transaction.raiseWebhook(
                            .userPurged, user: candidate.id,
                            data: [
                                "last_seen_at": .string(Timestamp.format(candidate.lastSeenAt)),
                                "records": .number(String(candidate.records)),
                            ], at: now, profile: profile)
                        if ids.count == Self.purgeDeletionBatch {
                            try add(ids)
                            ids.removeAll(keepingCapacity: true)
                        }
                    }
                    if !ids.isEmpty { try add(ids) }
                }
            }
            // A dry run changes nothing, so it only reads, and locks nobody.
            if dryRun { try store.read(decide) } else { try store.write(decide) }
            try chunkKept.forEach { try kept.append($0) }
            try chunkPurged.forEach { try purged.append($0) }
            try progress(kept.count + purged.count)
            guard chunkKept.count + chunkPurged.count == chunkSize, let lastID else { break }
            idAfter = lastID
        }
        try kept.forEach { try report($0, false) }
        try purged.forEach { try report($0, true) }
        return (cutoff, PurgeTally(purged: purged.count, kept: kept.count))
    }

    private func requirePositive(_ inactive: TimeSpan) throws {
        guard !inactive.isZero, inactive.components.allSatisfy({ $0.amount > 0 }) else {
            throw GuestModeError(
                .badDuration, "the inactivity must be a positive duration, not '\(inactive)'")
        }
    }

    /// Checks a legacy anonymous username and secret. On success the user's
    /// last-seen time moves to `now`, a hash of an older scheme or cost is
    /// replaced by a current one, and the user is returned; an unknown
    /// username or a wrong secret returns nil alike, after comparable work,
    /// so callers cannot tell which usernames exist.
    public func verifyAnonymousCredentials(username: String, secret: String, now: Date) throws -> User? {
        guard let stored = try store.read({ transaction in try transaction.credentials(username: username) }) else {
            SecretHash.verifyNothing(secret)
            return nil
        }
        // Verified outside any transaction: hashing is slow on purpose.
        let verification = try SecretHash.verify(secret, against: stored.secretHash)
        guard verification.isMatch else { return nil }
        let upgraded = verification == .matchesButNeedsRehash ? try SecretHash.make(secret) : nil
        return try recordAnonymousSignIn(
            username: username, verifiedHash: stored.secretHash, upgradedHash: upgraded, now: now)
    }

    /// Records a successful verification of a legacy secret: moves the
    /// user's last-seen time forward to `now`, and when `upgradedHash` is
    /// given replaces the stored hash with it, but only if the stored hash is
    /// still `verifiedHash` (a concurrent change wins). Returns the user, or
    /// nil when the credentials are gone (the user linked or was deleted
    /// meanwhile) and nothing was changed.
    func recordAnonymousSignIn(
        username: String, verifiedHash: String, upgradedHash: String?, now: Date
    ) throws
        -> User?
    {
        try store.write { transaction in
            guard let found = try transaction.credentials(username: username) else { return nil }
            // The user's lock orders this sign-in after a link (which removes
            // the credentials) or a deletion that got there first; they are
            // read again once it is held, so credentials gone meanwhile change nothing.
            guard try transaction.user(found.userID, locking: true) != nil,
                let current = try transaction.credentials(username: username), current.userID == found.userID
            else { return nil }
            if let upgradedHash, current.secretHash == verifiedHash {
                try transaction.setSecretHash(of: current.userID, to: upgradedHash)
            }
            try transaction.advanceLastSeen(of: current.userID, to: now)
            return try transaction.user(current.userID, locking: false)
        }
    }
}
