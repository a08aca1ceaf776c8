import Foundation
import GuestModeKit

/// The PostgreSQL backend, for guest populations that live server-side: many
/// processes on many machines share one database, and many callers in one
/// process share one store.
///
/// Concurrency: every write is one transaction at READ COMMITTED that first
/// locks the rows it decides on (`SELECT … FOR UPDATE` on the user, so caps,
/// meters and idempotency keys of one user are decided one writer at a time
/// across machines), and unique constraints guard identities and keys.
/// Serialization failures and deadlocks rerun the whole transaction a few
/// times; one that outlives its retries, or a lost connection, exits 75 with
/// nothing half-written.
///
/// Each transaction runs on a connection of its own from a pool
/// (`Connection/PostgresConnectionPool.swift`): connections are opened as
/// callers need them, up to `poolSize`, and kept for the next transaction, so a
/// command-line run, which runs one transaction at a time, opens one. A
/// transaction that finds every connection in use waits up to
/// `connectionWait` for one, then fails with `pool_exhausted` (try again later).
public final class PostgresStore: Sendable {
    /// Every table of guestmode lives in this schema, beside the app's own.
    public let schema: String
    /// How the store is named in messages: the URI without its password.
    let location: String
    private let pool: PostgresConnectionPool

    /// Connections a store keeps unless told otherwise: enough for a few
    /// requests at once, few enough that many processes fit in a server's
    /// default `max_connections` (100).
    public static let defaultPoolSize = 4
    /// How long a transaction waits for a free connection unless told
    /// otherwise: as long as SQLite waits for a busy store.
    public static let defaultConnectionWait = Duration.seconds(30)
    /// How long opening a connection may take unless told otherwise: libpq
    /// itself would wait for as long as the operating system keeps trying.
    public static let defaultConnectTimeout = Duration.seconds(30)

    private init(pool: PostgresConnectionPool, schema: String) {
        self.pool = pool
        self.schema = schema
        location = pool.location
    }

    /// Opens an existing store. `uri` is a `postgres://` or `postgresql://`
    /// URI, or "" for libpq's defaults from the environment. A store written
    /// by a newer guestmode is refused before anything is written.
    ///
    /// At most `poolSize` connections are open at once, each opened when a
    /// transaction first needs it; a transaction waits up to `connectionWait`
    /// for one when all are in use. Opening a connection gives up after
    /// `connectTimeout`, and a statement that goes unanswered for
    /// `statementTimeout` (nil: no limit) fails and its connection is dropped;
    /// a caller's `StoreDeadline` shortens the waits before a transaction's
    /// first statement is answered.
    public static func open(
        uri: String, schema: String = "guestmode", migrating: Bool = true, poolSize: Int = defaultPoolSize,
        connectionWait: Duration = defaultConnectionWait, connectTimeout: Duration? = defaultConnectTimeout,
        statementTimeout: Duration? = nil
    ) throws -> PostgresStore {
        let store = try connect(
            uri: uri, schema: schema, poolSize: poolSize, connectionWait: connectionWait,
            connectTimeout: connectTimeout, statementTimeout: statementTimeout)
        let applied = try store.read { connection in try store.appliedMigrations(connection) }
        try store.refuseUnknownSchema(applied: applied)
        guard let applied else {
            throw GuestModeError(
                .storeNotFound,
                "no guestmode store in schema '\(schema)' of \(store.location)")
        }
        if migrating, !PostgresStore.pending(after: applied).isEmpty {
            _ = try store.applyPendingMigrations { _ in }
        }
        return store
    }

    /// Creates the store's schema and binds it with `configure`, all in one
    /// transaction. With `replacing`, an existing store in the schema is
    /// dropped in that same transaction, so a failure keeps the old one.
    public static func create(
        uri: String, schema: String = "guestmode", replacing: Bool, poolSize: Int = defaultPoolSize,
        connectionWait: Duration = defaultConnectionWait, configure: (PostgresStore) throws -> Void
    ) throws {
        let store = try connect(uri: uri, schema: schema, poolSize: poolSize, connectionWait: connectionWait)
        try store.write { connection in
            try store.lockMigrations(connection)
            if try store.appliedMigrations(connection) != nil {
                guard replacing else {
                    throw GuestModeError(
                        .storeExists,
                        "a store already exists in schema '\(schema)' of \(connection.location)")
                }
                try connection.execute("DROP SCHEMA \(store.quotedSchema) CASCADE")
            }
            try connection.execute("CREATE SCHEMA \(store.quotedSchema)")
            try store.migrate(connection, pending: PostgresSchema.migrations.map(\.identifier)) { _ in }
            try configure(store)
        }
    }

    private static func connect(
        uri: String, schema: String, poolSize: Int, connectionWait: Duration,
        connectTimeout: Duration? = defaultConnectTimeout, statementTimeout: Duration? = nil
    ) throws -> PostgresStore {
        guard schema.wholeMatch(of: /[a-z_][a-z0-9_]{0,62}/) != nil else {
            throw GuestModeError(
                .invalidSchema, "'\(schema)' is not a schema name guestmode uses; use lower-case letters, digits and _")
        }
        guard poolSize >= 1 else {
            throw GuestModeError(
                .invalidPoolSize, "a pool of \(poolSize) connections cannot run a transaction; give at least 1")
        }
        let pool = PostgresConnectionPool(
            conninfo: uri, location: PostgresStore.describe(uri), schema: quote(schema), capacity: poolSize,
            wait: connectionWait, connectTimeout: connectTimeout, statementTimeout: statementTimeout)
        return PostgresStore(pool: pool, schema: schema)
    }

    /// Closes the store's connections: the idle ones now, any still in a
    /// transaction as it ends. A server calls it once its requests are done,
    /// so the database is left with no session of this process. The store
    /// still works afterwards, one connection per transaction, closed after it.
    public func close() {
        pool.close()
    }

    /// The URI as it may be printed: never with its password. This is the one
    /// function every message, document and journal names a PostgreSQL store by.
    package static func describe(_ uri: String) -> String {
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
    package static func identity(_ uri: String, schema: String) -> String {
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

    // MARK: Transactions

    /// Runs `body` in one transaction, rerun from the start when the server
    /// reports a serialization failure or deadlock, or refuses a statement
    /// prepared before another process changed the schema. Inside another
    /// transaction of this store on the same thread, `body` joins it.
    func write<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try transaction("BEGIN", writes: true, body)
    }

    /// Reads in one transaction, so every value comes from the same snapshot;
    /// rerun when the server refuses a statement prepared before another
    /// process changed the schema.
    /// Inside another transaction of this store on the same thread, `body` joins it.
    func read<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        try transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", writes: false, body)
    }

    /// `body` in a transaction opened by `start`, up to five attempts. A write
    /// is rerun after a serialization failure or deadlock, and its COMMIT's
    /// failure marked as one whose outcome may be unknown; either is rerun
    /// after a stale prepared statement, once the connection forgot them.
    /// A read costs a round trip a statement: its BEGIN goes with the first,
    /// and its COMMIT is read by the connection's next transaction.
    private func transaction<T>(
        _ start: String, writes: Bool, _ body: (PostgresConnection) throws -> T
    ) throws -> T {
        if let connection = pool.connectionInTransaction { return try body(connection) }
        return try pool.withTransaction { connection in
            var attempt = 0
            while true {
                attempt += 1
                do {
                    // A write's first statement may wait for another's row lock, longer than a caller's
                    // StoreDeadline bounds the wait for BEGIN: its BEGIN goes first, on its own.
                    try connection.begin(start, withFirstStatement: !writes)
                    let value = try body(connection)
                    // A body that ran no statement never began the transaction.
                    if connection.forgetUnsentBegin() { return value }
                    do {
                        if writes { try connection.execute("COMMIT") } else { try connection.commitUnawaited() }
                    } catch var failure as PostgresFailure {
                        failure.isDuringCommit = writes
                        throw failure
                    }
                    return value
                } catch let failure as PostgresFailure {
                    if !connection.forgetUnsentBegin() && !failure.isBeforeTransaction {
                        _ = try? connection.execute("ROLLBACK")
                    }
                    // A connection the server closed while it sat idle fails here, before anything was
                    // done on it: the pool then runs the transaction again on another. A deadline that
                    // passed before BEGIN was sent is not a lost connection: the connection goes back as it was.
                    if failure.isBeforeTransaction && failure.isConnectionLost
                        && failure.missedDeadline != .beforeSending
                    {
                        throw PostgresConnectionPool.LostBeforeStart(failure: failure)
                    }
                    if attempt < 5 {
                        if writes && failure.isRetryable { continue }
                        if failure.isStalePlan, (try? connection.forgetPreparedStatements()) != nil { continue }
                    }
                    throw failure.asGuestModeError
                } catch {
                    if !connection.forgetUnsentBegin() { _ = try? connection.execute("ROLLBACK") }
                    throw error
                }
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

    /// Two processes never migrate or create the same database at once.
    func lockMigrations(_ connection: PostgresConnection) throws {
        try connection.execute("SELECT pg_advisory_xact_lock(hashtext('guestmode-schema'))")
    }

    // MARK: Schema history

    /// The schema migrations applied to the store, oldest first; nil when the
    /// schema holds no store.
    private func appliedMigrations(_ connection: PostgresConnection) throws -> [String]? {
        let present =
            try connection.execute(
                "SELECT to_regclass($1) IS NOT NULL AS present", [PostgresValue("\(quotedSchema).schema_migrations")]
            ).first?.bool("present") ?? false
        guard present else { return nil }
        return try connection.execute("SELECT identifier FROM schema_migrations ORDER BY applied_order")
            .map { try $0.string("identifier") }
    }

    private static func pending(after applied: [String]?) -> [String] {
        PostgresSchema.migrations.map(\.identifier).filter { !(applied ?? []).contains($0) }
    }

    /// Refuses a store from a newer guestmode, read without writing, so such
    /// a store is left untouched.
    private func refuseUnknownSchema(applied: [String]?) throws {
        let known = Set(PostgresSchema.migrations.map(\.identifier))
        let unknown = (applied ?? []).filter { !known.contains($0) }
        if !unknown.isEmpty {
            throw GuestModeError(
                .storeTooNew,
                "the store in schema '\(schema)' of \(location) was written by a newer guestmode (schema \(unknown.joined(separator: ", "))); this guestmode knows schema up to \(PostgresSchema.migrations.last?.identifier ?? "none"). Upgrade guestmode; the store was not changed"
            )
        }
    }

    private func migrate(_ connection: PostgresConnection, pending: [String], progress: (String) -> Void) throws {
        for identifier in pending {
            guard let migration = PostgresSchema.migrations.first(where: { $0.identifier == identifier }) else {
                continue
            }
            do {
                try connection.execute(migration.sql)
                // The schema history is the database's own bookkeeping, as GRDB's is
                // in SQLiteStore, which records no caller's time for it either: the
                // caller's `now` dates the data, and may be a simulated time (`now` is
                // an input so replays and tests can move it), while a migration happens
                // when it happens. So the server's clock, in the store's time format.
                try connection.execute(
                    """
                    INSERT INTO schema_migrations (identifier, applied_at)
                    VALUES ($1, to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
                    """,
                    [PostgresValue(identifier)])
            } catch let failure as PostgresFailure {
                throw GuestModeError(
                    .schemaMigrationFailed,
                    "schema migration \(identifier) failed: \(PostgresConnection.redacted(failure.message)); the store is unchanged. Fix the cause and migrate again"
                )
            }
            progress(identifier)
        }
    }
}

extension PostgresStore: StoreAdministration {
    package func bindProfile(text: String, origin: String, now: Date) throws {
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

    package func boundProfile() throws -> (text: String, origin: String)? {
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

    package func boundProfileWithCache() throws -> BoundProfile? {
        try read { connection in
            var values: [String: String] = [:]
            for row in try connection.execute(
                "SELECT key, value FROM meta WHERE key IN ('profile_text', 'profile_origin', $1, $2, $3)",
                [
                    PostgresValue(ProfileCache.sealMetaKey), PostgresValue(ProfileCache.jsonMetaKey),
                    PostgresValue(OwedGrantDraws.metaKey),
                ])
            {
                values[try row.string("key")] = try row.string("value")
            }
            guard let text = values["profile_text"] else { return nil }
            let cache = values[ProfileCache.sealMetaKey].flatMap { key in
                values[ProfileCache.jsonMetaKey].map { ProfileCacheEntry(seal: key, json: $0) }
            }
            return BoundProfile(
                text: text, origin: values["profile_origin"] ?? "", cache: cache,
                owesGrantDraws: values[OwedGrantDraws.metaKey] != nil)
        }
    }

    package func saveProfileCache(_ entry: ProfileCacheEntry) throws {
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

    package func schemaStatus() throws -> SchemaStatus {
        let applied = try read { connection in try appliedMigrations(connection) }
        return SchemaStatus(applied: applied ?? [], pending: PostgresStore.pending(after: applied))
    }

    package func applyPendingMigrations(progress: (String) -> Void) throws -> [String] {
        try write { connection in
            try lockMigrations(connection)
            let pending = PostgresStore.pending(after: try appliedMigrations(connection))
            try migrate(connection, pending: pending, progress: progress)
            return pending
        }
    }

    /// The server keeps its own pages consistent and enforces the foreign
    /// keys it has validated; this checks that the schema is current, that no
    /// constraint was left unvalidated, that rows kept without a foreign key
    /// (the outbox, flags, archived conflicts) still have their user, and the
    /// rules of guestmode's data that constraints cannot state.
    package func integrityProblems() throws -> [String] {
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
                WHERE u.state = $1 AND NOT EXISTS (SELECT 1 FROM identities i WHERE i.user_id = u.id)
                ORDER BY u.id
                """, [PostgresValue(UserState.linked.rawValue)])
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
            for row in try connection.execute(
                """
                SELECT id, user_id, amount::text AS amount FROM meter_usage
                WHERE amount IS NULL OR amount < 0 OR amount = 'NaN' ORDER BY id LIMIT 100
                """)
            {
                problems.append(
                    "use \(try row.int64("id")) of user \(try row.string("user_id")) has amount \(try row.optionalString("amount") ?? "NULL"), not a number of at least 0"
                )
            }
            // Each kept usage total against the ledger rows it adds up, both ways.
            let amount =
                "CASE WHEN amount IS NULL OR amount <= 0 THEN 0 WHEN amount < 9000000000000 THEN round(amount * 1000000)::bigint ELSE 9223372036854775807 END"
            for row in try connection.execute(
                """
                WITH ledger AS (
                    SELECT user_id, meter, 'day' AS span, substr(at, 1, 10) COLLATE "C" AS bucket,
                        sum(\(amount)) AS counted
                    FROM meter_usage GROUP BY user_id, meter, substr(at, 1, 10)
                    UNION ALL
                    SELECT user_id, meter, 'month', substr(at, 1, 7) COLLATE "C", sum(\(amount))
                    FROM meter_usage GROUP BY user_id, meter, substr(at, 1, 7)
                )
                SELECT coalesce(t.user_id, l.user_id) AS user_id, coalesce(t.meter, l.meter) AS meter,
                    coalesce(t.bucket, l.bucket) AS bucket, t.millionths::text AS kept,
                    coalesce(l.counted, 0)::text AS counted
                FROM meter_totals t FULL JOIN ledger l
                    ON l.user_id = t.user_id AND l.meter = t.meter AND l.span = t.span AND l.bucket = t.bucket
                WHERE t.millionths IS DISTINCT FROM l.counted AND NOT (l.user_id IS NULL AND t.millionths = 0)
                ORDER BY 1, 2, 3 LIMIT 100
                """)
            {
                let what =
                    "the kept usage of meter \(try row.string("meter")) of user \(try row.string("user_id")) in \(try row.string("bucket"))"
                let counted = try Self.millionthsText(row.string("counted"))
                if let kept = try row.optionalString("kept") {
                    problems.append("\(what) is \(Self.millionthsText(kept)) but its uses add up to \(counted)")
                } else {
                    problems.append("\(what) is missing; its uses add up to \(counted)")
                }
            }
            return problems
        }
    }

    /// Millionths as text, as an amount (`12.5`), or as given when they are past what an amount holds.
    private static func millionthsText(_ text: String) -> String {
        Int64(text).map { "\(MeterAmount(millionths: $0))" } ?? text
    }

    package func tableCounts() throws -> [String: Int] {
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

extension GuestMode {
    /// The engine over a PostgreSQL store already bound to a profile, with the
    /// profile the store keeps. When a schema migration applied as the store
    /// was opened left kept grant draws to build (or an earlier build
    /// stopped), they are built here first, a batch of users per transaction.
    ///
    /// ```swift
    /// let engine = try GuestMode(store: PostgresStore.open(uri: "postgres://app@db/app"))
    /// ```
    ///
    /// - Throws: ``GuestModeError`` `store_without_profile` for a store never bound.
    public init(store: PostgresStore) throws {
        try self.init(store: store as any GuestStore, location: store.location)
        if owedGrantDraws { try buildOwedGrantDraws() }
    }

    /// Binds an empty PostgreSQL store to a profile and makes the engine over it,
    /// typically in the `configure` step of ``PostgresStore/create(uri:schema:replacing:poolSize:connectionWait:configure:)``.
    ///
    /// ```swift
    /// try PostgresStore.create(uri: uri, replacing: false) { store in
    ///     _ = try GuestMode(store: store, profileText: source.text, origin: source.origin, now: now)
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - profileText: The profile's YAML.
    ///   - origin: Where the text came from, for messages (a file name).
    ///   - now: The time the store is bound at.
    /// - Throws: ``GuestModeError`` `invalid_profile` for a profile that does not validate.
    public init(store: PostgresStore, profileText: String, origin: String, now: Date) throws {
        try self.init(store: store as any GuestStore, profileText: profileText, origin: origin, now: now)
    }
}

extension PostgresValue {
    /// `values` as one `text[]` parameter (`= ANY($n::text[])`), so a list
    /// of any length is still a single parameter and never SQL text.
    static func textArray(_ values: [String]) -> PostgresValue {
        textArray(values.map { $0 as String? })
    }

    /// `values` as one `text[]` parameter, a nil element as SQL NULL (`unnest($n::text[])` gives NULL).
    static func textArray(_ values: [String?]) -> PostgresValue {
        // Built byte by byte: a restore sends a thousand users a batch, and Foundation's
        // replacingOccurrences (through NSString) cost as much as the rest of the import's client side.
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        bytes.reserveCapacity(values.reduce(2) { $0 + ($1?.utf8.count ?? 4) + 3 })
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            guard let value else {
                bytes.append(contentsOf: "NULL".utf8)
                continue
            }
            bytes.append(UInt8(ascii: "\""))
            for byte in value.utf8 {
                if byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "\"") { bytes.append(UInt8(ascii: "\\")) }
                bytes.append(byte)
            }
            bytes.append(UInt8(ascii: "\""))
        }
        bytes.append(UInt8(ascii: "}"))
        return PostgresValue(String(decoding: bytes, as: UTF8.self))
    }
}
