import Foundation
import GuestModeKit

/// The PostgreSQL backend, for guest populations that live server-side: many
/// processes on many machines share one database.
///
/// Concurrency: every write is one transaction at READ COMMITTED that first
/// locks the rows it decides on (`SELECT … FOR UPDATE` on the user, so caps,
/// meters and idempotency keys of one user are decided one writer at a time
/// across machines), and unique constraints guard identities and keys.
/// Serialization failures and deadlocks rerun the whole transaction a few
/// times; one that outlives its retries, or a lost connection, exits 75 with
/// nothing half-written.
///
/// A CLI process uses its one connection serially; the lock only makes that
/// explicit, so the store can be `Sendable` like the engine requires.
public final class PostgresStore: @unchecked Sendable {
    let connection: PostgresConnection
    /// Every table of guestmode lives in this schema, beside the app's own.
    public let schema: String
    private let lock = NSRecursiveLock()
    /// Transactions nest by joining the outermost one (e.g. binding a profile inside `create`).
    private var transactionDepth = 0

    private init(connection: PostgresConnection, schema: String) {
        self.connection = connection
        self.schema = schema
    }

    /// Opens an existing store. `uri` is a `postgres://` or `postgresql://`
    /// URI, or "" for libpq's defaults from the environment. A store written
    /// by a newer guestmode is refused before anything is written.
    public static func open(uri: String, schema: String = "guestmode", migrating: Bool = true) throws -> PostgresStore {
        let store = try connect(uri: uri, schema: schema)
        try store.refuseUnknownSchema()
        guard try store.schemaExists() else {
            throw GuestModeError(
                .notFound, code: .storeNotFound,
                "no guestmode store in schema '\(schema)' of \(store.connection.location)")
        }
        if migrating, try !store.schemaStatus().pending.isEmpty { _ = try store.applyPendingMigrations { _ in } }
        return store
    }

    /// Creates the store's schema and binds it with `configure`, all in one
    /// transaction. With `replacing`, an existing store in the schema is
    /// dropped in that same transaction, so a failure keeps the old one.
    public static func create(
        uri: String, schema: String = "guestmode", replacing: Bool, configure: (PostgresStore) throws -> Void
    ) throws {
        let store = try connect(uri: uri, schema: schema)
        try store.write { connection in
            try store.lockMigrations(connection)
            if try store.schemaExists() {
                guard replacing else {
                    throw GuestModeError(
                        .cannotCreate, code: .storeExists,
                        "a store already exists in schema '\(schema)' of \(connection.location)")
                }
                try connection.execute("DROP SCHEMA \(store.quotedSchema) CASCADE")
            }
            try connection.execute("CREATE SCHEMA \(store.quotedSchema)")
            try store.migrate(connection, pending: PostgresSchema.migrations.map(\.identifier)) { _ in }
            try configure(store)
        }
    }

    private static func connect(uri: String, schema: String) throws -> PostgresStore {
        guard schema.wholeMatch(of: /[a-z_][a-z0-9_]{0,62}/) != nil else {
            throw GuestModeError.usage(
                "'\(schema)' is not a schema name guestmode uses; use lower-case letters, digits and _",
                code: .invalidSchema)
        }
        let connection = try PostgresConnection(connecting: uri, location: PostgresStore.describe(uri))
        try connection.execute("SET search_path TO \(quote(schema))")
        return PostgresStore(connection: connection, schema: schema)
    }

    /// The URI as it may be printed: never with its password. This is the one
    /// function every message, document and journal names a PostgreSQL store by.
    public static func describe(_ uri: String) -> String {
        if uri.isEmpty { return "postgres: (from the PG* environment)" }
        let shown = PostgresConnection.redacted(uri)
        // libpq's own parser says what the password is; if any spelling of it survived
        // the patterns (a percent-encoded parameter name, say), only the parts that are surely not it are shown.
        if let secret = PostgresConnection.password(in: uri) {
            let decoded = shown.removingPercentEncoding ?? shown
            if shown.contains(secret) || decoded.contains(secret) { return PostgresConnection.passwordlessURI(of: uri) }
        }
        return shown
    }

    /// Names the database and schema for the key file's path: the text the
    /// first releases hashed, kept so an existing deployment finds its key.
    public static func identity(_ uri: String, schema: String) -> String {
        let legacy =
            uri.isEmpty
            ? "postgres: (from the PG* environment)"
            : uri.replacing(/password=\S+/, with: "password=…")
                .replacing(/(postgres(?:ql)?:\/\/[^:@\/\s]*):[^@\s]*@/) { "\($0.output.1):…@" }
        return "\(legacy)#\(schema)"
    }

    var quotedSchema: String { PostgresStore.quote(schema) }

    static func quote(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func pending(_ area: String) -> GuestModeError {
        GuestModeError(.internalFailure, code: .internalFailure, "the PostgreSQL store does not implement \(area) yet")
    }

    // MARK: Transactions

    /// Runs `body` in one transaction, rerun from the start when the server
    /// reports a serialization failure or deadlock.
    func write<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        if transactionDepth > 0 { return try body(connection) }
        transactionDepth += 1
        defer { transactionDepth -= 1 }
        var attempt = 0
        while true {
            attempt += 1
            do {
                try connection.execute("BEGIN")
                let value = try body(connection)
                do {
                    try connection.execute("COMMIT")
                } catch var failure as PostgresFailure {
                    failure.isDuringCommit = true
                    throw failure
                }
                return value
            } catch let failure as PostgresFailure {
                _ = try? connection.execute("ROLLBACK")
                if failure.isRetryable && attempt < 5 { continue }
                throw failure.asGuestModeError
            } catch {
                _ = try? connection.execute("ROLLBACK")
                throw error
            }
        }
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

    /// Reads in one transaction, so every value comes from the same snapshot.
    func read<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        if transactionDepth > 0 { return try body(connection) }
        transactionDepth += 1
        defer { transactionDepth -= 1 }
        do {
            try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            let value = try body(connection)
            try connection.execute("COMMIT")
            return value
        } catch let failure as PostgresFailure {
            _ = try? connection.execute("ROLLBACK")
            throw failure.asGuestModeError
        } catch {
            _ = try? connection.execute("ROLLBACK")
            throw error
        }
    }

    /// Two processes never migrate or create the same database at once.
    func lockMigrations(_ connection: PostgresConnection) throws {
        try connection.execute("SELECT pg_advisory_xact_lock(hashtext('guestmode-schema'))")
    }

    // MARK: Schema history

    private func schemaExists() throws -> Bool {
        try connection.execute(
            "SELECT to_regclass($1) IS NOT NULL AS present", [PostgresValue("\(quotedSchema).schema_migrations")]
        ).first?.bool("present") ?? false
    }

    private func appliedMigrations() throws -> [String] {
        guard try schemaExists() else { return [] }
        return try connection.execute("SELECT identifier FROM schema_migrations ORDER BY applied_order")
            .map { try $0.string("identifier") }
    }

    /// Reads the schema history without writing, so a store from a newer
    /// guestmode is refused untouched.
    private func refuseUnknownSchema() throws {
        let known = Set(PostgresSchema.migrations.map(\.identifier))
        let unknown = try appliedMigrations().filter { !known.contains($0) }
        if !unknown.isEmpty {
            throw GuestModeError.badData(
                "the store in schema '\(schema)' of \(connection.location) was written by a newer guestmode (schema \(unknown.joined(separator: ", "))); this guestmode knows schema up to \(PostgresSchema.migrations.last?.identifier ?? "none"). Upgrade guestmode; the store was not changed",
                code: .storeTooNew)
        }
    }

    private func migrate(_ connection: PostgresConnection, pending: [String], progress: (String) -> Void) throws {
        for identifier in pending {
            guard let migration = PostgresSchema.migrations.first(where: { $0.identifier == identifier }) else {
                continue
            }
            do {
                try connection.execute(migration.sql)
                try connection.execute(
                    "INSERT INTO schema_migrations (identifier, applied_at) VALUES ($1, $2)",
                    [PostgresValue(identifier), PostgresValue(Timestamp.format(Date()))])
            } catch let failure as PostgresFailure {
                throw GuestModeError.badData(
                    "schema migration \(identifier) failed: \(PostgresConnection.redacted(failure.message)); the store is unchanged. Fix the cause and migrate again",
                    code: .schemaMigrationFailed)
            }
            progress(identifier)
        }
    }
}

extension PostgresStore: StoreAdministration {
    public func bindProfile(text: String, origin: String, now: Date) throws {
        let statement = """
            INSERT INTO meta (key, value) VALUES ($1, $2)
            ON CONFLICT (key) DO UPDATE SET value = excluded.value
            """
        let values = [("profile_text", text), ("profile_origin", origin), ("bound_at", Timestamp.format(now))]
        try write { connection in
            for (key, value) in values {
                try connection.execute(statement, [PostgresValue(key), PostgresValue(value)])
            }
        }
    }

    public func boundProfile() throws -> (text: String, origin: String)? {
        try read { connection in
            var values: [String: String] = [:]
            for row in try connection.execute(
                "SELECT key, value FROM meta WHERE key IN ('profile_text', 'profile_origin')")
            {
                values[try row.string("key")] = try row.string("value")
            }
            guard let text = values["profile_text"] else { return nil }
            return (text, values["profile_origin"] ?? "")
        }
    }

    public func boundProfileWithCache() throws -> (text: String, origin: String, cache: ProfileCacheEntry?)? {
        try read { connection in
            var values: [String: String] = [:]
            for row in try connection.execute(
                "SELECT key, value FROM meta WHERE key IN ('profile_text', 'profile_origin', $1, $2)",
                [PostgresValue(ProfileCache.sealMetaKey), PostgresValue(ProfileCache.jsonMetaKey)])
            {
                values[try row.string("key")] = try row.string("value")
            }
            guard let text = values["profile_text"] else { return nil }
            let cache = values[ProfileCache.sealMetaKey].flatMap { key in
                values[ProfileCache.jsonMetaKey].map { ProfileCacheEntry(seal: key, json: $0) }
            }
            return (text, values["profile_origin"] ?? "", cache)
        }
    }

    public func saveProfileCache(_ entry: ProfileCacheEntry) throws {
        let statement = """
            INSERT INTO meta (key, value) VALUES ($1, $2)
            ON CONFLICT (key) DO UPDATE SET value = excluded.value
            """
        try write { connection in
            for (key, value) in [(ProfileCache.sealMetaKey, entry.seal), (ProfileCache.jsonMetaKey, entry.json)] {
                try connection.execute(statement, [PostgresValue(key), PostgresValue(value)])
            }
        }
    }

    public func schemaStatus() throws -> SchemaStatus {
        let applied = try appliedMigrations()
        let pending = PostgresSchema.migrations.map(\.identifier).filter { !applied.contains($0) }
        return SchemaStatus(applied: applied, pending: pending)
    }

    public func applyPendingMigrations(progress: (String) -> Void) throws -> [String] {
        try write { connection in
            try lockMigrations(connection)
            let applied = try appliedMigrations()
            let pending = PostgresSchema.migrations.map(\.identifier).filter { !applied.contains($0) }
            try migrate(connection, pending: pending, progress: progress)
            return pending
        }
    }

    /// The server keeps its own pages consistent and enforces the foreign
    /// keys it has validated; this checks that the schema is current, that no
    /// constraint was left unvalidated, that rows kept without a foreign key
    /// (the outbox, flags, archived conflicts) still have their user, and the
    /// rules of guestmode's data that constraints cannot state.
    public func integrityProblems() throws -> [String] {
        let pending = try schemaStatus().pending
        return try read { connection in
            var problems: [String] = pending.map { "schema migration \($0) is not applied" }
            for row in try connection.execute(
                """
                SELECT conrelid::regclass::text AS relation, conname FROM pg_constraint
                WHERE connamespace = $1::regnamespace AND NOT convalidated ORDER BY 1, 2
                """, [PostgresValue(schema)])
            {
                problems.append(
                    "constraint \(try row.string("conname")) of \(try row.string("relation")) is not validated")
            }
            for (table, column) in [("outbox", "user_id"), ("user_flags", "user_id"), ("conflict_archive", "owner_id")]
            {
                for row in try connection.execute(
                    """
                    SELECT DISTINCT t.\(column) AS owner FROM \(table) t
                    WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = t.\(column)) ORDER BY 1
                    """)
                {
                    problems.append("\(table) has rows of user \(try row.string("owner")), who is not in the store")
                }
            }
            for row in try connection.execute(
                """
                SELECT u.id FROM users u
                WHERE u.state = 'linked' AND NOT EXISTS (SELECT 1 FROM identities i WHERE i.user_id = u.id)
                ORDER BY u.id
                """)
            {
                problems.append("user \(try row.string("id")) is linked but has no identity")
            }
            for row in try connection.execute(
                """
                SELECT c.user_id, c.action, c.total, coalesce(e.total, 0) AS counted
                FROM counters c
                LEFT JOIN (SELECT user_id, action, sum(count) AS total FROM events GROUP BY user_id, action) e
                    ON e.user_id = c.user_id AND e.action = c.action
                WHERE c.total <> coalesce(e.total, 0)
                ORDER BY c.user_id, c.action
                """)
            {
                problems.append(
                    "counter \(try row.string("action")) of user \(try row.string("user_id")) is \(try row.int64("total")) but its events add up to \(try row.string("counted"))"
                )
            }
            for row in try connection.execute(
                """
                SELECT user_id, action, total FROM counters WHERE total < 0 ORDER BY user_id, action
                """)
            {
                problems.append(
                    "counter \(try row.string("action")) of user \(try row.string("user_id")) holds \(try row.int64("total")), not a whole number from 0 to \(Bounds.maximumCounterTotal)"
                )
            }
            for row in try connection.execute(
                """
                SELECT id, user_id, count FROM events WHERE count NOT BETWEEN 1 AND $1 ORDER BY id LIMIT 100
                """, [PostgresValue(Bounds.maximumEventCount)])
            {
                problems.append(
                    "event \(try row.int64("id")) of user \(try row.string("user_id")) has count \(try row.int64("count")), not a whole number from 1 to \(Bounds.maximumEventCount)"
                )
            }
            return problems
        }
    }

    public func tableCounts() throws -> [String: Int] {
        try read { connection in
            var counts: [String: Int] = [:]
            for table in PostgresSchema.tables {
                counts[table] =
                    try connection.execute("SELECT count(*) AS n FROM \(PostgresStore.quote(table))")
                    .first?.int("n") ?? 0
            }
            return counts
        }
    }
}

extension PostgresStore: GuestStore {}

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
