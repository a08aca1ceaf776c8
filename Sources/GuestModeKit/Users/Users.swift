import Crypto
import Foundation
import GRDB

public struct User: Codable, Sendable, Equatable {
    public var id: String
    public var device: String?
    public var state: UserState
    public var promptState: String
    public var createdAt: Date
    public var lastSeenAt: Date
    public var linkedAt: Date?

    /// The user's first activity: a guest exists from its first event.
    public var firstSeenAt: Date { createdAt }
}

public struct Identity: Codable, Sendable, Equatable {
    public var provider: String
    public var subject: String
    public var email: String?
    public var linkedAt: Date
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
    /// Only users not seen for at least this many days before `now`.
    public var inactiveDays: Int?

    public init(state: UserState? = nil, inactiveDays: Int? = nil) {
        self.state = state
        self.inactiveDays = inactiveDays
    }
}

public struct UserSummary: Codable, Sendable, Equatable {
    public var id: String
    public var state: UserState
    public var createdAt: Date
    public var lastSeenAt: Date
    public var identities: Int
    public var records: Int
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
}

public struct PurgeReport: Codable, Sendable {
    public var inactiveDays: Int
    public var cutoff: Date
    public var purged: [PurgeCandidate]
    /// Inactive guests kept because they own records or hold an active plan.
    public var kept: [PurgeCandidate]
    public var isDryRun: Bool
}

extension GuestMode {
    public func createGuest(device: String?, credentials: AnonymousCredentials? = nil, now: Date) throws -> User {
        let user = User(
            id: UUID().uuidString.lowercased(), device: device, state: .anonymous, promptState: "anonymous",
            createdAt: now, lastSeenAt: now, linkedAt: nil)
        try store.write { db in
            try store.insert(user, db)
            if let credentials {
                if try Bool.fetchOne(db, sql: "SELECT 1 FROM credentials WHERE username = ?", arguments: [credentials.username]) == true {
                    throw GuestModeError.conflict(
                        "the anonymous username '\(credentials.username)' is already taken", code: "username_taken")
                }
                try db.execute(
                    sql: "INSERT INTO credentials (user_id, username, secret_hash, created_at) VALUES (?, ?, ?, ?)",
                    arguments: [user.id, credentials.username, SecretHash.make(credentials.secret), Timestamp.format(now)])
            }
        }
        return user
    }

    public func user(_ id: String) throws -> User {
        try store.read { db in try store.requireUser(id, db) }
    }

    public func users(matching filter: UserFilter, now: Date) throws -> [UserSummary] {
        try store.read { db in
            var clauses: [String] = []
            var arguments: [any DatabaseValueConvertible] = []
            if let state = filter.state {
                clauses.append("u.state = ?")
                arguments.append(state.rawValue)
            }
            if let days = filter.inactiveDays {
                clauses.append("u.last_seen_at < ?")
                arguments.append(Timestamp.format(TimeSpan(amount: days, unit: .days).subtracted(from: now)))
            }
            let whereClause = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT u.id, u.state, u.created_at, u.last_seen_at,
                        (SELECT COUNT(*) FROM identities i WHERE i.user_id = u.id) AS identities,
                        (SELECT COUNT(*) FROM records r WHERE r.owner_id = u.id) AS records
                    FROM users u \(whereClause) ORDER BY u.created_at, u.id
                    """,
                arguments: StatementArguments(arguments))
            return rows.map { row in
                UserSummary(
                    id: row["id"], state: UserState(rawValue: row["state"]) ?? .anonymous,
                    createdAt: Timestamp.parse(row["created_at"]) ?? .distantPast,
                    lastSeenAt: Timestamp.parse(row["last_seen_at"]) ?? .distantPast,
                    identities: row["identities"], records: row["records"])
            }
        }
    }

    public func details(of id: String, now: Date) throws -> UserDetails {
        let (user, identities, hasCredentials, counters, records) = try store.read { db in
            let user = try store.requireUser(id, db)
            let identities = try store.identities(of: id, db)
            let hasCredentials = try Bool.fetchOne(db, sql: "SELECT 1 FROM credentials WHERE user_id = ?", arguments: [id]) ?? false
            let counters = try store.counters(of: id, db)
            var records: [String: Int] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT collection, COUNT(*) AS n FROM records WHERE owner_id = ? GROUP BY collection", arguments: [id])
            {
                records[row["collection"]] = row["n"]
            }
            return (user, identities, hasCredentials, counters, records)
        }
        return UserDetails(
            user: user, tier: try tier(of: id, now: now), identities: identities,
            hasAnonymousCredentials: hasCredentials, counters: counters, records: records,
            meters: try profile.meters.map { try meterStatus(user: id, meter: $0.name, now: now) },
            plans: try plans(of: id, now: now))
    }

    /// Deletes a user and everything it owns, nothing else.
    public func deleteUser(_ id: String) throws {
        try store.write { db in
            _ = try store.requireUser(id, db)
            try store.deleteEverything(of: id, db)
        }
    }

    /// Removes anonymous users inactive for `inactiveDays`. Users that own
    /// records are kept unless `includingUsersWithData`; users holding an
    /// active plan are always kept, since they paid.
    public func purge(inactiveDays: Int, includingUsersWithData: Bool, dryRun: Bool, now: Date) throws -> PurgeReport {
        let cutoff = TimeSpan(amount: inactiveDays, unit: .days).subtracted(from: now)
        let nowText = Timestamp.format(now)
        return try store.write { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT u.id, u.last_seen_at,
                        (SELECT COUNT(*) FROM records r WHERE r.owner_id = u.id) AS records,
                        EXISTS (SELECT 1 FROM plans p WHERE p.user_id = u.id AND p.revoked_at IS NULL
                            AND (p.trial_ends_at IS NULL OR p.trial_ends_at > ?)
                            AND (p.ends_at IS NULL OR p.ends_at > ?)) AS has_plan
                    FROM users u
                    WHERE u.state = 'anonymous' AND u.last_seen_at < ?
                    ORDER BY u.last_seen_at, u.id
                    """,
                arguments: [nowText, nowText, Timestamp.format(cutoff)])
            var purged: [PurgeCandidate] = []
            var kept: [PurgeCandidate] = []
            for row in rows {
                let candidate = PurgeCandidate(
                    id: row["id"], lastSeenAt: Timestamp.parse(row["last_seen_at"]) ?? .distantPast, records: row["records"])
                let hasPlan: Bool = row["has_plan"]
                if hasPlan || (candidate.records > 0 && !includingUsersWithData) {
                    kept.append(candidate)
                } else {
                    purged.append(candidate)
                }
            }
            if !dryRun {
                for candidate in purged { try store.deleteEverything(of: candidate.id, db) }
            }
            return PurgeReport(
                inactiveDays: inactiveDays, cutoff: cutoff, purged: purged, kept: kept, isDryRun: dryRun)
        }
    }
}

/// Salted, iterated SHA-256 for legacy anonymous secrets: enough that the
/// store never holds a secret that can be read back.
enum SecretHash {
    static let iterations = 2_000

    static func make(_ secret: String, salt: [UInt8]? = nil) -> String {
        let salt = salt ?? (0..<16).map { _ in UInt8.random(in: 0...255) }
        var digest = Array(secret.utf8)
        for _ in 0..<iterations {
            var hasher = SHA256()
            hasher.update(data: salt)
            hasher.update(data: digest)
            digest = Array(hasher.finalize())
        }
        let hex = { (bytes: [UInt8]) in bytes.map { String(format: "%02x", $0) }.joined() }
        return "sha256i\(iterations)$\(hex(salt))$\(hex(digest))"
    }
}
