import Foundation

public struct User: Codable, Sendable, Equatable {
    public var id: String
    public var device: String?
    public var state: UserState
    public var promptState: String
    public var createdAt: Date
    public var lastSeenAt: Date
    public var linkedAt: Date?

    public init(
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

public struct Identity: Codable, Sendable, Equatable {
    public var provider: String
    public var subject: String
    public var email: String?
    public var linkedAt: Date

    public init(provider: String, subject: String, email: String?, linkedAt: Date) {
        self.provider = provider
        self.subject = subject
        self.email = email
        self.linkedAt = linkedAt
    }
}

/// A legacy anonymous username/secret pair an app kept for a guest; only a
/// salted hash of the secret is stored.
public struct AnonymousCredentials: Sendable {
    public var username: String
    public var secret: String

    public init(username: String, secret: String) {
        self.username = username
        self.secret = secret
    }
}

public struct UserFilter: Sendable {
    public var state: UserState?
    /// Only users not seen for at least this long before `now`.
    public var inactive: TimeSpan?

    public init(state: UserState? = nil, inactive: TimeSpan? = nil) {
        self.state = state
        self.inactive = inactive
    }

    public init(state: UserState? = nil, inactiveDays: Int?) {
        self.init(state: state, inactive: inactiveDays.map { TimeSpan(amount: $0, unit: .days) })
    }
}

public struct UserSummary: Codable, Sendable, Equatable {
    public var id: String
    public var state: UserState
    public var createdAt: Date
    public var lastSeenAt: Date
    public var identities: Int
    public var records: Int

    public init(id: String, state: UserState, createdAt: Date, lastSeenAt: Date, identities: Int, records: Int) {
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
    public var user: User
    public var tier: TierLevel
    public var identities: [Identity]
    public var hasAnonymousCredentials: Bool
    public var counters: [String: Int]
    public var records: [String: Int]
    public var meters: [MeterStatus]
    public var plans: [PlanStatus]
}

public struct PurgeCandidate: Codable, Sendable, Equatable {
    public var id: String
    public var lastSeenAt: Date
    public var records: Int

    public init(id: String, lastSeenAt: Date, records: Int) {
        self.id = id
        self.lastSeenAt = lastSeenAt
        self.records = records
    }
}

/// What `guest new` did: created a user, or found the one of its device.
public struct GuestCreation: Sendable {
    public var user: User
    public var created: Bool

    public init(user: User, created: Bool) {
        self.user = user
        self.created = created
    }
}

public struct PurgeReport: Codable, Sendable {
    /// The inactivity asked for, in the short form (`90d`, `3 months`).
    public var inactive: String
    /// The same in whole days when it is whole days (`90d`, `2w`), else null.
    public var inactiveDays: Int?
    public var cutoff: Date
    public var purged: [PurgeCandidate]
    /// Inactive guests kept because they own records or hold an active plan.
    public var kept: [PurgeCandidate]
    public var isDryRun: Bool
}

extension GuestMode {
    /// Creates an anonymous user, optionally keeping a legacy anonymous
    /// username with a slow salted hash of its secret.
    public func createGuest(device: String?, credentials: AnonymousCredentials? = nil, now: Date) throws -> User {
        let (user, stored) = try newGuest(device: device, credentials: credentials, now: now)
        try store.createUser(user, credentials: stored)
        return user
    }

    /// Like `createGuest`, but idempotent per device: when a user with
    /// `device` exists, that user is returned (`created` false) and nothing
    /// is written, since a device id survives a reinstall. Credentials given
    /// with a known device are not stored.
    public func createOrFindGuest(
        device: String?, credentials: AnonymousCredentials? = nil, now: Date
    ) throws -> GuestCreation {
        let (user, stored) = try newGuest(device: device, credentials: credentials, now: now)
        guard device != nil else {
            try store.createUser(user, credentials: stored)
            return GuestCreation(user: user, created: true)
        }
        let result = try store.createUserUnlessDeviceKnown(user, credentials: stored)
        return GuestCreation(user: result.user, created: result.created)
    }

    private func newGuest(
        device: String?, credentials: AnonymousCredentials?, now: Date
    ) throws -> (User, StoredCredentials?) {
        if let device,
            device.isEmpty || device.count > 256
                || device.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        {
            throw GuestModeError.usage(
                "the device id must be 1 to 256 characters without control characters, not \(device.debugDescription)",
                code: .invalidDevice)
        }
        if let username = credentials?.username {
            let trimmed = username.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty, trimmed == username, username.count <= 256,
                !username.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            else {
                throw GuestModeError.usage(
                    "the username must be 1 to 256 characters, without control characters or leading or trailing spaces, not \(username.debugDescription)",
                    code: .invalidUsername)
            }
        }
        let user = User(
            id: UUID().uuidString.lowercased(), device: device, state: .anonymous, promptState: "anonymous",
            createdAt: now, lastSeenAt: now, linkedAt: nil)
        let stored = try credentials.map { credentials in
            StoredCredentials(
                userID: user.id, username: credentials.username, secretHash: try SecretHash.make(credentials.secret),
                createdAt: now)
        }
        return (user, stored)
    }

    public func user(_ id: String) throws -> User {
        try TextRule.check(id, what: "the user id")
        return try store.user(id: id)
    }

    public func users(matching filter: UserFilter, now: Date) throws -> [UserSummary] {
        try store.users(
            state: filter.state,
            lastSeenBefore: filter.inactive.map { $0.subtracted(from: now) })
    }

    /// Everything `user show` reports. The user, its identities, counters,
    /// records and plans (so its tier) come from one read; meter usage is
    /// the meter area's and is read after it, one meter at a time.
    public func details(of id: String, now: Date) throws -> UserDetails {
        try TextRule.check(id, what: "the user id")
        let overview = try store.userOverview(id: id)
        return UserDetails(
            user: overview.user, tier: profile.tier(for: overview.user.state, grants: overview.grants, now: now),
            identities: overview.identities, hasAnonymousCredentials: overview.hasAnonymousCredentials,
            counters: overview.counters, records: overview.records,
            meters: try profile.meters.map { try meterStatus(user: id, meter: $0.name, now: now) },
            plans: profile.planStatuses(of: overview.grants, now: now))
    }

    /// Deletes a user and everything it owns, nothing else.
    public func deleteUser(_ id: String) throws {
        try TextRule.check(id, what: "the user id")
        try store.deleteUser(id: id)
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
    public func purge(inactive: TimeSpan, includingUsersWithData: Bool, dryRun: Bool, now: Date) throws -> PurgeReport {
        try requirePositive(inactive)
        let cutoff = inactive.subtracted(from: now)
        let policy = PurgePolicy(
            profile: profile, cutoff: cutoff, includesUsersWithRecords: includingUsersWithData, now: now)
        let selection = try store.purgeUsers(under: policy, isDryRun: dryRun)
        return PurgeReport(
            inactive: inactive.description,
            inactiveDays: inactive.wholeDays,
            cutoff: cutoff, purged: selection.purged, kept: selection.kept, isDryRun: dryRun
        )
    }

    /// The purge of `purge(inactiveDays:…)`, streamed: each candidate goes to
    /// `report` as the store hands it over (kept ones first, then purged
    /// ones) and only the counts are returned, so memory stays flat.
    public func purge(
        inactive: TimeSpan, includingUsersWithData: Bool, dryRun: Bool, now: Date,
        report: (_ candidate: PurgeCandidate, _ purged: Bool) throws -> Void
    ) throws -> (cutoff: Date, tally: PurgeTally) {
        try requirePositive(inactive)
        let cutoff = inactive.subtracted(from: now)
        let policy = PurgePolicy(
            profile: profile, cutoff: cutoff, includesUsersWithRecords: includingUsersWithData, now: now)
        return (cutoff, try store.purgeUsers(under: policy, isDryRun: dryRun, report: report))
    }

    private func requirePositive(_ inactive: TimeSpan) throws {
        guard !inactive.isZero, inactive.components.allSatisfy({ $0.amount > 0 }) else {
            throw GuestModeError.usage(
                "the inactivity must be a positive duration, not '\(inactive)'", code: .badDuration)
        }
    }

    /// Checks a legacy anonymous username and secret. On success the user's
    /// last-seen time moves to `now`, a hash of an older scheme or cost is
    /// replaced by a current one, and the user is returned; an unknown
    /// username or a wrong secret returns nil alike, after comparable work,
    /// so callers cannot tell which usernames exist.
    public func verifyAnonymousCredentials(username: String, secret: String, now: Date) throws -> User? {
        guard let stored = try store.anonymousCredentials(username: username) else {
            SecretHash.verifyNothing(secret)
            return nil
        }
        let verification = try SecretHash.verify(secret, against: stored.secretHash)
        guard verification.isMatch else { return nil }
        let upgraded = verification == .matchesButNeedsRehash ? try SecretHash.make(secret) : nil
        return try store.recordAnonymousSignIn(
            username: username, verifiedHash: stored.secretHash, upgradedHash: upgraded, now: now)
    }
}
