import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteStore: UserStore {
    public func createUser(_ user: User, credentials: StoredCredentials?) throws {
        try write { db in try insertWithCredentials(user, credentials, db) }
    }

    private func insertWithCredentials(_ user: User, _ credentials: StoredCredentials?, _ db: Database) throws {
        do {
            try insert(user, db)
            guard let credentials else { return }
            if try Bool.fetchOne(
                db, sql: "SELECT 1 FROM credentials WHERE username = ?", arguments: [credentials.username]) == true
            {
                throw GuestModeError(
                    .conflict, code: .usernameTaken, "the anonymous username '\(credentials.username)' is already taken"
                )
            }
            try db.execute(
                sql: "INSERT INTO credentials (user_id, username, secret_hash, created_at) VALUES (?, ?, ?, ?)",
                arguments: [
                    user.id, credentials.username, credentials.secretHash, Timestamp.format(credentials.createdAt),
                ])
        }
    }

    public func createUserUnlessDeviceKnown(
        _ user: User, credentials: StoredCredentials?
    ) throws -> (user: User, created: Bool) {
        // One IMMEDIATE transaction: a second process waits for the first, then finds its user.
        return try writeDurably { db in
            if let device = user.device,
                let id = try String.fetchOne(
                    db, sql: "SELECT id FROM users WHERE device = ? ORDER BY created_at, id LIMIT 1",
                    arguments: [device])
            {
                return (try requireUser(id, db), false)
            }
            try insertWithCredentials(user, credentials, db)
            return (user, true)
        }
    }

    public func user(id: String) throws -> User {
        try read { db in try requireUser(id, db) }
    }

    public func users(state: UserState?, lastSeenBefore: Date?) throws -> [UserSummary] {
        try read { db in
            var clauses: [String] = []
            var arguments: [any DatabaseValueConvertible] = []
            if let state {
                clauses.append("u.state = ?")
                arguments.append(state.rawValue)
            }
            if let lastSeenBefore {
                clauses.append("u.last_seen_at < ?")
                arguments.append(Timestamp.format(lastSeenBefore))
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
            return try rows.map { row in
                UserSummary(
                    id: try row.decode(forColumn: "id"),
                    state: try row.decode("state", as: UserState.self),
                    createdAt: try row.time("created_at"),
                    lastSeenAt: try row.time("last_seen_at"),
                    identities: try row.decode(forColumn: "identities"), records: try row.decode(forColumn: "records"))
            }
        }
    }

    public func userOverview(id: String) throws -> UserOverview {
        try read { db in
            let user = try requireUser(id, db)
            let hasCredentials =
                try Bool.fetchOne(db, sql: "SELECT 1 FROM credentials WHERE user_id = ?", arguments: [id]) ?? false
            var records: [String: Int] = [:]
            for row in try Row.fetchAll(
                db, sql: "SELECT collection, COUNT(*) AS n FROM records WHERE owner_id = ? GROUP BY collection",
                arguments: [id])
            {
                records[try row.decode(forColumn: "collection")] = try row.decode(forColumn: "n")
            }
            return UserOverview(
                user: user, identities: try identities(of: id, db), hasAnonymousCredentials: hasCredentials,
                counters: try counters(of: id, db), records: records, grants: try planGrants(of: id, db))
        }
    }

    public func deleteUser(id: String) throws {
        try write { db in
            _ = try requireUser(id, db)
            try deleteEverything(of: id, db)
        }
    }

    public func purgeUsers(
        under policy: PurgePolicy, isDryRun: Bool, report: (_ candidate: PurgeCandidate, _ purged: Bool) throws -> Void
    ) throws -> PurgeTally {
        let tally = try write { db in
            try useBulkCache(db)
            let cutoff = Timestamp.format(policy.cutoff)
            // Every candidate's decision goes to a temporary table (memory
            // stays flat), then each table is cleared with one statement.
            try db.execute(
                sql: """
                    DROP TABLE IF EXISTS temp.guestmode_purge;
                    CREATE TEMP TABLE guestmode_purge (
                        purged INTEGER NOT NULL, last_seen_at TEXT NOT NULL, id TEXT NOT NULL,
                        records INTEGER NOT NULL, PRIMARY KEY (purged, last_seen_at, id)) WITHOUT ROWID;
                    """)
            // The grants of candidates (few hold one); whether one is in force is the policy's call.
            var grants: [String: [PlanGrant]] = [:]
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT p.* FROM plans p JOIN users u ON u.id = p.user_id
                    WHERE u.state = ? AND u.last_seen_at < ?
                    ORDER BY p.granted_at, p.id
                    """,
                arguments: [UserState.anonymous.rawValue, cutoff])
            {
                grants[try row.decode(forColumn: "user_id"), default: []].append(try Self.planGrant(row))
            }
            // The candidates: the SQL form of `PurgePolicy.isCandidate`.
            let candidates = try Row.fetchCursor(
                db,
                sql: """
                    SELECT u.id, u.state, u.last_seen_at,
                        (SELECT COUNT(*) FROM records r WHERE r.owner_id = u.id) AS records
                    FROM users u
                    WHERE u.state = ? AND u.last_seen_at < ?
                    """,
                arguments: [UserState.anonymous.rawValue, cutoff])
            let insert = try db.cachedStatement(
                sql: "INSERT INTO temp.guestmode_purge (id, last_seen_at, records, purged) VALUES (?, ?, ?, ?)")
            var tally = PurgeTally(purged: 0, kept: 0)
            while let row = try candidates.next() {
                let id: String = try row.decode(forColumn: "id")
                let lastSeen: String = try row.decode(forColumn: "last_seen_at")
                let lastSeenAt = try row.time("last_seen_at")
                let records: Int = try row.decode(forColumn: "records")
                let decision = policy.decision(
                    state: try row.decode("state", as: UserState.self), lastSeenAt: lastSeenAt, records: records,
                    grants: grants[id] ?? [])
                let purged = decision == .delete
                if purged { tally.purged += 1 } else { tally.kept += 1 }
                try insert.execute(arguments: [id, lastSeen, records, purged])
            }
            if !isDryRun && tally.purged > 0 {
                for table in [
                    "records WHERE owner_id", "conflict_archive WHERE owner_id", "outbox WHERE user_id",
                    "user_flags WHERE user_id", "users WHERE id",
                ] {
                    try db.execute(sql: "DELETE FROM \(table) IN (SELECT id FROM temp.guestmode_purge WHERE purged)")
                }
            }
            return tally
        }
        // The report, streamed from the temporary table once the purge is
        // committed: kept ones first, each list by last activity, then id.
        // The table is the writer connection's own, so the report is read
        // there too: a pool's readers do not see it.
        defer { _ = try? write { db in try db.execute(sql: "DROP TABLE IF EXISTS temp.guestmode_purge") } }
        try write { db in
            for purged in [false, true] {
                let rows = try Row.fetchCursor(
                    db,
                    sql:
                        "SELECT id, last_seen_at, records FROM temp.guestmode_purge WHERE purged = ? ORDER BY last_seen_at, id",
                    arguments: [purged])
                while let row = try rows.next() {
                    try report(
                        PurgeCandidate(
                            id: try row.decode(forColumn: "id"),
                            lastSeenAt: try row.time("last_seen_at"),
                            records: try row.decode(forColumn: "records")),
                        purged)
                }
            }
        }
        return tally
    }

    public func anonymousCredentials(username: String) throws -> StoredCredentials? {
        try read { db in
            try Row.fetchOne(
                db, sql: "SELECT user_id, username, secret_hash, created_at FROM credentials WHERE username = ?",
                arguments: [username]
            ).map { row in
                StoredCredentials(
                    userID: try row.decode(forColumn: "user_id"), username: try row.decode(forColumn: "username"),
                    secretHash: try row.decode(forColumn: "secret_hash"),
                    createdAt: try row.time("created_at"))
            }
        }
    }

    public func recordAnonymousSignIn(
        username: String, verifiedHash: String, upgradedHash: String?, now: Date
    ) throws
        -> User?
    {
        try write { db in
            guard
                let userID = try String.fetchOne(
                    db, sql: "SELECT user_id FROM credentials WHERE username = ?", arguments: [username])
            else { return nil }
            if let upgradedHash {
                try db.execute(
                    sql: "UPDATE credentials SET secret_hash = ? WHERE username = ? AND secret_hash = ?",
                    arguments: [upgradedHash, username, verifiedHash])
            }
            try touch(userID, at: now, db)
            return try findUser(userID, db)
        }
    }

    /// One row of `plans` as the engine's grant.
    static func planGrant(_ row: Row) throws -> PlanGrant {
        PlanGrant(
            plan: try row.decode(forColumn: "plan"),
            grantedAt: try row.time("granted_at"),
            trialEndsAt: try row.optionalTime("trial_ends_at"),
            endsAt: try row.optionalTime("ends_at"),
            revokedAt: try row.optionalTime("revoked_at"))
    }
}
