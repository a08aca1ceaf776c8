import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeKit

/// Options every command takes (DESIGN §3). They may also be written before
/// the command name: `guestmode --store s.sqlite profile show`.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(
        "The store: a SQLite file, or a postgres:// URI ('postgres:' alone reads the PG* environment) (default: $GUESTMODE_STORE, else ./guestmode.sqlite).",
        valueName: "path|uri"))
    var store: String?

    @Option(name: .long, help: ArgumentHelp(
        "With a PostgreSQL store, the schema holding guestmode's tables (default: $GUESTMODE_SCHEMA, else guestmode).",
        valueName: "name"))
    var schema: String?

    @Option(name: .long, help: ArgumentHelp(
        "The current time, ISO 8601 (default: $GUESTMODE_NOW, else the system clock). Every policy reads only this clock.",
        valueName: "time"))
    var now: String?

    @Flag(name: .long, help: "Print one JSON document on stdout; errors as JSON on stderr.")
    var json = false

    @Flag(name: [.customShort("q"), .long], help: "Print nothing but data and errors.")
    var quiet = false

    @Flag(name: [.customShort("v"), .long], help: "Explain each step on stderr.")
    var verbose = false

    static let names: Set<String> = ["--store", "--schema", "--now", "--json", "--quiet", "-q", "--verbose", "-v"]
    static let namesTakingValues: Set<String> = ["--store", "--schema", "--now"]

    var storePath: String {
        if let store { return store }
        if let environment = ProcessInfo.processInfo.environment["GUESTMODE_STORE"], !environment.isEmpty {
            return environment
        }
        return "guestmode.sqlite"
    }

    /// The deployment's backup key file: $GUESTMODE_BACKUP_KEY_FILE, else `<store>.key`.
    var backupKeyPath: String {
        if let environment = ProcessInfo.processInfo.environment["GUESTMODE_BACKUP_KEY_FILE"], !environment.isEmpty {
            return environment
        }
        return storePath + ".key"
    }

    /// The deployment's backup key, or nil when it has none yet.
    func backupKey() throws -> BackupKey? {
        try BackupKey.load(path: backupKeyPath)
    }

    /// The deployment's backup key, created (0600) when missing; said so with --verbose.
    func backupKeyCreatingIfMissing() throws -> BackupKey {
        let (key, created) = try BackupKey.loadOrCreate(path: backupKeyPath)
        if created { output.detail("created the backup key \(key.id) in \(backupKeyPath) (mode 0600)") }
        return key
    }

    func currentTime() throws -> Date {
        if let now { return try Timestamp.parseOrThrow(now, what: "--now") }
        if let environment = ProcessInfo.processInfo.environment["GUESTMODE_NOW"], !environment.isEmpty {
            return try Timestamp.parseOrThrow(environment, what: "GUESTMODE_NOW")
        }
        return Date()
    }

    var output: Output { Output(isJSON: json, isQuiet: quiet, isVerbose: verbose) }

    var storeLocation: StoreLocation {
        get throws {
            let environment = ProcessInfo.processInfo.environment["GUESTMODE_SCHEMA"].flatMap { $0.isEmpty ? nil : $0 }
            return try StoreLocation(storePath, schema: schema ?? environment)
        }
    }

    func openEngine() throws -> GuestMode {
        let location = try storeLocation
        let engine = try GuestMode.opening(try location.open(), at: location.description)
        output.detail("store \(location.description), profile \(engine.profile.name) v\(engine.profile.version)")
        return engine
    }

    func catalog() -> ProfileCatalog {
        ProfileCatalog.make(executable: executableURL(), environment: ProcessInfo.processInfo.environment)
    }
}

func executableURL() -> URL {
    if let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        return URL(fileURLWithPath: link)
    }
    return URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL
}
