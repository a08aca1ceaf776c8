import Foundation
import GuestModeKit

extension PostgresStore: UserStore {
    /// How many users one purge batch fetches, locks and deletes: large
    /// enough that a purge of a million guests takes a few hundred round
    /// trips, small enough that no result or parameter grows with the store.
    static let purgeBatchSize = 2000

    public func createUser(_ user: User, credentials: StoredCredentials?) throws {
        try write { connection in try insertWithCredentials(user, credentials, connection) }
    }

    public func createUserUnlessDeviceKnown(
        _ user: User, credentials: StoredCredentials?
    ) throws -> (user: User, created: Bool) {
        try write { connection in
            if let device = user.device {
                // Concurrent creations for one device queue on this lock; the later ones find the first's user.
                try connection.execute(
                    "SELECT pg_advisory_xact_lock(hashtext($1)) IS NULL AS locked",
                    [PostgresValue("guestmode-device:" + device)])
                if let row = try connection.execute(
                    "SELECT id FROM users WHERE device = $1 ORDER BY created_at, id COLLATE \"C\" LIMIT 1",
                    [PostgresValue(device)]
                ).first {
                    return (try requireUser(try row.string("id"), connection), false)
                }
            }
            try insertWithCredentials(user, credentials, connection)
            return (user, true)
        }
    }

    private func insertWithCredentials(
        _ user: User, _ credentials: StoredCredentials?, _ connection: PostgresConnection
    ) throws {
        do {
            try insert(user, connection)
            guard let credentials else { return }
            // ON CONFLICT instead of a check first: a concurrent creation of the
            // same username on another connection waits for ours and then
            // finds it taken, rather than failing the transaction with a
            // unique violation after the check said it was free.
            let inserted = try connection.execute(
                """
                INSERT INTO credentials (user_id, username, secret_hash, created_at) VALUES ($1, $2, $3, $4)
                ON CONFLICT (username) DO NOTHING
                """,
                [
                    PostgresValue(user.id), PostgresValue(credentials.username), PostgresValue(credentials.secretHash),
                    PostgresValue(credentials.createdAt),
                ]
            ).changes
            if inserted == 0 {
                // Thrown inside the transaction, so the user inserted above is rolled back.
                throw GuestModeError(
                    .conflict, code: .usernameTaken, "the anonymous username '\(credentials.username)' is already taken"
                )
            }
        }
    }

    public func user(id: String) throws -> User {
        try read { connection in try requireUser(id, connection) }
    }

    public func users(state: UserState?, lastSeenBefore: Date?) throws -> [UserSummary] {
        try read { connection in
            var clauses: [String] = []
            var parameters: [PostgresValue?] = []
            if let state {
                parameters.append(PostgresValue(state.rawValue))
                clauses.append("u.state = $\(parameters.count)")
            }
            if let lastSeenBefore {
                parameters.append(PostgresValue(lastSeenBefore))
                clauses.append("u.last_seen_at < $\(parameters.count)")
            }
            let whereClause = clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
            // COLLATE "C": ids tie-break byte by byte, as in SQLite, whatever the database's locale.
            return try connection.execute(
                """
                SELECT u.id, u.state, u.created_at, u.last_seen_at,
                    (SELECT count(*) FROM identities i WHERE i.user_id = u.id) AS identities,
                    (SELECT count(*) FROM records r WHERE r.owner_id = u.id) AS records
                FROM users u \(whereClause) ORDER BY u.created_at COLLATE "C", u.id COLLATE "C"
                """,
                parameters
            ).map { row in
                UserSummary(
                    id: try row.string("id"), state: try row.decode("state", as: UserState.self),
                    createdAt: try row.date("created_at"), lastSeenAt: try row.date("last_seen_at"),
                    identities: try row.int("identities"), records: try row.int("records"))
            }
        }
    }

    public func userOverview(id: String) throws -> UserOverview {
        try read { connection in
            let user = try requireUser(id, connection)
            let hasCredentials =
                try connection.execute("SELECT 1 FROM credentials WHERE user_id = $1", [PostgresValue(id)]).count > 0
            var records: [String: Int] = [:]
            for row in try connection.execute(
                "SELECT collection, count(*) AS n FROM records WHERE owner_id = $1 GROUP BY collection",
                [PostgresValue(id)])
            {
                records[try row.string("collection")] = try row.int("n")
            }
            return UserOverview(
                user: user, identities: try identities(of: id, connection), hasAnonymousCredentials: hasCredentials,
                counters: try counters(of: id, connection), records: records,
                grants: try planGrants(of: id, connection))
        }
    }

    public func deleteUser(id: String) throws {
        try write { connection in
            // Locked so a concurrent write to the user finishes (or waits) rather than racing the deletion.
            _ = try requireUser(id, locking: true, connection)
            try deleteEverything(of: id, connection)
        }
    }

    /// Walks the candidates through a cursor, a batch at a time: each batch is
    /// locked as it is fetched (so nobody becomes active, buys a plan or adds
    /// a record between the decision and the deletion), its record counts and
    /// grants are read for that batch only, and its victims are deleted with
    /// one statement per table. No result and no parameter grows with the
    /// number of users; only the returned selection does.
    public func purgeUsers(
        under policy: PurgePolicy, isDryRun: Bool, report: (_ candidate: PurgeCandidate, _ purged: Bool) throws -> Void
    ) throws -> PurgeTally {
        // The report is read back from the temporary table the purge wrote, which only its connection sees.
        try withSession { try purgeUsersInOneSession(under: policy, isDryRun: isDryRun, report: report) }
    }

    private func purgeUsersInOneSession(
        under policy: PurgePolicy, isDryRun: Bool, report: (_ candidate: PurgeCandidate, _ purged: Bool) throws -> Void
    ) throws -> PurgeTally {
        let tally = try write { connection in
            // Every decision goes to a temporary table (memory stays flat);
            // then each table is cleared with one statement. Ordered as SQLite
            // orders: by last activity (fixed-width text), then id byte by byte.
            try connection.execute(
                """
                DROP TABLE IF EXISTS pg_temp.guestmode_purge;
                CREATE TEMP TABLE guestmode_purge (
                    purged boolean NOT NULL, last_seen_at text COLLATE "C" NOT NULL, id text COLLATE "C" NOT NULL,
                    records integer NOT NULL, PRIMARY KEY (purged, last_seen_at, id), UNIQUE (id))
                """)
            // A dry run changes nothing, so it need not hold anyone's lock.
            try connection.execute(
                """
                DECLARE guestmode_purge NO SCROLL CURSOR FOR
                SELECT id, state, last_seen_at FROM users
                WHERE state = $1 AND last_seen_at < $2\(isDryRun ? "" : " FOR UPDATE")
                """,
                [PostgresValue(UserState.anonymous.rawValue), PostgresValue(policy.cutoff)])
            while true {
                let batch = try connection.execute("FETCH \(PostgresStore.purgeBatchSize) FROM guestmode_purge")
                if batch.count == 0 { break }
                var rows: [(id: String, state: UserState, lastSeen: String)] = []
                for row in batch {
                    rows.append(
                        (
                            try row.string("id"), try row.decode("state", as: UserState.self),
                            try row.string("last_seen_at")
                        ))
                }
                let ids = PostgresStore.userIDArray(rows.map(\.id))
                var records: [String: Int] = [:]
                for row in try connection.execute(
                    "SELECT owner_id, count(*) AS n FROM records WHERE owner_id = ANY($1::text[]) GROUP BY owner_id",
                    [ids])
                {
                    records[try row.string("owner_id")] = try row.int("n")
                }
                // Whether a grant is in force is the policy's call; the store only gathers them.
                var grants: [String: [PlanGrant]] = [:]
                for row in try connection.execute(
                    "SELECT * FROM plans WHERE user_id = ANY($1::text[]) ORDER BY granted_at, id", [ids])
                {
                    grants[try row.string("user_id"), default: []].append(try PostgresStore.planGrant(row))
                }
                var counts: [String] = []
                var decisions: [String] = []
                for row in rows {
                    guard let lastSeenAt = Timestamp.parse(row.lastSeen) else {
                        throw GuestModeError(
                            .badData, code: .corruptStore,
                            "the PostgreSQL store \(connection.location) holds '\(row.lastSeen)' in last_seen_at, not a time"
                        )
                    }
                    let count = records[row.id] ?? 0
                    let decision = policy.decision(
                        state: row.state, lastSeenAt: lastSeenAt, records: count, grants: grants[row.id] ?? [])
                    counts.append(String(count))
                    decisions.append(decision == .delete ? "t" : "f")
                }
                // A row updated while we waited for its lock is re-read; never count one twice.
                try connection.execute(
                    """
                    INSERT INTO pg_temp.guestmode_purge (purged, last_seen_at, id, records)
                    SELECT * FROM unnest($1::boolean[], $2::text[], $3::text[], $4::integer[])
                    ON CONFLICT DO NOTHING
                    """,
                    [
                        PostgresValue("{" + decisions.joined(separator: ",") + "}"),
                        PostgresStore.userIDArray(rows.map(\.lastSeen)), ids,
                        PostgresValue("{" + counts.joined(separator: ",") + "}"),
                    ])
            }
            try connection.execute("CLOSE guestmode_purge")
            var tally = PurgeTally(purged: 0, kept: 0)
            for row in try connection.execute(
                "SELECT purged, count(*) AS n FROM pg_temp.guestmode_purge GROUP BY purged")
            {
                if try row.bool("purged") { tally.purged = try row.int("n") } else { tally.kept = try row.int("n") }
            }
            if !isDryRun && tally.purged > 0 {
                try connection.execute("ANALYZE pg_temp.guestmode_purge")
                for table in [
                    "records WHERE owner_id", "conflict_archive WHERE owner_id", "outbox WHERE user_id",
                    "user_flags WHERE user_id", "users WHERE id",
                ] {
                    try connection.execute(
                        "DELETE FROM \(table) IN (SELECT id FROM pg_temp.guestmode_purge WHERE purged)")
                }
            }
            return tally
        }
        // The report, streamed from this connection's temporary table once
        // the purge is committed: kept ones first.
        defer {
            _ = try? write { connection in try connection.execute("DROP TABLE IF EXISTS pg_temp.guestmode_purge") }
        }
        try read { connection in
            try connection.execute(
                """
                DECLARE guestmode_purge_report NO SCROLL CURSOR FOR
                SELECT purged, id, last_seen_at, records FROM pg_temp.guestmode_purge ORDER BY purged, last_seen_at, id
                """)
            while true {
                let batch = try connection.execute(
                    "FETCH \(PostgresStore.purgeBatchSize) FROM guestmode_purge_report")
                if batch.count == 0 { break }
                for row in batch {
                    try report(
                        PurgeCandidate(
                            id: try row.string("id"), lastSeenAt: try row.date("last_seen_at"),
                            records: try row.int("records")),
                        try row.bool("purged"))
                }
            }
            try connection.execute("CLOSE guestmode_purge_report")
        }
        return tally
    }

    public func anonymousCredentials(username: String) throws -> StoredCredentials? {
        try read { connection in
            try connection.execute(
                "SELECT user_id, username, secret_hash, created_at FROM credentials WHERE username = $1",
                [PostgresValue(username)]
            ).first.map { row in
                StoredCredentials(
                    userID: try row.string("user_id"), username: try row.string("username"),
                    secretHash: try row.string("secret_hash"), createdAt: try row.date("created_at"))
            }
        }
    }

    public func recordAnonymousSignIn(
        username: String, verifiedHash: String, upgradedHash: String?, now: Date
    ) throws
        -> User?
    {
        try write { connection in
            guard
                let userID = try connection.execute(
                    "SELECT user_id FROM credentials WHERE username = $1", [PostgresValue(username)]
                ).first?.string("user_id")
            else { return nil }
            // The user's lock orders this sign-in after a link (which removes the
            // credentials) or a deletion that got there first; read again once
            // it is held, so credentials gone meanwhile change nothing.
            guard try findUser(userID, locking: true, connection) != nil,
                try connection.execute(
                    "SELECT 1 FROM credentials WHERE username = $1 AND user_id = $2",
                    [PostgresValue(username), PostgresValue(userID)]
                ).count > 0
            else { return nil }
            if let upgradedHash {
                // Compare-and-set: a hash replaced since it was verified stays.
                try connection.execute(
                    "UPDATE credentials SET secret_hash = $1 WHERE username = $2 AND secret_hash = $3",
                    [PostgresValue(upgradedHash), PostgresValue(username), PostgresValue(verifiedHash)])
            }
            try touch(userID, at: now, connection)
            return try findUser(userID, connection)
        }
    }

    /// A `text[]` parameter in the array syntax of the text protocol: every
    /// element double-quoted, with `\` and `"` escaped, so any id survives.
    static func userIDArray(_ ids: [String]) -> PostgresValue {
        var text = "{"
        for (index, id) in ids.enumerated() {
            if index > 0 { text += "," }
            text += "\""
            for character in id.unicodeScalars {
                if character == "\\" || character == "\"" { text += "\\" }
                text.unicodeScalars.append(character)
            }
            text += "\""
        }
        return PostgresValue(text + "}")
    }

    /// One row of `plans` as the engine's grant.
    static func planGrant(_ row: PostgresRow) throws -> PlanGrant {
        PlanGrant(
            plan: try row.string("plan"), grantedAt: try row.date("granted_at"),
            trialEndsAt: try row.optionalDate("trial_ends_at"), endsAt: try row.optionalDate("ends_at"),
            revokedAt: try row.optionalDate("revoked_at"))
    }
}
