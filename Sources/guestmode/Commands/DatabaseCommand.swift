import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeCommandLine
import GuestModeKit

struct DatabaseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "db",
        abstract: "Inspect, migrate and check the store.",
        subcommands: [Status.self, Migrate.self, Check.self, Copy.self]
    )

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Show the store's profile, schema migrations (applied and pending) and row counts.")

        @OptionGroup var global: GlobalOptions

        func run() throws {
            let store = try global.storeLocation.open(migrating: false)
            let schema = try store.schemaStatus()
            let bound = try store.boundProfile()
            let profile = try bound.map { try ProfileLoader.parse($0.text, file: $0.origin) }
            let counts = schema.pending.isEmpty ? try store.tableCounts() : [:]
            struct Report: Encodable {
                var store: String
                var profile: String?
                var profileVersion: Int?
                var schema: SchemaStatus
                var rows: [String: Int]
            }
            let report = Report(
                store: global.storeDescription, profile: profile?.name, profileVersion: profile?.version,
                schema: schema,
                rows: counts)
            try global.output.data(report) {
                let output = global.output
                output.line("store:    \(report.store)")
                output.line("profile:  \(profile.map { "\($0.name) v\($0.version)" } ?? "none")")
                output.line(
                    "schema:   \(schema.current ?? "empty") (\(schema.applied.count) applied, \(schema.pending.count) pending)"
                )
                for identifier in schema.applied { output.line("  applied  \(identifier)") }
                for identifier in schema.pending {
                    output.line("  pending  \(identifier)  (run 'guestmode db migrate')")
                }
                if !counts.isEmpty {
                    output.line("rows:")
                    for (table, count) in counts.sorted(by: { $0.key < $1.key }) {
                        output.line("  \(padded(table, to: 24)) \(count)")
                    }
                }
            }
        }
    }

    struct Migrate: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "migrate",
            abstract: "Apply pending schema migrations, each in its own transaction.",
            discussion:
                "A failed migration leaves the store at the previous version; nothing needs forcing by hand. Then the kept grant draws a step left owed are built, in batches; a build stopped before its end is finished by the next migration."
        )

        @OptionGroup var global: GlobalOptions

        func run() throws {
            let store = try global.storeLocation.open(migrating: false)
            let progress = Progress("db migrate", unit: "kept grant draws", global: global)
            let migration = try GuestMode.migrate(
                store: store, location: global.storeDescription, faults: InjectedFaults.faults
            ) { step in
                switch step {
                case .applied(let identifier): global.output.detail("applied \(identifier)")
                case .builtGrantDraws(let built): if built > 0 { progress.update(done: built, total: nil) }
                }
            }
            if migration.grantDrawsBuilt > 0 { progress.finish() }
            let schema = try store.schemaStatus()
            struct Migrated: Encodable { var applied: [String]; var current: String?; var grantDrawsBuilt: Int }
            let migrated = Migrated(
                applied: migration.applied, current: schema.current, grantDrawsBuilt: migration.grantDrawsBuilt)
            try global.output.result(migrated) {
                if migration.applied.isEmpty {
                    global.output.line("schema is up to date (\(schema.current ?? "empty"))")
                } else {
                    for identifier in migration.applied { global.output.line("applied \(identifier)") }
                }
                if migration.grantDrawsBuilt > 0 {
                    global.output.line(
                        "built the kept grant draws of \(counted(migration.grantDrawsBuilt, "user's meter", "users' meters"))"
                    )
                }
            }
        }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "check",
            abstract: "Run SQLite's integrity and foreign key checks, and check counters against events.",
            discussion: "Exits 0 when the store is healthy, 65 with the problems listed when it is not."
        )

        @OptionGroup var global: GlobalOptions

        func run() throws {
            let store = try global.storeLocation.open(migrating: false)
            var problems = try store.integrityProblems()
            // The kept grant draws are held against the replay of their ledger, which takes the profile the
            // store is bound to: a store with migrations pending has none to check.
            if (try? store.schemaStatus().pending.isEmpty) == true,
                let engine = try? GuestMode(store: store, location: global.storeDescription)
            {
                problems += try engine.grantDrawProblems()
            }
            struct Checked: Encodable { var ok: Bool; var problems: [String] }
            // The problems are data, printed with --quiet too; "ok" is for people.
            try global.output.data(Checked(ok: problems.isEmpty, problems: problems)) {
                for problem in problems { global.output.line(problem) }
                if problems.isEmpty { global.output.say("ok") }
            }
            if !problems.isEmpty {
                let pending = (try? store.schemaStatus().pending) ?? []
                throw GuestModeError(
                    .integrityCheckFailed,
                    "the store '\(global.storeDescription)' failed its integrity check (\(counted(problems.count, "problem")))"
                        + (pending.isEmpty ? "" : "; 'guestmode db migrate' applies the pending schema migrations")
                )
            }
        }
    }

    struct Copy: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "copy",
            abstract: "Copy the whole store to a new one, SQLite or PostgreSQL, and verify it table by table.",
            discussion:
                "Every row of every table is copied with its ids, then each table's row count and SHA-256 checksum are compared; on a mismatch the destination is discarded and the command exits 65."
        )

        @OptionGroup var global: GlobalOptions

        @Option(
            help: ArgumentHelp("The store to create: a file path or a postgres:// URI.", valueName: "destination"))
        var to: String

        @Option(
            help: ArgumentHelp(
                "With a PostgreSQL destination, the schema to create it in (default guestmode).", valueName: "schema"))
        var toSchema: String?

        @Flag(name: .long, help: "Replace an existing store at the destination (only once the copy is verified).")
        var force = false

        func run() throws {
            let source = try global.storeLocation
            var target = try StoreLocation(to)
            if let toSchema {
                guard case .postgres(let uri, _) = target else {
                    throw GuestModeError(
                        .invalidSchema, "--to-schema goes with a postgres:// destination")
                }
                target = .postgres(uri: uri, schema: toSchema)
            }
            if source.isSame(as: target) {
                throw GuestModeError(
                    .sameStore, "--to names the store being copied ('\(target.description)'); give another destination")
            }
            let engine = try global.openEngine()
            let output = global.output
            output.detail("copying \(source.description) to \(target.description)")
            var digests: [String: TableDigest] = [:]
            let progress = Progress("db copy", unit: "tables", global: global)
            var tablesDone = 0
            try target.create(replacing: force) { destination in
                digests = try StoreCopy.copy(
                    from: engine.store, to: destination, guestOwner: engine.profile.guestOwner,
                    progress: {
                        output.detail($0)
                        tablesDone += 1
                        progress.update(done: tablesDone, total: nil)
                    })
            }
            progress.finish(done: digests.count, total: digests.count)
            // The kept grant draws are derived, so no copy carries them: the new store builds its own, as a
            // migration does, and a build stopped here is finished by its next opening.
            let copy = GuestMode(profile: engine.profile, store: try target.open())
            let building = Progress("db copy", unit: "kept grant draws", global: global)
            let built = try copy.buildMissingGrantDraws { if $0 > 0 { building.update(done: $0, total: nil) } }
            if built > 0 { building.finish() }
            output.detail("built the kept grant draws of \(counted(built, "user's meter", "users' meters"))")
            struct Report: Encodable {
                var source: String
                var destination: String
                var tables: [String: TableDigest]
            }
            let report = Report(source: source.description, destination: target.description, tables: digests)
            try output.result(report) {
                for (table, digest) in digests.sorted(by: { $0.key < $1.key }) {
                    output.line(
                        "\(padded(table, to: 24)) \(digest.rows) rows  sha256 \(digest.sha256.prefix(16))"
                    )
                }
                output.line("copied \(source.description) to \(target.description); every table verified")
            }
        }
    }
}
