import Foundation
import GuestModeKit
import GuestModePostgres
import GuestModeSQLite

/// Where `--store` points and which backend serves it: a path is an embedded
/// SQLite file; a `postgres://` or `postgresql://` URI is a PostgreSQL
/// database, and `postgres:` alone means libpq's defaults from the PG*
/// environment and ~/.pgpass, as psql reads them.
package enum StoreLocation {
    case sqlite(path: String)
    case postgres(uri: String, schema: String)

    package init(_ text: String, schema: String? = nil) throws {
        if text == "postgres:" || text == "postgresql:" {
            self = .postgres(uri: "", schema: schema ?? "guestmode")
        } else if text.hasPrefix("postgres://") || text.hasPrefix("postgresql://") {
            self = .postgres(uri: text, schema: schema ?? "guestmode")
        } else if let scheme = text.firstRange(of: "://").map({ String(text[..<$0.lowerBound]) }),
            scheme.allSatisfy({ $0.isLetter || $0 == "+" })
        {
            throw GuestModeError(
                .unsupportedStore,
                "--store '\(scheme)://…' is not a store guestmode can open; give a file path or a postgres:// URI")
        } else if text.contains("="),
            // The pattern is built only for a text it could match: building it cost every command 2.5 M instructions.
            text.contains(/(?i)(?:^|\s)(?:host|hostaddr|port|dbname|user|password|service|sslmode)\s*=/)
        {
            // A keyword/value connection string would otherwise become a SQLite file named after it, password and all.
            throw GuestModeError(
                .unsupportedStore,
                "--store takes a file path or a postgres:// URI, not a keyword/value connection string; write it as postgres://user@host:port/database (the password in ~/.pgpass or PGPASSWORD)"
            )
        } else {
            if schema != nil {
                throw GuestModeError(.invalidSchema, "--schema goes with a postgres:// store")
            }
            self = .sqlite(path: text)
        }
    }

    /// How the store is named in messages, documents and journals: never with a password.
    package var description: String {
        switch self {
        case let .sqlite(path): path
        case let .postgres(uri, schema): "\(PostgresStore.describe(uri)) (schema \(schema))"
        }
    }

    /// `description` for a `--store` text that may not even be a valid location
    /// (an error about it must not print its password either).
    package static func describe(_ text: String, schema: String? = nil) -> String {
        if let location = try? StoreLocation(text, schema: schema) { return location.description }
        return PostgresStore.describe(text)
    }

    /// Opens an existing store. Pending schema migrations are applied unless
    /// `migrating` is false (`db status` looks without writing). `connections`
    /// asks for a pool of that many (`serve`); without it, one command needs
    /// one connection, and a SQLite pool's opening would write to the file
    /// (docs/ARCHITECTURE.md): a command that changes nothing must leave it byte for byte.
    /// `wait` (`serve --store-wait`) bounds the waits a caller's `StoreDeadline`
    /// does not: another process's lock, a free connection, an unanswered
    /// statement; without it the backends' own defaults hold.
    package func open(migrating: Bool = true, connections: Int? = nil, wait: Duration? = nil) throws -> any GuestStore {
        switch self {
        case let .sqlite(path):
            try SQLiteStore.open(
                path: path, migrating: migrating, connections: connections.map { .pool(maximumReaders: $0) } ?? .single,
                busyTimeout: wait ?? SQLiteStore.defaultBusyTimeout)
        case let .postgres(uri, schema):
            try PostgresStore.open(
                uri: uri, schema: schema, migrating: migrating,
                poolSize: connections ?? PostgresStore.defaultPoolSize,
                connectionWait: wait ?? PostgresStore.defaultConnectionWait,
                // A statement gets the whole wait, and at least a second: `--store-wait 0.001` refuses
                // requests that queue, not every statement. Connecting within a request is bounded by
                // the request's `StoreDeadline`, opening the store by the default.
                statementTimeout: wait.map { max($0, .seconds(1)) })
        }
    }

    /// Creates a store bound to a profile; with `replacing`, an existing one is
    /// replaced only once the new one is complete.
    package func create(profile source: ProfileCatalog.Source, replacing: Bool, now: Date) throws {
        switch self {
        case let .sqlite(path):
            try SQLiteStore.create(path: path, replacing: replacing) { store in
                try store.bindProfile(text: source.text, origin: source.origin, now: now)
                keepProfileCache(source, in: store)
            }
        case let .postgres(uri, schema):
            try PostgresStore.create(uri: uri, schema: schema, replacing: replacing) { store in
                try store.bindProfile(text: source.text, origin: source.origin, now: now)
                keepProfileCache(source, in: store)
            }
        }
    }

    /// The validated profile kept next to its text (see `ProfileCache`), made
    /// from the exact text bound; best effort, the first opening keeps it otherwise.
    private func keepProfileCache(_ source: ProfileCatalog.Source, in store: any GuestStore) {
        guard let profile = try? ProfileLoader.parse(source.text, file: source.origin),
            let entry = try? ProfileCache.entry(for: profile, text: source.text)
        else { return }
        try? store.saveProfileCache(entry)
    }

    /// Creates a store and fills it with `configure`; a throw leaves no new
    /// store behind (a SQLite file is removed, a PostgreSQL transaction rolled
    /// back). With `replacing`, an existing store is replaced only once the
    /// new one is complete, and kept when `configure` throws.
    package func create(replacing: Bool, configure: (any GuestStore) throws -> Void) throws {
        switch self {
        case let .sqlite(path):
            try SQLiteStore.create(path: path, replacing: replacing) { store in try configure(store) }
        case let .postgres(uri, schema):
            try PostgresStore.create(uri: uri, schema: schema, replacing: replacing) { store in try configure(store) }
        }
    }

    /// Whether two locations name the same store (a copy onto itself is refused).
    package func isSame(as other: StoreLocation) -> Bool {
        switch (self, other) {
        case let (.sqlite(left), .sqlite(right)):
            let resolve = { (path: String) in
                URL(fileURLWithPath: path).standardizedFileURL.resolvingSymlinksInPath().path
            }
            return resolve(left) == resolve(right)
        case let (.postgres(leftURI, leftSchema), .postgres(rightURI, rightSchema)):
            return leftURI == rightURI && leftSchema == rightSchema
        default:
            return false
        }
    }

    /// The profile a store is bound to, read without writing to it.
    package func boundProfile() throws -> (text: String, origin: String)? {
        switch self {
        case let .sqlite(path): try SQLiteStore.boundProfile(readingOnly: path)
        case let .postgres(uri, schema):
            try PostgresStore.open(uri: uri, schema: schema, migrating: false).boundProfile()
        }
    }
}
