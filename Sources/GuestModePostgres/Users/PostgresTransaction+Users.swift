import Foundation
import GuestModeKit

extension PostgresTransaction {
    func insertUser(_ user: User) throws {
        try store.insert(user, connection)
    }

    func users(_ ids: [String], locking: Bool) throws -> [String: User] {
        guard !ids.isEmpty else { return [:] }
        // Locked in one order, so two transactions locking overlapping users cannot each wait for the other.
        let rows = try connection.execute(
            """
            SELECT * FROM users WHERE id = ANY($1::text[]) ORDER BY id COLLATE "C"\(locking ? " FOR UPDATE" : "")
            """,
            [PostgresValue.textArray(ids)])
        var users: [String: User] = [:]
        for row in rows {
            let user = try store.user(from: row)
            users[user.id] = user
        }
        return users
    }

    func insertUsers(_ users: [User]) throws {
        guard !users.isEmpty else { return }
        try connection.execute(
            """
            INSERT INTO users (id, device, state, prompt_state, created_at, last_seen_at, linked_at)
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
            """,
            [
                PostgresValue.textArray(users.map(\.id)), PostgresValue.textArray(users.map(\.device)),
                PostgresValue.textArray(users.map(\.state.rawValue)), PostgresValue.textArray(users.map(\.promptState)),
                PostgresValue.textArray(users.map { Timestamp.format($0.createdAt) }),
                PostgresValue.textArray(users.map { Timestamp.format($0.lastSeenAt) }),
                PostgresValue.textArray(users.map { $0.linkedAt.map(Timestamp.format) }),
            ])
    }

    func oldestUser(device: String, locking: Bool) throws -> User? {
        if locking {
            // Transactions asking for one device queue on this lock; the later ones find the first's user.
            try connection.execute(
                "SELECT pg_advisory_xact_lock(hashtext($1)) IS NULL AS locked",
                [PostgresValue("guestmode-device:" + device)])
        }
        return try connection.execute(
            "SELECT * FROM users WHERE device = $1 ORDER BY created_at COLLATE \"C\", id COLLATE \"C\" LIMIT 1",
            [PostgresValue(device)]
        ).first.map(store.user(from:))
    }

    func userSummaries(state: UserState?, lastSeenBefore: Date?) throws -> [UserSummary] {
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
        return try connection.execute(Self.summaries(where: clauses.joined(separator: " AND ")), parameters)
            .map(Self.summary(of:))
    }

    func userSummaries(_ lookup: UserLookup) throws -> [UserSummary] {
        let (condition, arguments) = Self.condition(of: lookup)
        return try connection.execute(
            Self.summaries(where: condition), arguments.map { PostgresValue($0) as PostgresValue? }
        )
        .map(Self.summary(of:))
    }

    /// The WHERE clause of a lookup, each answered from an index: the identities' primary key,
    /// `identities_email` (its expression and condition written as the index has them), `users_device`.
    /// lower() under COLLATE "C" folds ASCII letters only, as SQLite's does.
    static func condition(of lookup: UserLookup) -> (String, [String]) {
        switch lookup {
        case let .identity(provider, subject):
            ("u.id IN (SELECT user_id FROM identities WHERE provider = $1 AND subject = $2)", [provider, subject])
        case let .email(address):
            (
                """
                u.id IN (SELECT user_id FROM identities
                    WHERE (email IS NOT NULL OR provider = 'email')
                        AND lower(coalesce(email, subject) COLLATE "C") = lower($1::text COLLATE "C"))
                """, [address]
            )
        case let .device(device):
            ("u.device = $1", [device])
        }
    }

    /// The user listing's query. COLLATE "C": ids tie-break byte by byte, as in SQLite, whatever the
    /// database's locale (and the order `users_device` keeps).
    static func summaries(where condition: String) -> String {
        """
        SELECT u.id, u.state, u.created_at, u.last_seen_at,
            (SELECT count(*) FROM identities i WHERE i.user_id = u.id) AS identities,
            (SELECT count(*) FROM records r WHERE r.owner_id = u.id) AS records
        FROM users u \(condition.isEmpty ? "" : "WHERE " + condition)
        ORDER BY u.created_at COLLATE "C", u.id COLLATE "C"
        """
    }

    private static func summary(of row: PostgresRow) throws -> UserSummary {
        UserSummary(
            id: try row.string("id"), state: try row.decode("state", as: UserState.self),
            createdAt: try row.date("created_at"), lastSeenAt: try row.date("last_seen_at"),
            identities: try row.int("identities"), records: try row.int("records"))
    }

    func insertCredentials(_ credentials: StoredCredentials) throws -> Bool {
        // ON CONFLICT instead of a check first: a concurrent insert of the
        // same username on another connection waits for ours and then finds
        // it taken, rather than failing the transaction with a unique
        // violation after the check said it was free.
        try connection.execute(
            """
            INSERT INTO credentials (user_id, username, secret_hash, created_at) VALUES ($1, $2, $3, $4)
            ON CONFLICT (username) DO NOTHING
            """,
            [
                PostgresValue(credentials.userID), PostgresValue(credentials.username),
                PostgresValue(credentials.secretHash), PostgresValue(credentials.createdAt),
            ]
        ).changes == 1
    }

    func credentials(username: String) throws -> StoredCredentials? {
        try connection.execute(
            "SELECT user_id, username, secret_hash, created_at FROM credentials WHERE username = $1",
            [PostgresValue(username)]
        ).first.map(storedCredentials)
    }

    func credentials(of userID: String) throws -> StoredCredentials? {
        try connection.execute(
            "SELECT user_id, username, secret_hash, created_at FROM credentials WHERE user_id = $1",
            [PostgresValue(userID)]
        ).first.map(storedCredentials)
    }

    func setSecretHash(of userID: String, to secretHash: String) throws {
        try connection.execute(
            "UPDATE credentials SET secret_hash = $1 WHERE user_id = $2",
            [PostgresValue(secretHash), PostgresValue(userID)])
    }

    func deleteUser(_ id: String) throws {
        try store.deleteEverything(of: id, connection)
    }

    /// Walks the users through a cursor, a batch at a time: with `locking`,
    /// each batch is locked as it is fetched, and its record counts and
    /// grants are read for that batch only, once its locks are held.
    func inactiveUsers(
        state: UserState, lastSeenBefore cutoff: Date, idAfter: String?, limit: Int, locking: Bool,
        _ body: ([InactiveUser]) throws -> Void
    ) throws {
        var parameters = [PostgresValue(state.rawValue), PostgresValue(cutoff)]
        if let idAfter { parameters.append(PostgresValue(idAfter)) }
        // In the order of the primary key's own collation, so the key's index serves it, and
        // `id > $3` goes on where the previous chunk ended in that same order.
        try connection.execute(
            """
            DECLARE guestmode_inactive NO SCROLL CURSOR FOR
            SELECT id, state, last_seen_at FROM users
            WHERE state = $1 AND last_seen_at < $2\(idAfter == nil ? "" : " AND id > $3")
            ORDER BY id LIMIT \(limit)\(locking ? " FOR UPDATE" : "")
            """,
            parameters)
        do {
            while true {
                let rows = try connection.execute("FETCH \(PostgresStore.purgeBatchSize) FROM guestmode_inactive")
                if rows.count == 0 { break }
                var batch: [InactiveUser] = []
                for row in rows {
                    batch.append(
                        InactiveUser(
                            id: try row.string("id"), state: try row.decode("state", as: UserState.self),
                            lastSeenAt: try row.date("last_seen_at"), records: 0, grants: []))
                }
                let ids = PostgresStore.userIDArray(batch.map(\.id))
                var records: [String: Int] = [:]
                for row in try connection.execute(
                    "SELECT owner_id, count(*) AS n FROM records WHERE owner_id = ANY($1::text[]) GROUP BY owner_id",
                    [ids])
                {
                    records[try row.string("owner_id")] = try row.int("n")
                }
                var grants: [String: [PlanGrant]] = [:]
                for row in try connection.execute(
                    "SELECT * FROM plans WHERE user_id = ANY($1::text[]) ORDER BY granted_at, id", [ids])
                {
                    grants[try row.string("user_id"), default: []].append(try PostgresStore.planGrant(row))
                }
                for index in batch.indices {
                    batch[index].records = records[batch[index].id] ?? 0
                    batch[index].grants = grants[batch[index].id] ?? []
                }
                try body(batch)
            }
        } catch {
            _ = try? connection.execute("CLOSE guestmode_inactive")
            throw error
        }
        try connection.execute("CLOSE guestmode_inactive")
    }

    func deleteUsers(listing: (_ add: ([String]) throws -> Void) throws -> Void) throws {
        // The ids go to a temporary table (memory stays flat), then each
        // table is cleared with one statement; the others cascade from users.
        try connection.execute("CREATE TEMP TABLE guestmode_doomed (id text PRIMARY KEY) ON COMMIT DROP")
        try listing { ids in
            try connection.execute(
                "INSERT INTO pg_temp.guestmode_doomed (id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING",
                [PostgresStore.userIDArray(ids)])
        }
        try connection.execute("ANALYZE pg_temp.guestmode_doomed")
        for table in [
            "records WHERE owner_id", "conflict_archive WHERE owner_id", "outbox WHERE user_id",
            "user_flags WHERE user_id", "users WHERE id",
        ] {
            try connection.execute("DELETE FROM \(table) IN (SELECT id FROM pg_temp.guestmode_doomed)")
        }
        try connection.execute("DROP TABLE pg_temp.guestmode_doomed")
    }

    private func storedCredentials(_ row: PostgresRow) throws -> StoredCredentials {
        StoredCredentials(
            userID: try row.string("user_id"), username: try row.string("username"),
            secretHash: try row.string("secret_hash"), createdAt: try row.date("created_at"))
    }
}

extension PostgresStore {
    /// How many users one `inactiveUsers` batch fetches and locks: large
    /// enough that a purge of a million guests takes a few hundred round
    /// trips, small enough that no result or parameter grows with the store.
    static let purgeBatchSize = 2000

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
