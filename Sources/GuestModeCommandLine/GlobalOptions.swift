import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeKit
import GuestModePostgres

/// Options every command takes (guestmode(1)). They may also be written before
/// the command name: `guestmode --store s.sqlite profile show`. `QuickCommand` reads them too: an
/// option added here is added there, or QuickParseTests fails.
package struct GlobalOptions: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "The store: a SQLite file, or a postgres:// URI ('postgres:' alone reads the PG* environment) (default: $GUESTMODE_STORE, else ./guestmode.sqlite).",
            valueName: "path|uri"))
    package var store: String?

    @Option(
        name: .long,
        help: ArgumentHelp(
            "With a PostgreSQL store, the schema holding guestmode's tables (default: $GUESTMODE_SCHEMA, else guestmode).",
            valueName: "name"))
    package var schema: String?

    // `.unconditional`: a time relative to the clock may begin with a minus sign (`--now -1h`).
    @Option(
        name: .long, parsing: .unconditional,
        help: ArgumentHelp(
            "The current time: ISO 8601, or relative to the system clock (+30d, -1h, +P1M) (default: $GUESTMODE_NOW, else the system clock). Every policy reads only this clock.",
            valueName: "time"))
    package var now: String?

    @Flag(name: .long, help: "Print one JSON document on stdout; errors as JSON on stderr.")
    package var json = false

    @Flag(name: [.customShort("q"), .long], help: "Print nothing but data and errors.")
    package var quiet = false

    @Flag(name: [.customShort("v"), .long], help: "Explain each step on stderr.")
    package var verbose = false

    package init() {}

    /// The `--store` text as given: for opening only. It may hold a password;
    /// printers use `storeDescription`.
    private var storeText: String {
        if let store { return store }
        if let environment = EnvironmentVariable.nonEmpty("GUESTMODE_STORE") { return environment }
        return "guestmode.sqlite"
    }

    /// The store as every printer names it (`StoreLocation.description`): never with a password.
    package var storeDescription: String {
        (try? storeLocation)?.description ?? StoreLocation.describe(storeText)
    }

    /// The deployment's backup key file: $GUESTMODE_BACKUP_KEY_FILE, else `<store>.key` beside a SQLite
    /// store, else for a PostgreSQL store `$XDG_CONFIG_HOME/guestmode/postgres-<id>.key` (default
    /// `~/.config`), `<id>` naming the database and schema (never the password), so every machine that
    /// imports the key with `backup key import` finds it at the same place.
    package var backupKeyPath: String {
        let environment = ProcessInfo.processInfo.environment
        if let path = environment["GUESTMODE_BACKUP_KEY_FILE"], !path.isEmpty { return path }
        guard case let .postgres(uri, schema)? = try? storeLocation else { return storeText + ".key" }
        let configuration =
            environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? ((environment["HOME"] ?? NSHomeDirectory()) + "/.config")
        let identity = StreamingSHA256.hex(of: Array(PostgresStore.identity(uri, schema: schema).utf8)).prefix(16)
        return "\(configuration)/guestmode/postgres-\(identity).key"
    }

    /// $GUESTMODE_BACKUP_KEY_FILE, when set: a file named on purpose must exist,
    /// or a typo would make a new key and every later archive "another deployment's".
    private var namedBackupKeyFile: String? {
        EnvironmentVariable.nonEmpty("GUESTMODE_BACKUP_KEY_FILE")
    }

    private func missingNamedKey(_ path: String) -> GuestModeError {
        GuestModeError(
            .backupKeyNotFound,
            "GUESTMODE_BACKUP_KEY_FILE names '\(path)', which does not exist; correct the variable, or put the deployment's key there with 'guestmode backup key import FILE'"
        )
    }

    /// The deployment's backup key, or nil when it has none yet; a key file
    /// named by GUESTMODE_BACKUP_KEY_FILE that does not exist is an error.
    package func backupKey() throws -> BackupKey? {
        let key = try BackupKey.load(path: backupKeyPath)
        if key == nil, let named = namedBackupKeyFile { throw missingNamedKey(named) }
        return key
    }

    /// The deployment's backup key for signing. A store whose key was never
    /// made (one copied with `db copy`, or older than keys) gets one beside it
    /// (0600, said so with --verbose); a key file named by
    /// GUESTMODE_BACKUP_KEY_FILE is never created here (`init` and `backup key
    /// import` do that).
    package func backupKeyCreatingIfMissing() throws -> BackupKey {
        if namedBackupKeyFile != nil, let key = try backupKey() { return key }
        return try createBackupKeyIfMissing()
    }

    /// `init`: the deployment's key, created wherever it belongs when missing.
    package func createBackupKeyIfMissing() throws -> BackupKey {
        let (key, created) = try BackupKey.loadOrCreate(path: backupKeyPath)
        if created { output.detail("created the backup key \(key.id) in \(backupKeyPath) (mode 0600)") }
        return key
    }

    package func currentTime() throws -> Date {
        try GlobalOptions.currentTime(now: now)
    }

    /// `currentTime()` as a clock a long-running command reads again for each thing it does.
    package var clock: @Sendable () throws -> Date {
        let now = self.now
        return { try GlobalOptions.currentTime(now: now) }
    }

    private static func currentTime(now: String?) throws -> Date {
        if let now { return try GlobalOptions.time(now, what: "--now") }
        if let environment = EnvironmentVariable.nonEmpty("GUESTMODE_NOW") {
            return try GlobalOptions.time(environment, what: "GUESTMODE_NOW")
        }
        return Date()
    }

    /// An ISO 8601 time, or a time relative to the system clock: a sign and
    /// any duration (`+30d`, `-1h`, `+P1M`).
    package static func time(_ text: String, what: String, clock: Date = Date()) throws -> Date {
        switch RelativeTime.resolve(text, from: clock) {
        case .success(let date)?: return date
        case .failure(let refusal)?:
            throw GuestModeError(
                .badTime,
                "\(what): '\(text)' is not a relative time (\(refusal)); write a sign and a duration such as +30d, -1h or +P1M, or an ISO 8601 time"
            )
        case nil:
            guard let date = Timestamp.parse(text) else {
                throw GuestModeError(
                    .badTime,
                    "\(what): '\(text)' is not a time; write ISO 8601 (2026-11-22T09:30:00Z) or a time relative to the clock (+30d, -1h, +P1M)"
                )
            }
            return date
        }
    }

    package var output: Output { Output(isJSON: json, isQuiet: quiet, isVerbose: verbose) }

    package var storeLocation: StoreLocation {
        get throws {
            if let schema { return try StoreLocation(storeText, schema: schema) }
            // GUESTMODE_SCHEMA is for PostgreSQL stores; a SQLite store named alongside it ignores it.
            let location = try StoreLocation(storeText)
            guard case .postgres(let uri, _) = location,
                let environment = EnvironmentVariable.nonEmpty("GUESTMODE_SCHEMA")
            else { return location }
            return .postgres(uri: uri, schema: environment)
        }
    }

    /// The engine over the store; `connections` and `wait` as `StoreLocation.open` takes them. The
    /// store is closed when the process exits (`ExitingStores`), not when the engine is dropped.
    package func openEngine(connections: Int? = nil, wait: Duration? = nil) throws -> GuestMode {
        let location = try storeLocation
        let store = ExitingStores.keep(try location.open(connections: connections, wait: wait))
        var engine = try GuestMode(store: store, location: location.description)
        InjectedFaults.install(on: &engine)
        output.detail("store \(location.description), profile \(engine.profile.name) v\(engine.profile.version)")
        // The store was opened migrating: a migration ends with the build of the kept grant draws it left owed.
        if engine.owedGrantDraws {
            let built = try engine.buildOwedGrantDraws()
            output.detail("built the kept grant draws of \(counted(built, "user's meter", "users' meters"))")
        }
        return engine
    }

    package func catalog() -> ProfileCatalog {
        ProfileCatalog.make(executable: executableURL(), environment: ProcessInfo.processInfo.environment)
    }
}

package func executableURL() -> URL {
    if let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        return URL(fileURLWithPath: link)
    }
    return URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
}
