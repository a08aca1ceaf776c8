import Dispatch
import Foundation
internal import GRDB
import GuestModeKit
import Synchronization

/// The SQLite backend: one file (WAL journal), written by one transaction
/// at a time, read by many.
///
/// Open with `.pool` (a GRDB `DatabasePool`) when many callers in one
/// process share the store: reads run in parallel with each other and with
/// the one write in progress, each on its own snapshot. `.single` (a GRDB
/// `DatabaseQueue`) serves one caller at a time on one connection, and is what
/// the command line uses: opening it writes nothing to the file (see
/// docs/ARCHITECTURE.md). Processes wait up to `busyTimeout` (30 s unless
/// told otherwise) for each other's writes either way, then fail with
/// `store_busy` (try again later); a caller with a `StoreDeadline` waits no
/// longer than that, for another process's lock or for another write of its own process.
public final class SQLiteStore: Sendable {
    let database: AppDatabase
    /// The store file's path; nil for an in-memory store.
    public let path: String?
    /// One write at a time, as GRDB's writer runs them, but waited for with a
    /// deadline: GRDB's own queue makes a write wait as long as the one before it runs.
    private let writing = DispatchSemaphore(value: 1)
    /// The read-only connections a pooled store's reads go through; nil for a single connection.
    let readers: ReadConnections?

    /// How long a write waits for another process's lock unless told otherwise.
    public static let defaultBusyTimeout = Duration.seconds(30)

    init(database: AppDatabase, path: String?, readers: ReadConnections? = nil) {
        self.database = database
        self.path = path
        self.readers = readers
    }

    /// How the callers in one process reach an on-disk store.
    public enum Connections: Sendable, Equatable {
        /// One connection, used by one caller at a time for reads and writes.
        /// Opening writes nothing to the file, so a command that changes
        /// nothing leaves it byte for byte as it was.
        case single
        /// One writer connection and up to `maximumReaders` read-only ones
        /// the store keeps, beside a GRDB `DatabasePool` of as many that
        /// serves reads when those are busy: reads run in parallel with each
        /// other and with the write in progress. Opening a store whose WAL is empty
        /// writes one small transaction to it (GRDB keeps a WAL for its readers).
        case pool(maximumReaders: Int)
    }

    /// Opens an existing store, refusing one written by a newer guestmode
    /// before touching it. Pending schema migrations are applied unless
    /// `migrating` is false (for `db status`).
    /// A write waits up to `busyTimeout` for another process's lock.
    public static func open(
        path: String, migrating: Bool = true, connections: Connections = .pool(maximumReaders: 4),
        busyTimeout: Duration = defaultBusyTimeout
    ) throws -> SQLiteStore {
        let database = try StoreFile.open(
            path: path, creating: false, migrating: migrating, connections: connections, busyTimeout: busyTimeout)
        guard case .pool(let maximumReaders) = connections else { return SQLiteStore(database: database, path: path) }
        return SQLiteStore(
            database: database, path: path,
            readers: ReadConnections(path: path, maximum: maximumReaders, busyTimeout: busyTimeout))
    }

    /// Creates a store with mode 0600. With `replacing`, an existing store is
    /// replaced only once the new one is complete.
    public static func create(path: String, replacing: Bool, configure: (SQLiteStore) throws -> Void) throws {
        let fileManager = FileManager.default
        guard replacing, fileManager.fileExists(atPath: path) else {
            do {
                let store = SQLiteStore(database: try StoreFile.open(path: path, creating: true), path: path)
                try configure(store)
                try store.close()
            } catch {
                if !fileManager.fileExists(atPath: path) { throw error }
                if case let failure as GuestModeError = error, failure.code == .storeExists { throw error }
                for suffix in ["", "-wal", "-shm"] { try? fileManager.removeItem(atPath: path + suffix) }
                throw error
            }
            return
        }
        let temporary = path + ".new-\(ProcessInfo.processInfo.processIdentifier)"
        do {
            let store = SQLiteStore(database: try StoreFile.open(path: temporary, creating: true), path: temporary)
            try configure(store)
            try store.close()
        } catch {
            for suffix in ["", "-wal", "-shm"] { try? fileManager.removeItem(atPath: temporary + suffix) }
            throw error
        }
        // A leftover WAL of the old store must not be replayed into the new one.
        for suffix in ["-wal", "-shm"] { try? fileManager.removeItem(atPath: path + suffix) }
        if rename(temporary, path) != 0 {
            let reason = String(cString: strerror(errno))
            try? fileManager.removeItem(atPath: temporary)
            throw GuestModeError(.cannotCreateStore, "cannot replace '\(path)': \(reason)")
        }
    }

    /// An empty in-memory store, for tests and replays.
    public static func inMemory() throws -> SQLiteStore {
        SQLiteStore(database: try AppDatabase.empty(), path: nil)
    }

    /// Checkpoints the WAL into the main file so the store is one file again.
    public func close() throws {
        guard let path else { return }
        do {
            try database.writer.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
            // The last connection to close removes the WAL, but only a writer can: a
            // pool's readers go first (GRDB's own close ends with them).
            readers?.close()
            (database.writer as? DatabasePool)?.invalidateReadOnlyConnections()
            try database.writer.close()
        } catch let error as DatabaseError {
            throw StoreFile.translate(error, path: path)
        }
    }

    /// Closes the store's connections as freeing it would, without `close()`'s checkpoint, which
    /// waits for other processes' readers: the last connection to the file folds the WAL back and
    /// removes it if no one else has it open. For a process about to exit with the store still held.
    ///
    /// ```swift
    /// try store.closeConnections()
    /// exit(0)
    /// ```
    public func closeConnections() throws {
        readers?.close()
        (database.writer as? DatabasePool)?.invalidateReadOnlyConnections()
        do {
            try database.writer.close()
        } catch let error as DatabaseError {
            throw StoreFile.translate(error, path: path ?? "the in-memory store")
        }
    }

    /// Waits for the other writes of this process to end, until the caller's
    /// `StoreDeadline` if it has one.
    private func takeWriter() throws {
        guard let remaining = StoreDeadline.remaining else { return writing.wait() }
        let (seconds, attoseconds) = remaining.components
        let nanoseconds = Int(min(seconds, 86_400 * 365)) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
        guard writing.wait(timeout: .now() + .nanoseconds(nanoseconds)) == .success else {
            throw GuestModeError(
                .storeBusy,
                "another write held the store for the whole wait; nothing was changed, try again later")
        }
    }

    func write<T>(_ updates: (Database) throws -> T) throws -> T {
        try takeWriter()
        defer { writing.signal() }
        do {
            return try database.writer.writeWithoutTransaction { db in
                try Self.transaction(db, begin: "BEGIN IMMEDIATE TRANSACTION", updates)
            }
        } catch let error as DatabaseError {
            throw StoreFile.translate(error, path: path ?? ":memory:")
        } catch let error as RowDecodingError {
            throw StoreFile.corrupt(error, path: path ?? ":memory:")
        }
    }

    /// One transaction with `synchronous=FULL`: migrations, merges, adoptions
    /// and imports move data people cannot re-create, so their commit must
    /// survive a power cut, not only a crash.
    func writeDurably<T>(_ updates: (Database) throws -> T) throws -> T {
        try writeDurably { db in (try updates(db), true) }
    }

    /// Like `writeDurably(_:)`; `body` also says whether to commit (a dry run rolls back).
    ///
    /// `writingPagesOnce` (a bulk import) runs the transaction with a
    /// rollback journal instead of the WAL when the store holds no user yet
    /// (a restore into a fresh store) and this process's one connection is
    /// its only one: WAL writes every page twice, to the log and again at the
    /// checkpoint, where a rollback journal writes a new page once. Leaving
    /// WAL needs every other connection gone: while a server or another
    /// command has the store open the switch is refused at once, without
    /// waiting, and the transaction runs in WAL as always. A store that holds
    /// users stays in WAL, so its readers never wait for an import and a
    /// refused import leaves its file byte for byte. Every durable write ends
    /// in WAL mode, so a store a killed import left with a rollback journal
    /// (rolled back by the next opening, as SQLite does) is in WAL again
    /// after the next one.
    func writeDurably<T>(
        writingPagesOnce: Bool = false, _ body: (Database) throws -> (value: T, commit: Bool)
    ) throws -> T {
        try takeWriter()
        defer { writing.signal() }
        // Only a store file this process reaches through one connection may leave WAL: GRDB's pool needs it.
        let isSingleFile = path != nil && database.writer is DatabaseQueue
        do {
            return try database.writer.writeWithoutTransaction { db in
                if isSingleFile && writingPagesOnce, try Self.holdsNoUsers(db) {
                    Self.switchJournal(db, to: "delete")
                }
                defer { if isSingleFile { Self.switchJournal(db, to: "wal") } }
                let previous = try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? 1
                try db.execute(sql: "PRAGMA synchronous = FULL")
                defer { try? db.execute(sql: "PRAGMA synchronous = \(previous)") }
                var value: T?
                try db.inTransaction(.immediate) {
                    let outcome = try body(db)
                    value = outcome.value
                    return outcome.commit ? .commit : .rollback
                }
                guard let value else {
                    throw GuestModeError(
                        .internalFailure, "a durable transaction ended without a result")
                }
                return value
            }
        } catch let error as DatabaseError {
            throw StoreFile.translate(error, path: path ?? ":memory:")
        } catch let error as RowDecodingError {
            throw StoreFile.corrupt(error, path: path ?? ":memory:")
        }
    }

    /// Whether the store holds no user yet: a bulk import into it is a
    /// restore, which nobody reads meanwhile.
    static func holdsNoUsers(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT NOT EXISTS (SELECT 1 FROM users)") ?? false
    }

    /// Asks for the journal `mode` without waiting for another connection to
    /// go: a store another connection holds keeps its mode. A store already
    /// in `mode` is not written to.
    private static func switchJournal(_ db: Database, to mode: String) {
        // A deadline already passed: the busy handler gives up at once.
        _ = try? StoreDeadline.$current.withValue(.now) {
            try String.fetchOne(db, sql: "PRAGMA journal_mode = \(mode)")
        }
    }

    /// `body` in one transaction whose `BEGIN` and `COMMIT` the connection
    /// keeps prepared: GRDB's `read` and `write` prepare theirs from the text
    /// every time, which was a sixth of a served read's instructions. A throw,
    /// or a failed commit, rolls everything back.
    private static func transaction<T>(_ db: Database, begin: StaticString, _ body: (Database) throws -> T) throws -> T
    {
        try db.statement(begin).execute()
        do {
            let value = try body(db)
            try db.statement("COMMIT TRANSACTION").execute()
            return value
        } catch {
            if db.isInsideTransaction { try? db.rollback() }
            throw error
        }
    }

    func read<T>(_ value: (Database) throws -> T) throws -> T {
        do {
            // Read-only connections already; a single connection (the command line's) is kept from
            // writing by GRDB's own read.
            let begin: StaticString = "BEGIN DEFERRED TRANSACTION"
            guard let readers, let pool = database.writer as? DatabasePool else {
                return try database.writer.read(value)
            }
            if let value = try readers.read({ db in try Self.transaction(db, begin: begin, value) }) { return value }
            return try pool.unsafeRead { db in try Self.transaction(db, begin: begin, value) }
        } catch let error as DatabaseError {
            throw StoreFile.translate(error, path: path ?? ":memory:")
        } catch let error as RowDecodingError {
            throw StoreFile.corrupt(error, path: path ?? ":memory:")
        }
    }
}

extension SQLiteStore: StoreAdministration {
    package func bindProfile(text: String, origin: String, now: Date) throws {
        try write { db in
            for (key, value) in [
                ("profile_text", text), ("profile_origin", origin), ("bound_at", Timestamp.format(now)),
            ] {
                try db.execute(
                    sql:
                        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    arguments: [key, value])
            }
        }
    }

    package func boundProfile() throws -> (text: String, origin: String)? {
        try read { db in
            let rows = try Row.fetchAll(
                db, sql: "SELECT key, value FROM meta WHERE key IN ('profile_text', 'profile_origin')")
            var values: [String: String] = [:]
            for row in rows { values[try row.decode(forColumn: "key")] = try row.decode(forColumn: "value") }
            guard let text = values["profile_text"] else { return nil }
            return (text, values["profile_origin"] ?? "")
        }
    }

    package func boundProfileWithCache() throws -> BoundProfile? {
        try read { db in
            let rows = try Row.fetchAll(
                db,
                sql: "SELECT key, value FROM meta WHERE key IN ('profile_text', 'profile_origin', ?, ?, ?)",
                arguments: [ProfileCache.sealMetaKey, ProfileCache.jsonMetaKey, OwedGrantDraws.metaKey])
            var values: [String: String] = [:]
            for row in rows { values[try row.decode(forColumn: "key")] = try row.decode(forColumn: "value") }
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
        try write { db in
            for (key, value) in [(ProfileCache.sealMetaKey, entry.seal), (ProfileCache.jsonMetaKey, entry.json)] {
                try db.execute(
                    sql:
                        "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                    arguments: [key, value])
            }
        }
    }

    package func schemaStatus() throws -> SchemaStatus {
        SchemaStatus(applied: try database.appliedMigrations(), pending: try database.pendingMigrations())
    }

    package func applyPendingMigrations(progress: (String) -> Void) throws -> [String] {
        do {
            return try database.migrateStepwise(progress: progress)
        } catch let error as DatabaseError {
            throw StoreFile.translate(error, path: path ?? ":memory:")
        }
    }

    package func integrityProblems() throws -> [String] {
        try read { db in
            var problems = try String.fetchAll(db, sql: "PRAGMA integrity_check").filter { $0 != "ok" }
            let violations = try Row.fetchAll(db, sql: "PRAGMA foreign_key_check")
            problems += try violations.map { row in
                "foreign key violation in table \(try row.decode(atIndex: 0) as String? ?? "?") row \(try row.decode(atIndex: 1) as Int64? ?? 0) (refers to \(try row.decode(atIndex: 2) as String? ?? "?"))"
            }
            return problems + (try countProblems(db))
        }
    }

    /// The rules of counts that SQLite's typeless columns cannot state: each
    /// event's count and each counter's total is an integer within `Bounds`
    /// (an overflowing sum would have turned into a REAL), and each counter
    /// equals the sum of its events, as PostgreSQL's check requires.
    private func countProblems(_ db: Database) throws -> [String] {
        var problems: [String] = []
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT user_id, action, CAST(total AS TEXT) AS total FROM counters
                WHERE NOT (typeof(total) = 'integer' AND total BETWEEN 0 AND \(Bounds.maximumCounterTotal))
                ORDER BY user_id, action
                """)
        {
            problems.append(
                "counter \(try row.decode(forColumn: "action") as String) of user \(try row.decode(forColumn: "user_id") as String) holds \(try row.decode(forColumn: "total") as String? ?? "NULL"), not a whole number from 0 to \(Bounds.maximumCounterTotal)"
            )
        }
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT id, user_id, CAST(count AS TEXT) AS count FROM events
                WHERE NOT (typeof(count) = 'integer' AND count BETWEEN 1 AND \(Bounds.maximumEventCount))
                ORDER BY id LIMIT 100
                """)
        {
            problems.append(
                "event \(try row.decode(forColumn: "id") as Int64) of user \(try row.decode(forColumn: "user_id") as String) has count \(try row.decode(forColumn: "count") as String? ?? "NULL"), not a whole number from 1 to \(Bounds.maximumEventCount)"
            )
        }
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT user_id, CAST(attempts AS TEXT) AS attempts FROM outbox
                WHERE NOT (typeof(attempts) = 'integer' AND attempts >= 0) ORDER BY user_id
                """)
        {
            problems.append(
                "the queued backup of user \(try row.decode(forColumn: "user_id") as String) has \(try row.decode(forColumn: "attempts") as String? ?? "NULL") attempts, not a whole number of at least 0"
            )
        }
        // Only counts within bounds are summed: fewer than 9 billion of them cannot overflow.
        for row in try Row.fetchAll(
            db,
            sql: """
                SELECT c.user_id, c.action, c.total, coalesce(e.total, 0) AS counted
                FROM counters c
                LEFT JOIN (
                    SELECT user_id, action, sum(count) AS total FROM events
                    WHERE typeof(count) = 'integer' AND count BETWEEN 1 AND \(Bounds.maximumEventCount)
                    GROUP BY user_id, action
                ) e ON e.user_id = c.user_id AND e.action = c.action
                WHERE typeof(c.total) = 'integer' AND c.total <> coalesce(e.total, 0)
                ORDER BY c.user_id, c.action
                """)
        {
            problems.append(
                "counter \(try row.decode(forColumn: "action") as String) of user \(try row.decode(forColumn: "user_id") as String) is \(try row.decode(forColumn: "total") as Int64) but its events add up to \(try row.decode(forColumn: "counted") as Int64)"
            )
        }
        problems += try meterTotalProblems(db)
        return problems
    }

    /// Each kept usage total (meter_totals) against the ledger rows it adds up, both ways: a total
    /// that disagrees, and a day or month of uses with no total kept.
    private func meterTotalProblems(_ db: Database) throws -> [String] {
        let amounts = try Row.fetchAll(
            db,
            sql: """
                SELECT id, user_id, CAST(amount AS TEXT) AS amount FROM meter_usage
                WHERE NOT (typeof(amount) IN ('integer', 'real') AND amount >= 0) ORDER BY id LIMIT 100
                """
        ).map { row in
            "use \(try row.decode(forColumn: "id") as Int64) of user \(try row.decode(forColumn: "user_id") as String) has amount \(try row.decode(forColumn: "amount") as String? ?? "NULL"), not a number of at least 0"
        }
        return try amounts
            + Row.fetchAll(
                db,
                sql: """
                    WITH ledger AS (
                        SELECT user_id, meter, 'day' AS span, substr(at, 1, 10) AS bucket,
                            sum(max(0, CAST(round(amount * 1000000) AS INTEGER))) AS counted
                        FROM meter_usage GROUP BY user_id, meter, substr(at, 1, 10)
                        UNION ALL
                        SELECT user_id, meter, 'month', substr(at, 1, 7),
                            sum(max(0, CAST(round(amount * 1000000) AS INTEGER)))
                        FROM meter_usage GROUP BY user_id, meter, substr(at, 1, 7)
                    )
                    SELECT t.user_id, t.meter, t.span, t.bucket, CAST(t.millionths AS TEXT) AS kept,
                        coalesce(l.counted, 0) AS counted
                    FROM meter_totals t LEFT JOIN ledger l
                        ON l.user_id = t.user_id AND l.meter = t.meter AND l.span = t.span AND l.bucket = t.bucket
                    WHERE NOT (typeof(t.millionths) = 'integer' AND t.millionths = coalesce(l.counted, 0))
                    UNION ALL
                    SELECT l.user_id, l.meter, l.span, l.bucket, NULL, l.counted
                    FROM ledger l LEFT JOIN meter_totals t
                        ON t.user_id = l.user_id AND t.meter = l.meter AND t.span = l.span AND t.bucket = l.bucket
                    WHERE t.user_id IS NULL
                    ORDER BY 1, 2, 3, 4 LIMIT 100
                    """
            ).map(Self.meterTotalProblem)
    }

    static func meterTotalProblem(_ row: Row) throws -> String {
        let user: String = try row.decode(atIndex: 0)
        let meter: String = try row.decode(atIndex: 1)
        let bucket: String = try row.decode(atIndex: 3)
        let kept: String? = try row.decode(atIndex: 4)
        let counted = MeterAmount(millionths: try row.decode(atIndex: 5) as Int64)
        let what = "the kept usage of meter \(meter) of user \(user) in \(bucket)"
        guard let kept else { return "\(what) is missing; its uses add up to \(counted)" }
        let keptText = Int64(kept).map { "\(MeterAmount(millionths: $0))" } ?? kept
        return "\(what) is \(keptText) but its uses add up to \(counted)"
    }

    package func tableCounts() throws -> [String: Int] {
        try read { db in
            let tables = try String.fetchAll(
                db,
                sql:
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'grdb_%' ORDER BY name"
            )
            var counts: [String: Int] = [:]
            for table in tables {
                counts[table] = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM \(table.quotedDatabaseIdentifier)") ?? 0
            }
            return counts
        }
    }
}

extension SQLiteStore: GuestStore {}

extension GuestMode {
    /// The engine over an SQLite store already bound to a profile, with the
    /// profile the store keeps. When a schema migration applied as the store
    /// was opened left kept grant draws to build (or an earlier build
    /// stopped), they are built here first, a batch of users per transaction.
    ///
    /// ```swift
    /// let engine = try GuestMode(store: SQLiteStore.open(path: "app.guestmode"))
    /// ```
    ///
    /// - Throws: ``GuestModeError`` `store_without_profile` for a store never bound.
    public init(store: SQLiteStore) throws {
        try self.init(store: store as any GuestStore, location: store.path ?? ":memory:")
        if owedGrantDraws { try buildOwedGrantDraws() }
    }

    /// Binds an empty SQLite store to a profile and makes the engine over it.
    ///
    /// ```swift
    /// let source = try ProfileCatalog(directories: []).load("subscriptions")
    /// let engine = try GuestMode(
    ///     store: SQLiteStore.inMemory(), profileText: source.text, origin: source.origin, now: now)
    /// ```
    ///
    /// - Parameters:
    ///   - profileText: The profile's YAML.
    ///   - origin: Where the text came from, for messages (a file name).
    ///   - now: The time the store is bound at.
    /// - Throws: ``GuestModeError`` `invalid_profile` for a profile that does not validate.
    public init(store: SQLiteStore, profileText: String, origin: String, now: Date) throws {
        try self.init(store: store as any GuestStore, profileText: profileText, origin: origin, now: now)
    }

    /// A fresh engine over an empty in-memory SQLite store, for tests and replays.
    package static func inMemory(profileText: String, origin: String = "profile.yaml", now: Date) throws -> GuestMode {
        try GuestMode(store: SQLiteStore.inMemory(), profileText: profileText, origin: origin, now: now)
    }
}

extension SQLiteStore {
    /// Page cache of this connection for bulk work (import, purge):
    /// 16 MiB instead of SQLite's 2 MiB, so index pages of a big events or
    /// records table stop thrashing, within the 64 MB a command may use (the
    /// process itself takes about 40 MB; 32 MiB measured 66 MB peak).
    /// SQLite only allocates the pages it uses.
    func useBulkCache(_ db: Database) throws {
        try db.execute(sql: "PRAGMA cache_size = -16384")
    }

    /// Page cache of this connection for ingesting an event log: 8 MiB. The
    /// engine applies a log user by user, so the users, counters and
    /// per-user event indexes are written from one end to the other and a
    /// bigger cache buys nothing: 16 MiB was no faster at 300 k guests and
    /// took the process past 64 MB (66 MB peak; 8 MiB: 54 MB at 1 M guests).
    func useIngestCache(_ db: Database) throws {
        try db.execute(sql: "PRAGMA cache_size = -8192")
    }

    /// SQLite's default page cache (2 MiB) again, for one pass over an index
    /// in a connection that may have had the bulk cache.
    func useScanCache(_ db: Database) throws {
        try db.execute(sql: "PRAGMA cache_size = -2000")
    }
}

/// The read-only connections a pooled store's reads go through, at most `maximum`, each serving one read at a
/// time. GRDB's pool of readers handed a connection out through a concurrent dispatch queue, a semaphore, a
/// group and a lock, about 30 k instructions a served read (bench/results.md, "Serving, round 14"); here a read
/// takes an idle connection from a list under a lock. When all are busy a read goes through GRDB's pool, which
/// waits for one of its own. Each connection is opened on first need, read-only, as GRDB opens its readers.
final class ReadConnections: Sendable {
    /// A read-only connection and the statements it keeps prepared, made on its first read.
    private final class Connection: @unchecked Sendable {
        let queue: DatabaseQueue
        /// Set and read only by the thread that holds the connection.
        var prepared: PreparedStatements?

        init(queue: DatabaseQueue) {
            self.queue = queue
        }

        func close() {
            prepared?.removeAll()
            try? queue.close()
        }
    }

    private struct State {
        var idle: [Connection] = []
        var opened = 0
        var isClosed = false
    }

    private let path: String
    private let maximum: Int
    private let busyTimeout: Duration
    private let state = Mutex(State())

    init(path: String, maximum: Int, busyTimeout: Duration) {
        self.path = path
        self.maximum = maximum
        self.busyTimeout = busyTimeout
    }

    private enum Taken {
        case idle(Connection)
        case new
        case none
    }

    /// `body` on an idle connection, or on a new one while fewer than `maximum` are open; nil when every
    /// connection is busy, or the store is closed, and `body` has not run. `body`'s statements
    /// (`Database.statement`) are the connection's own prepared ones.
    func read<T>(_ body: (Database) throws -> T) throws -> T? {
        let taken: Taken = state.withLock { state in
            if state.isClosed { return .none }
            if let connection = state.idle.popLast() { return .idle(connection) }
            guard state.opened < maximum else { return .none }
            state.opened += 1
            return .new
        }
        let connection: Connection
        switch taken {
        case .none: return nil
        case .idle(let idle): connection = idle
        case .new:
            do {
                connection = Connection(
                    queue: try DatabaseQueue(
                        path: path, configuration: AppDatabase.configuration(readOnly: true, busyTimeout: busyTimeout)))
            } catch {
                state.withLock { $0.opened -= 1 }
                throw error
            }
        }
        defer { giveBack(connection) }
        return try connection.queue.inDatabase { db in
            let prepared = connection.prepared ?? PreparedStatements(of: db)
            connection.prepared = prepared
            defer { prepared.endRead() }
            return try PreparedStatements.$current.withValue(prepared) { try body(db) }
        }
    }

    /// How many connections are open, idle or reading.
    var openCount: Int { state.withLock { $0.opened } }

    /// How many reads the idle connections remember (`PreparedStatements.remembered`).
    var rememberedCount: Int { state.withLock { $0.idle.reduce(0) { $0 + ($1.prepared?.rememberedCount ?? 0) } } }

    /// Closes the idle connections; one in use closes when its read ends.
    func close() {
        let idle = state.withLock { state in
            state.isClosed = true
            defer { state.idle = [] }
            return state.idle
        }
        for connection in idle { connection.close() }
    }

    private func giveBack(_ connection: Connection) {
        let isClosed = state.withLock { state in
            if !state.isClosed { state.idle.append(connection) }
            return state.isClosed
        }
        if isClosed { connection.close() }
    }
}
