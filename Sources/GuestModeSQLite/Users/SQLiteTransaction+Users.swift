import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteTransaction {
    /// How many users one `inactiveUsers` batch hands over.
    static let inactiveBatchSize = 1000
    /// How many purged guests one round of DELETE statements removes.
    static let purgeDeletionRange = 20000

    func insertUser(_ user: User) throws {
        try store.insert(user, db)
    }

    func oldestUser(device: String, locking: Bool) throws -> User? {
        // The write transaction is IMMEDIATE: a second process waits for the first, then finds its user.
        guard
            let id = try String.fetchOne(
                db.statement("SELECT id FROM users WHERE device = ? ORDER BY created_at, id LIMIT 1"),
                arguments: [device])
        else { return nil }
        return try store.findUser(id, db)
    }

    func userSummaries(state: UserState?, lastSeenBefore: Date?) throws -> [UserSummary] {
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
        return try Row.fetchAll(
            db, sql: Self.summaries(where: clauses.joined(separator: " AND ")),
            arguments: StatementArguments(arguments)
        ).map(Self.summary(of:))
    }

    func userSummaries(_ lookup: UserLookup) throws -> [UserSummary] {
        let (condition, arguments) = Self.condition(of: lookup)
        return try Row.fetchAll(db, sql: Self.summaries(where: condition), arguments: StatementArguments(arguments))
            .map(Self.summary(of:))
    }

    /// The WHERE clause of a lookup, each answered from an index: the identities' primary key,
    /// `identities_email` (the partial index's condition repeated so it applies), `users_device`.
    static func condition(of lookup: UserLookup) -> (String, [String]) {
        switch lookup {
        case let .identity(provider, subject):
            ("u.id IN (SELECT user_id FROM identities WHERE provider = ? AND subject = ?)", [provider, subject])
        case let .email(address):
            (
                """
                u.id IN (SELECT user_id FROM identities
                    WHERE (email IS NOT NULL OR provider = 'email') AND lower(coalesce(email, subject)) = lower(?))
                """, [address]
            )
        case let .device(device):
            ("u.device = ?", [device])
        }
    }

    /// The user listing's query, its rows in creation order.
    static func summaries(where condition: String) -> String {
        """
        SELECT u.id, u.state, u.created_at, u.last_seen_at,
            (SELECT COUNT(*) FROM identities i WHERE i.user_id = u.id) AS identities,
            (SELECT COUNT(*) FROM records r WHERE r.owner_id = u.id) AS records
        FROM users u \(condition.isEmpty ? "" : "WHERE " + condition) ORDER BY u.created_at, u.id
        """
    }

    private static func summary(of row: Row) throws -> UserSummary {
        UserSummary(
            id: try row.decode(forColumn: "id"), state: try row.decode("state", as: UserState.self),
            createdAt: try row.time("created_at"), lastSeenAt: try row.time("last_seen_at"),
            identities: try row.decode(forColumn: "identities"), records: try row.decode(forColumn: "records"))
    }

    func insertCredentials(_ credentials: StoredCredentials) throws -> Bool {
        try db.execute(
            sql: """
                INSERT INTO credentials (user_id, username, secret_hash, created_at) VALUES (?, ?, ?, ?)
                ON CONFLICT(username) DO NOTHING
                """,
            arguments: [
                credentials.userID, credentials.username, credentials.secretHash,
                Timestamp.format(credentials.createdAt),
            ])
        return db.changesCount == 1
    }

    func credentials(username: String) throws -> StoredCredentials? {
        try Row.fetchOne(
            db.statement(
                "SELECT user_id, username, secret_hash, created_at FROM credentials WHERE username = ?"),
            arguments: [username]
        ).map(storedCredentials)
    }

    func credentials(of userID: String) throws -> StoredCredentials? {
        try Row.fetchOne(
            db.statement(
                "SELECT user_id, username, secret_hash, created_at FROM credentials WHERE user_id = ?"),
            arguments: [userID]
        ).map(storedCredentials)
    }

    func setSecretHash(of userID: String, to secretHash: String) throws {
        try db.execute(
            sql: "UPDATE credentials SET secret_hash = ? WHERE user_id = ?", arguments: [secretHash, userID])
    }

    func deleteUser(_ id: String) throws {
        try store.deleteEverything(of: id, db)
    }

    func inactiveUsers(
        state: UserState, lastSeenBefore cutoff: Date, idAfter: String?, limit: Int, locking: Bool,
        _ body: ([InactiveUser]) throws -> Void
    ) throws {
        // One pass over the primary key: SQLite's default page cache is
        // enough, and leaves the bulk cache's memory to the deletions.
        try store.useScanCache(db)
        var arguments: StatementArguments = [state.rawValue, Timestamp.format(cutoff)]
        if let idAfter { arguments += [idAfter] }
        // The unary + keeps SQLite from answering through users_state_last_seen, which
        // would read every candidate of the store to sort out the first `limit` by id.
        let candidates = try Row.fetchCursor(
            db,
            sql: """
                SELECT u.id, u.state, u.last_seen_at,
                    (SELECT COUNT(*) FROM records r WHERE r.owner_id = u.id) AS records
                FROM users u
                WHERE +u.state = ? AND +u.last_seen_at < ?\(idAfter == nil ? "" : " AND u.id > ?")
                ORDER BY u.id LIMIT \(limit)
                """,
            arguments: arguments)
        var batch: [InactiveUser] = []
        batch.reserveCapacity(Self.inactiveBatchSize)
        func handOver() throws {
            // The grants of the batch's stretch of ids: few guests hold one.
            var grants: [String: [PlanGrant]] = [:]
            for row in try Row.fetchAll(
                db,
                sql: """
                    SELECT * FROM plans WHERE user_id >= ? AND user_id <= ?
                    ORDER BY granted_at, id
                    """,
                arguments: [batch[0].id, batch[batch.count - 1].id])
            {
                grants[try row.decode(forColumn: "user_id"), default: []].append(try store.planGrant(row))
            }
            for index in batch.indices { batch[index].grants = grants[batch[index].id] ?? [] }
            try body(batch)
            batch.removeAll(keepingCapacity: true)
        }
        while let row = try candidates.next() {
            batch.append(
                InactiveUser(
                    id: try row.decode(forColumn: "id"), state: try row.decode("state", as: UserState.self),
                    lastSeenAt: try row.time("last_seen_at"), records: try row.decode(forColumn: "records"),
                    grants: []))
            if batch.count == Self.inactiveBatchSize { try handOver() }
        }
        if !batch.isEmpty { try handOver() }
    }

    func deleteUsers(listing: (_ add: ([String]) throws -> Void) throws -> Void) throws {
        try store.useBulkCache(db)
        // The ids go to a temporary table (memory stays flat), then each
        // table is cleared with one statement; the others cascade from users.
        try db.execute(
            sql: """
                DROP TABLE IF EXISTS temp.guestmode_doomed;
                CREATE TEMP TABLE guestmode_doomed (id TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
                """)
        let insert = try db.makeStatement(sql: "INSERT OR IGNORE INTO temp.guestmode_doomed (id) VALUES (?)")
        try listing { ids in
            for id in ids { try insert.execute(arguments: [id]) }
        }
        // A DELETE with foreign-key actions first collects every rowid it will
        // delete, in memory (24 bytes a row: 21 MB for 890,000 guests), so
        // the ids go in ranges of `purgeDeletionRange`, each table in turn.
        let tables = [
            "records WHERE owner_id", "conflict_archive WHERE owner_id", "outbox WHERE user_id",
            "user_flags WHERE user_id", "users WHERE id",
        ]
        var lower: String?
        while true {
            let range = lower == nil ? "" : "WHERE id > ?"
            let arguments: StatementArguments = lower.map { [$0] } ?? []
            guard
                let upper = try String.fetchOne(
                    db,
                    sql: """
                        SELECT max(id) FROM (SELECT id FROM temp.guestmode_doomed \(range)
                        ORDER BY id LIMIT \(Self.purgeDeletionRange))
                        """,
                    arguments: arguments)
            else { break }
            let bounds = lower == nil ? "id <= ?" : "id > ? AND id <= ?"
            for table in tables {
                try db.execute(
                    sql: "DELETE FROM \(table) IN (SELECT id FROM temp.guestmode_doomed WHERE \(bounds))",
                    arguments: lower.map { [$0, upper] } ?? [upper])
            }
            lower = upper
        }
        try db.execute(sql: "DROP TABLE temp.guestmode_doomed")
    }

    private func storedCredentials(_ row: Row) throws -> StoredCredentials {
        StoredCredentials(
            userID: try row.decode(forColumn: "user_id"), username: try row.decode(forColumn: "username"),
            secretHash: try row.decode(forColumn: "secret_hash"), createdAt: try row.time("created_at"))
    }
}

extension SQLiteStore {
    /// One row of `plans` as the engine's grant.
    func planGrant(_ row: Row) throws -> PlanGrant {
        PlanGrant(
            plan: try row.decode(forColumn: "plan"), grantedAt: try row.time("granted_at"),
            trialEndsAt: try row.optionalTime("trial_ends_at"), endsAt: try row.optionalTime("ends_at"),
            revokedAt: try row.optionalTime("revoked_at"))
    }
}
