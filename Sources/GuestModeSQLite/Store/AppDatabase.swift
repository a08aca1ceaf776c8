import Foundation
internal import GRDB
import GuestModeKit

/// The SQLite database behind `SQLiteStore`, in GRDB's AppDatabase shape: a
/// writer and a private migrator. GRDB never leaves this target: callers
/// see `GuestStore` and domain types only.
struct AppDatabase: Sendable {
    let writer: any DatabaseWriter

    /// Names of the migrations this build knows, oldest first. Shipped
    /// migrations are never edited; new ones are appended.
    static var knownMigrations: [String] { migrator.migrations }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1-initial") { db in
            try db.execute(sql: Schema.v1)
        }
        migrator.registerMigration("v2-conflict-archive") { db in
            try db.execute(sql: Schema.v2)
        }
        migrator.registerMigration("v3-server") { db in
            try db.execute(sql: Schema.v3)
        }
        migrator.registerMigration("v4-device-index") { db in
            try db.execute(sql: Schema.v4)
        }
        migrator.registerMigration("v5-grants") { db in
            try db.execute(sql: Schema.v5)
        }
        migrator.registerMigration("v6-webhooks") { db in
            try db.execute(sql: Schema.v6)
        }
        migrator.registerMigration("v7-sign-in-buckets") { db in
            try db.execute(sql: Schema.v7)
        }
        migrator.registerMigration("v8-migration-attempts") { db in
            try db.execute(sql: Schema.v8)
        }
        migrator.registerMigration("v9-webhook-heads") { db in
            try db.execute(sql: Schema.v9)
        }
        migrator.registerMigration("v10-meter-totals") { db in
            try db.execute(sql: Schema.v10)
        }
        migrator.registerMigration("v11-identity-email") { db in
            try db.execute(sql: Schema.v11)
        }
        migrator.registerMigration("v12-signing-keys") { db in
            try db.execute(sql: Schema.v12)
        }
        migrator.registerMigration("v13-store-purchases") { db in
            try db.execute(sql: Schema.v13)
        }
        migrator.registerMigration("v14-meter-grant-draws") { db in
            try db.execute(sql: Schema.v14)
        }
        migrator.registerMigration("v15-meter-grant-draws-owed") { db in
            try db.execute(sql: Schema.v15)
        }
        return migrator
    }

    init(_ writer: any DatabaseWriter, migrating: Bool = true) throws {
        self.writer = writer
        // Only a store with pending migrations is written to on open: a
        // command that changes nothing must leave the file byte for byte.
        if migrating, try !pendingMigrations().isEmpty { _ = try migrateStepwise { _ in } }
    }

    /// A fresh in-memory store, for tests and replays.
    static func empty() throws -> AppDatabase {
        try AppDatabase(DatabaseQueue(configuration: configuration()))
    }

    static func configuration(
        readOnly: Bool = false, busyTimeout: Duration = SQLiteStore.defaultBusyTimeout
    ) -> Configuration {
        var configuration = Configuration()
        configuration.readonly = readOnly
        // Concurrent guestmode processes wait for each other instead of failing, up to
        // `busyTimeout` and never past the caller's `StoreDeadline`.
        configuration.busyMode = .callback(BusyWait.callback(limit: busyTimeout))
        configuration.foreignKeysEnabled = true
        configuration.prepareDatabase { db in
            if !readOnly { try db.execute(sql: "PRAGMA synchronous = NORMAL") }
        }
        return configuration
    }

    func pendingMigrations() throws -> [String] {
        try writer.read { db in
            guard try AppDatabase.hasHistory(db) else { return AppDatabase.knownMigrations }
            let applied = try AppDatabase.migrator.appliedIdentifiers(db)
            return AppDatabase.knownMigrations.filter { !applied.contains($0) }
        }
    }

    func appliedMigrations() throws -> [String] {
        try writer.read { db in
            guard try AppDatabase.hasHistory(db) else { return [] }
            return try AppDatabase.migrator.appliedMigrations(db)
        }
    }

    /// Whether the schema history table exists, asked first: GRDB's own check
    /// swallows the reason it could not look, so a full disk would read as
    /// "no such table: grdb_migrations".
    private static func hasHistory(_ db: Database) throws -> Bool {
        try db.tableExists("grdb_migrations")
    }

    /// Applies pending migrations one at a time, each in its own
    /// transaction, so a failure leaves the store at the previous version.
    func migrateStepwise(progress: (String) -> Void) throws -> [String] {
        // Each schema step must survive a power cut once committed, like an import.
        try writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
        defer { try? writer.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") } }
        let pending = try pendingMigrations()
        let known = AppDatabase.knownMigrations
        if let firstPending = pending.first.flatMap(known.firstIndex(of:)),
            let later = try appliedMigrations().last(where: { (known.firstIndex(of: $0) ?? -1) > firstPending })
        {
            // GRDB traps when asked for a step the history says was passed; no build leaves such a gap.
            throw GuestModeError(
                .corruptStore,
                "the store's schema history has \(later) applied but not the earlier \(known[firstPending]): it was edited or damaged, and which steps the tables have cannot be told; nothing was changed. Restore the store from a backup"
            )
        }
        var applied: [String] = []
        for identifier in pending {
            do {
                try AppDatabase.migrator.migrate(writer, upTo: identifier)
            } catch let error as DatabaseError {
                // A full disk or a failing one is no fault of the migration: the caller names the file (exit 74).
                if error.resultCode == .SQLITE_FULL || error.resultCode == .SQLITE_IOERR { throw error }
                // The schema history may itself be what could not be written.
                let current = (try? appliedMigrations().last) ?? "empty"
                throw GuestModeError(
                    .schemaMigrationFailed,
                    "schema migration \(identifier) failed: \(error.message ?? "\(error)"); the store is unchanged at \(current). Fix the cause and migrate again"
                )
            }
            applied.append(identifier)
            progress(identifier)
        }
        return applied
    }
}

/// Opening a store file: the checks that must happen before anything can be
/// written to it.
enum StoreFile {
    static func open(
        path: String, creating: Bool, migrating: Bool = true, connections: SQLiteStore.Connections = .single,
        busyTimeout: Duration = SQLiteStore.defaultBusyTimeout
    ) throws -> AppDatabase {
        if case .pool(let maximumReaders) = connections, maximumReaders < 1 {
            throw GuestModeError(
                .invalidPoolSize, "a pool of \(maximumReaders) readers cannot read; give at least 1")
        }
        let fileManager = FileManager.default
        var isDirectory: ObjCBool = false
        if fileManager.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            throw GuestModeError(
                .storeIsDirectory,
                "the store '\(path)' is a directory, not a store file"
            )
        }
        let exists = fileManager.fileExists(atPath: path)
        if exists {
            if creating {
                throw GuestModeError(
                    .storeExists,
                    "a store already exists at '\(path)'")
            }
        } else {
            if !creating {
                throw GuestModeError(
                    .storeNotFound, "no store at '\(path)'")
            }
            try createPrivateFile(path: path)
        }
        do {
            if case .pool(let maximumReaders) = connections, !creating {
                // GRDB's pool writes a transaction on opening a store whose WAL is
                // empty (it creates and drops a table, so its readers always find a
                // WAL): the schema history is read first, from a read-only
                // connection, so a store from a newer guestmode is refused untouched.
                try refuseUnknownSchema(path: path)
                var configuration = AppDatabase.configuration(busyTimeout: busyTimeout)
                configuration.maximumReaderCount = maximumReaders
                return try AppDatabase(
                    DatabasePool(path: path, configuration: configuration), migrating: migrating)
            }
            // A single connection never writes on opening: WAL is set once,
            // persistently, when the store is created.
            let queue = try DatabaseQueue(
                path: path, configuration: AppDatabase.configuration(busyTimeout: busyTimeout))
            // The schema history is read on this same connection, before
            // anything is written: no second connection (and no second round
            // of -wal/-shm files) just to look.
            // The same read tells whether anything is left to migrate: a store
            // with every known migration applied (nearly every opening) is not
            // asked again.
            var upToDate = false
            if exists { upToDate = try queue.read { db in try refuseUnknownSchema(db, path: path) } }
            if creating {
                _ = try queue.writeWithoutTransaction { db in try String.fetchOne(db, sql: "PRAGMA journal_mode = WAL")
                }
            }
            return try AppDatabase(queue, migrating: migrating && !upToDate)
        } catch let error as DatabaseError {
            throw StoreFile.translate(error, path: path)
        }
    }

    /// Reads the schema history without writing a byte, so a store from a
    /// newer guestmode is refused untouched.
    static func refuseUnknownSchema(path: String) throws {
        do {
            let queue = try DatabaseQueue(path: path, configuration: AppDatabase.configuration(readOnly: true))
            defer { try? queue.close() }
            _ = try queue.read { db in try refuseUnknownSchema(db, path: path) }
        } catch let error as DatabaseError {
            throw translate(error, path: path)
        }
    }

    /// The check of `refuseUnknownSchema(path:)` on an open connection; reads
    /// only. True when every migration this build knows is applied (nothing to migrate).
    @discardableResult
    static func refuseUnknownSchema(_ db: Database, path: String) throws -> Bool {
        // One read of the table names, not GRDB's `tableExists`, which loads its whole schema cache first:
        // a fifth of opening a store, on every command (bench/results.md, "Start-up").
        let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")
        guard tables.contains("grdb_migrations") else {
            if tables.isEmpty { return false }
            throw GuestModeError(
                .notAStore, "'\(path)' is an SQLite database but not a guestmode store (no schema history)")
        }
        let applied = try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations")
        let known = Set(AppDatabase.knownMigrations)
        let unknown = applied.filter { !known.contains($0) }
        if !unknown.isEmpty {
            throw GuestModeError(
                .storeTooNew,
                "the store '\(path)' was written by a newer guestmode (schema \(unknown.sorted().joined(separator: ", "))); this guestmode knows schema up to \(AppDatabase.knownMigrations.last ?? "none"). Upgrade guestmode; the store was not changed"
            )
        }
        return Set(applied).isSuperset(of: known)
    }

    static func createPrivateFile(path: String) throws {
        let descriptor = Foundation.open(path, O_CREAT | O_EXCL | O_WRONLY, 0o600)
        if descriptor < 0 {
            if DiskSpace.isFull(errno) { throw DiskSpace.full(writing: path, what: "the store") }
            let reason = String(cString: strerror(errno))
            throw GuestModeError(
                .cannotCreateStore, "cannot create the store '\(path)': \(reason)")
        }
        close(descriptor)
    }

    static func translate(_ error: DatabaseError, path: String) -> GuestModeError {
        switch error.resultCode {
        case .SQLITE_NOTADB, .SQLITE_CORRUPT:
            GuestModeError(
                .corruptStore, "'\(path)' is not a guestmode store or is damaged: \(error.message ?? "\(error)")")
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            GuestModeError(.storeBusy, "the store '\(path)' is busy; try again later")
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_READONLY:
            GuestModeError(
                .cannotOpenStore, "cannot open the store '\(path)': \(error.message ?? "\(error)")"
            )
        case .SQLITE_FULL:
            DiskSpace.fullUsingStore(path)
        case .SQLITE_IOERR where DiskSpace.looksFull(usingStore: path):
            DiskSpace.fullUsingStore(path)
        case .SQLITE_IOERR:
            GuestModeError(.ioError, "I/O error on the store '\(path)': \(error.message ?? "\(error)")")
        default:
            GuestModeError(.databaseError, "database error on '\(path)': \(error)")
        }
    }
}

/// How a connection waits for another's lock: the delays SQLite's own busy
/// timeout sleeps (1 ms growing to 100 ms), summed the way it sums them, so
/// `limit` means what `busy_timeout` meant; and never past `StoreDeadline`, so
/// a server's request gives up when what is left of its wait is used up.
enum BusyWait {
    private static let delays: [Duration] = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100].map { .milliseconds($0) }
    private static let slept: [Duration] = delays.indices.map { index in delays[..<index].reduce(.zero, +) }

    static func callback(limit: Duration) -> Database.BusyCallback {
        { tries in
            let tries = max(0, tries)
            let delay = tries < delays.count ? delays[tries] : .milliseconds(100)
            let sleptSoFar =
                tries < delays.count
                ? slept[tries] : slept[delays.count - 1] + delays[delays.count - 1] * (tries - delays.count + 1)
            var next = min(delay, limit - sleptSoFar)
            if let remaining = StoreDeadline.remaining { next = min(next, remaining) }
            guard next > .zero else { return false }
            let (seconds, attoseconds) = next.components
            usleep(useconds_t(seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
            return true
        }
    }
}
