import Foundation
import GuestModeKit

extension PostgresStore: TransferStore {
    public func checkTransfer(of guest: String, into account: String) throws {
        try read { connection in _ = try checkTransfer(of: guest, into: account, locking: false, connection) }
    }

    public func previewTransfer(
        of guest: String, into account: String, steps: [TransferStep], profile: Profile
    ) throws
        -> [TransferStepPreview]
    {
        try read { connection in
            _ = try checkTransfer(of: guest, into: account, locking: false, connection)
            let transfer = PostgresTransfer(
                store: self, profile: profile, source: guest, target: account, now: .distantPast)
            return try steps.map { step in
                var rows = 0
                if step.movesActivity { rows += try transfer.activityCount(connection) }
                rows += try transfer.recordCount(step.collections, connection)
                if step.removesGuest { rows += 1 }
                return TransferStepPreview(
                    rows: rows, conflicts: try transfer.conflicts(in: step.collections, policy: .union, connection))
            }
        }
    }

    public func mergeGuest(
        _ guest: String, into account: String, policy: MergePolicy, dryRun: Bool, profile: Profile, now: Date
    ) throws -> MergeReport {
        if dryRun {
            // A read-only snapshot: the report is what a merge would do now, and nothing is locked or written.
            return try read { connection in
                let target = try checkTransfer(of: guest, into: account, locking: false, connection)
                let transfer = PostgresTransfer(store: self, profile: profile, source: guest, target: account, now: now)
                let conflicts = try transfer.conflicts(in: nil, policy: policy, connection)
                var overCap: [CollectionLimit] = []
                for collection in profile.collections {
                    var limit = try collectionLimit(
                        of: target, collection: collection.name, profile: profile, now: now, connection)
                    let incoming = try transfer.recordCount([collection.name], connection)
                    let merged = conflicts.filter { $0.collection == collection.name && $0.resolution != .keptBoth }
                        .count
                    limit.used = (limit.used ?? 0) + incoming - merged
                    if limit.isOverCap { overCap.append(limit) }
                }
                return MergeReport(
                    guest: guest, account: account, policy: policy,
                    // As the merge counts them: a guest record that loses to the account's is archived, not moved.
                    recordsMoved: try transfer.recordCount(nil, connection)
                        - conflicts.filter { $0.resolution == .keptAccount }.count,
                    activityMoved: try transfer.activityCount(connection), conflicts: conflicts, overCap: overCap,
                    isDryRun: true, journalID: nil)
            }
        }
        return try writeMovingData { connection in
            // Both users stay locked until the merge commits: a concurrent merge, migration step or
            // write to either waits, and then sees the guest gone.
            _ = try checkTransfer(of: guest, into: account, locking: true, connection)
            var transfer = PostgresTransfer(store: self, profile: profile, source: guest, target: account, now: now)
            transfer.journalID = try connection.execute(
                """
                INSERT INTO migration_journals (kind, source_id, target_id, status, started_at, finished_at)
                VALUES ('merge', $1, $2, 'done', $3, $4) RETURNING id
                """,
                [PostgresValue(guest), PostgresValue(account), PostgresValue(now), PostgresValue(now)]
            ).first?.int64("id")
            let activity = try transfer.moveActivity(connection)
            let records = try transfer.moveRecords(nil, policy: policy, connection)
            _ = try transfer.removeSource(connection)
            let overCap = try overCapLimits(
                of: try requireUser(account, connection), profile: profile, now: now, connection)
            return MergeReport(
                guest: guest, account: account, policy: policy, recordsMoved: records.moved, activityMoved: activity,
                conflicts: records.conflicts, overCap: overCap, isDryRun: false, journalID: transfer.journalID)
        }
    }

    public func adoptOwnerlessRecords(user userID: String, profile: Profile, now: Date) throws -> AdoptReport {
        let owner = profile.guestOwner
        return try writeMovingData { connection in
            // The user's lock makes a second adoption by the same user wait and then see what is left.
            // Idempotent per record: an adopted record is no longer the guest owner's, so a later run
            // adopts only what appeared since. The flag only says the user adopted before.
            _ = try requireUser(userID, locking: true, connection)
            let adoptedBefore =
                try connection.execute(
                    "SELECT 1 AS present FROM user_flags WHERE user_id = $1 AND flag = 'adopted'",
                    [PostgresValue(userID)]
                ).first != nil
            var moved: [String: Int] = [:]
            var collisions: [AdoptReport.Collision] = []
            // The guest owner is not a user row, so its records are locked instead: another user adopting
            // at the same time waits, then skips the records that are no longer the guest owner's.
            let rows = try connection.execute(
                """
                SELECT collection, key FROM records WHERE owner_id = $1
                ORDER BY collection COLLATE "C", key COLLATE "C" FOR UPDATE
                """,
                [PostgresValue(owner)])
            for row in rows {
                let collection = try row.string("collection")
                let key = try row.string("key")
                let keyAfter = profile.adoptedKey(key, collection: collection, user: userID)
                if try connection.execute(
                    "SELECT 1 AS present FROM records WHERE owner_id = $1 AND collection = $2 AND key = $3",
                    [PostgresValue(userID), PostgresValue(collection), PostgresValue(keyAfter)]
                ).first != nil {
                    collisions.append(AdoptReport.Collision(collection: collection, key: key, keyAfter: keyAfter))
                    continue
                }
                let updated = try connection.execute(
                    "UPDATE records SET owner_id = $1, key = $2 WHERE owner_id = $3 AND collection = $4 AND key = $5",
                    [
                        PostgresValue(userID), PostgresValue(keyAfter), PostgresValue(owner), PostgresValue(collection),
                        PostgresValue(key),
                    ])
                if updated.changes == 1 { moved[collection, default: 0] += 1 }
            }
            if !moved.isEmpty {
                if !adoptedBefore {
                    try connection.execute(
                        "INSERT INTO user_flags (user_id, flag, set_at) VALUES ($1, 'adopted', $2) ON CONFLICT DO NOTHING",
                        [PostgresValue(userID), PostgresValue(now)])
                }
                try noteChange(of: userID, profile: profile, now: now, connection)
            }
            return AdoptReport(user: userID, moved: moved, collisions: collisions, wasAlreadyAdopted: adoptedBefore)
        }
    }

    /// Both users as they are in this transaction, the pair refused unless
    /// the engine's rule allows it. Returns the account. With `locking`,
    /// both rows are locked in the order of their ids, so two transfers
    /// touching the same pair (in either direction) never deadlock.
    @discardableResult
    func checkTransfer(
        of guest: String, into account: String, locking: Bool, _ connection: PostgresConnection
    ) throws -> User {
        let found = try users([guest, account], locking: locking, connection)
        // A missing user gets the shared not-found error, guest first as in SQLiteStore.
        let source = try found[guest] ?? requireUser(guest, locking: locking, connection)
        let target = try found[account] ?? requireUser(account, locking: locking, connection)
        try source.checkCanMove(into: target)
        return target
    }

    /// The users of `ids` that exist; with `locking`, locked one at a time
    /// in sorted id order (the store-wide rule for multi-user transactions).
    func users(_ ids: [String], locking: Bool, _ connection: PostgresConnection) throws -> [String: User] {
        var found: [String: User] = [:]
        for id in Set(ids).sorted() {
            if let user = try findUser(id, locking: locking, connection) { found[id] = user }
        }
        return found
    }

    func overCapLimits(
        of user: User, profile: Profile, now: Date, _ connection: PostgresConnection
    ) throws
        -> [CollectionLimit]
    {
        try profile.collections.map {
            try collectionLimit(of: user, collection: $0.name, profile: profile, now: now, connection)
        }
        .filter(\.isOverCap)
    }

    /// One write transaction for data people cannot re-create (migrations,
    /// merges, adoption, imports, profile upgrades): its commit waits for the
    /// server's WAL flush whatever the server's default, as SQLite's
    /// `synchronous=FULL` does for the same operations.
    func writeMovingData<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try write { connection in
            try connection.execute("SET LOCAL synchronous_commit TO on")
            return try body(connection)
        }
    }
}

extension PostgresValue {
    /// `values` as one `text[]` parameter (`= ANY($n::text[])`), so a list
    /// of any length is still a single parameter and never SQL text.
    static func textArray(_ values: [String]) -> PostgresValue {
        let elements = values.map { value in
            "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                + "\""
        }
        return PostgresValue("{" + elements.joined(separator: ",") + "}")
    }
}

/// Moving one user's data into another's inside a transaction: the steps
/// shared by a journaled migration step and a merge (as `SQLiteTransfer`).
struct PostgresTransfer {
    let store: PostgresStore
    let profile: Profile
    let source: String
    let target: String
    let now: Date
    var journalID: Int64?

    /// Counters, events, usage, plans, prompt history, experiments: what a
    /// user did rather than what it stored. Returns the rows moved.
    func moveActivity(_ connection: PostgresConnection) throws -> Int {
        // The guest must still be there: a concurrent run that already moved it is a conflict, and a
        // missing row must never null the account's times.
        guard try store.findUser(source, locking: false, connection) != nil else {
            throw GuestModeError(
                .conflict, code: .guestAlreadyMoved,
                "the guest '\(source)' is no longer in the store: another run has already moved or removed it")
        }
        var moved = 0
        let suffix = "@" + source
        let pair = [PostgresValue(target), PostgresValue(source)]
        // Idempotency keys stay unique per user: a key both users used is
        // kept on the guest's row under a suffix, so nothing is dropped.
        try connection.execute(
            """
            UPDATE events SET idempotency_key = idempotency_key || $1
            WHERE user_id = $2 AND idempotency_key IN (SELECT idempotency_key FROM events WHERE user_id = $3)
            """,
            [PostgresValue(suffix), PostgresValue(source), PostgresValue(target)])
        moved += try connection.execute("UPDATE events SET user_id = $1 WHERE user_id = $2", pair).changes
        moved += try connection.execute(
            """
            INSERT INTO counters (user_id, action, total)
            SELECT $1, action, total FROM counters WHERE user_id = $2
            ON CONFLICT (user_id, action) DO UPDATE SET total = counters.total + excluded.total
            """,
            pair
        ).changes
        try connection.execute("DELETE FROM counters WHERE user_id = $1", [PostgresValue(source)])
        try connection.execute(
            """
            UPDATE meter_usage SET idempotency_key = idempotency_key || $1
            WHERE user_id = $2 AND idempotency_key IN
                (SELECT idempotency_key FROM meter_usage m WHERE m.user_id = $3 AND m.meter = meter_usage.meter)
            """,
            [PostgresValue(suffix), PostgresValue(source), PostgresValue(target)])
        moved += try connection.execute("UPDATE meter_usage SET user_id = $1 WHERE user_id = $2", pair).changes
        moved += try connection.execute(
            """
            INSERT INTO meter_warnings (user_id, meter, period_start, percent, level, fired_at)
            SELECT $1, meter, period_start, percent, level, fired_at FROM meter_warnings WHERE user_id = $2
            ON CONFLICT DO NOTHING
            """,
            pair
        ).changes
        try connection.execute("DELETE FROM meter_warnings WHERE user_id = $1", [PostgresValue(source)])
        for table in ["plans", "prompt_outcomes"] {
            moved += try connection.execute("UPDATE \(table) SET user_id = $1 WHERE user_id = $2", pair).changes
        }
        // The account's own assignment and flags win: they are what it has seen.
        for (table, columns) in [
            ("experiment_assignments", "experiment, variant, assigned_at"), ("user_flags", "flag, set_at"),
        ] {
            moved += try connection.execute(
                """
                INSERT INTO \(table) (user_id, \(columns)) SELECT $1, \(columns) FROM \(table) WHERE user_id = $2
                ON CONFLICT DO NOTHING
                """,
                pair
            ).changes
            try connection.execute("DELETE FROM \(table) WHERE user_id = $1", [PostgresValue(source)])
        }
        // The person was first seen as the guest. Times compare as text in
        // byte order, as in SQLite.
        try connection.execute(
            """
            UPDATE users SET
                created_at = (SELECT least(users.created_at COLLATE "C", s.created_at) FROM users s WHERE s.id = $1),
                last_seen_at = (SELECT greatest(users.last_seen_at COLLATE "C", s.last_seen_at) FROM users s WHERE s.id = $1)
            WHERE id = $2
            """,
            [PostgresValue(source), PostgresValue(target)])
        return moved
    }

    /// The guest's records of `collections` (all when nil) that share a key
    /// with the account's, and how `policy` settles each.
    func conflicts(
        in collections: [String]?, policy: MergePolicy, _ connection: PostgresConnection
    ) throws
        -> [RecordConflict]
    {
        let filter = collectionFilter(collections, alias: "g", parameter: 3)
        let rows = try connection.execute(
            """
            SELECT g.collection, g.key, g.updated_at AS guest_updated, g.data AS guest_data,
                a.updated_at AS account_updated, a.data AS account_data
            FROM records g JOIN records a ON a.owner_id = $1 AND a.collection = g.collection AND a.key = g.key
            WHERE g.owner_id = $2 \(filter.sql)
            ORDER BY g.collection COLLATE "C", g.key COLLATE "C"
            """,
            [PostgresValue(target), PostgresValue(source)] + filter.parameters)
        return try rows.map { row in
            let collection = try row.string("collection")
            let key = try row.string("key")
            return try RecordConflict.settling(
                collection: collection, key: key,
                guest: RecordVersion(data: try row.string("guest_data"), updatedAt: try row.date("guest_updated")),
                account: RecordVersion(
                    data: try row.string("account_data"), updatedAt: try row.date("account_updated")),
                policy: policy, rule: profile.collection(named: collection)?.onMergeConflict ?? .newestWins,
                freeKey: { try freeKey(for: key, collection: collection, connection) })
        }
    }

    /// Moves the guest's records of `collections` (all when nil), settling
    /// conflicts by `policy`; losers go to the conflict archive.
    func moveRecords(
        _ collections: [String]?, policy: MergePolicy, _ connection: PostgresConnection
    ) throws
        -> (moved: Int, conflicts: [RecordConflict])
    {
        let conflicts = try self.conflicts(in: collections, policy: policy, connection)
        try settle(conflicts, connection)
        let filter = collectionFilter(collections, alias: nil, parameter: 3)
        let moved = try connection.execute(
            "UPDATE records SET owner_id = $1 WHERE owner_id = $2 \(filter.sql)",
            [PostgresValue(target), PostgresValue(source)] + filter.parameters)
        return (moved.changes, conflicts)
    }

    /// Archives each conflict's loser, or moves the guest's record aside
    /// when both are kept; a conflict that keeps both without a key for the
    /// guest's record is refused before anything is written.
    func settle(_ conflicts: [RecordConflict], _ connection: PostgresConnection) throws {
        for conflict in conflicts where conflict.resolution == .keptBoth && conflict.guestKeyAfter == nil {
            throw GuestModeError(
                .internalFailure, code: .noFreeKey,
                "no key was chosen for the guest's '\(conflict.key)' in \(conflict.collection)")
        }
        for conflict in conflicts {
            switch conflict.resolution {
            case .keptGuest:
                try archive(
                    owner: target, collection: conflict.collection, key: conflict.key,
                    reason: "lost to the guest's record", connection)
                try delete(owner: target, collection: conflict.collection, key: conflict.key, connection)
            case .keptAccount:
                try archive(
                    owner: source, collection: conflict.collection, key: conflict.key,
                    reason: "lost to the account's record", connection)
                try delete(owner: source, collection: conflict.collection, key: conflict.key, connection)
            case .keptBoth:
                try connection.execute(
                    "UPDATE records SET key = $1 WHERE owner_id = $2 AND collection = $3 AND key = $4",
                    [
                        conflict.guestKeyAfter.map { PostgresValue($0) }, PostgresValue(source),
                        PostgresValue(conflict.collection), PostgresValue(conflict.key),
                    ])
            }
        }
    }

    /// What is left of the guest once everything has moved: credentials,
    /// queued backups, and the user itself.
    func removeSource(_ connection: PostgresConnection) throws -> Int {
        let leftovers =
            try connection.execute(
                "SELECT count(*) AS n FROM records WHERE owner_id = $1", [PostgresValue(source)]
            ).first?.int("n") ?? 0
        guard leftovers == 0 else {
            throw GuestModeError(
                .internalFailure, code: .recordsLeftBehind,
                "\(leftovers) records of '\(source)' were not moved; the guest was kept")
        }
        try store.deleteEverything(of: source, connection)
        try store.noteChange(of: target, profile: profile, now: now, connection)
        return 1
    }

    /// The guest's records of `collections` (all when nil).
    func recordCount(_ collections: [String]?, _ connection: PostgresConnection) throws -> Int {
        let filter = collectionFilter(collections, alias: nil, parameter: 2)
        return try connection.execute(
            "SELECT count(*) AS n FROM records WHERE owner_id = $1 \(filter.sql)",
            [PostgresValue(source)] + filter.parameters
        ).first?.int("n") ?? 0
    }

    func activityCount(_ connection: PostgresConnection) throws -> Int {
        try [
            "events", "counters", "meter_usage", "meter_warnings", "plans", "prompt_outcomes", "experiment_assignments",
            "user_flags",
        ].reduce(0) { total, table in
            total
                + (try connection.execute(
                    "SELECT count(*) AS n FROM \(table) WHERE user_id = $1", [PostgresValue(source)]
                ).first?.int("n") ?? 0)
        }
    }

    private func delete(owner: String, collection: String, key: String, _ connection: PostgresConnection) throws {
        try connection.execute(
            "DELETE FROM records WHERE owner_id = $1 AND collection = $2 AND key = $3",
            [PostgresValue(owner), PostgresValue(collection), PostgresValue(key)])
    }

    /// Keeps a losing record in the account's conflict archive, whichever
    /// side it came from, so it stays with the person and their backups.
    private func archive(
        owner: String, collection: String, key: String, reason: String, _ connection: PostgresConnection
    ) throws {
        try connection.execute(
            """
            INSERT INTO conflict_archive (journal_id, owner_id, collection, key, data, updated_at, reason, archived_at)
            SELECT $1::bigint, $2, collection, key, data, updated_at, $3, $4 FROM records
            WHERE owner_id = $5 AND collection = $6 AND key = $7
            """,
            [
                journalID.map { PostgresValue($0) }, PostgresValue(target),
                PostgresValue("\(reason) (was owned by \(owner))"),
                PostgresValue(now), PostgresValue(owner), PostgresValue(collection), PostgresValue(key),
            ])
    }

    /// The first of the engine's candidate keys that neither user holds.
    private func freeKey(for key: String, collection: String, _ connection: PostgresConnection) throws -> String {
        for candidate in RecordConflict.keptBothKeys(for: key) {
            let isTaken =
                try connection.execute(
                    "SELECT 1 AS taken FROM records WHERE owner_id IN ($1, $2) AND collection = $3 AND key = $4 LIMIT 1",
                    [PostgresValue(source), PostgresValue(target), PostgresValue(collection), PostgresValue(candidate)]
                ).first != nil
            if !isTaken { return candidate }
        }
        // The candidates never run out; this only satisfies the compiler.
        throw GuestModeError(.internalFailure, code: .noFreeKey, "no free key for '\(key)' in \(collection)")
    }

    /// The condition on `collections` (none when nil, nothing when empty),
    /// as one array parameter numbered `parameter`.
    private func collectionFilter(
        _ collections: [String]?, alias: String?, parameter: Int
    )
        -> (sql: String, parameters: [PostgresValue?])
    {
        guard let collections else { return ("", []) }
        if collections.isEmpty { return ("AND false", []) }
        let column = alias.map { "\($0).collection" } ?? "collection"
        return ("AND \(column) = ANY($\(parameter)::text[])", [PostgresValue.textArray(collections)])
    }
}
