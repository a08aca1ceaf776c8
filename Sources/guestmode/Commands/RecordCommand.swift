import ArgumentParser
import Foundation
import GuestModeKit

struct RecordCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Store, read, list and delete a user's JSON records.",
        discussion: """
            A put that would exceed the user's tier cap writes nothing and exits 10 (needs-account) for a \
            guest or 11 (needs-premium) for a free account, as the profile's tier declares. Replacing an \
            existing key never counts against the cap.
            """,
        subcommands: [Put.self, Get.self, List.self, Delete.self]
    )

    struct Put: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "put", abstract: "Store a record, enforcing the tier cap.")

        @OptionGroup var global: GlobalOptions

        // USER COLLECTION KEY (as in get and delete): COLLECTION KEY alone with --unowned, none with --from.
        @Argument(help: "The user id (left out with --unowned: COLLECTION KEY).") var user: String?
        @Argument(help: "The collection.") var collection: String?
        @Argument(help: "The record key.") var key: String?

        @Option(help: ArgumentHelp("The record as JSON.", valueName: "json"))
        var data: String?

        @Option(help: ArgumentHelp("Read the record's JSON from a file; - reads standard input.", valueName: "file"))
        var file: String?

        @Flag(
            help: ArgumentHelp(
                "Write a record owned by the profile's guest owner, as an app does before any user exists (no cap); give COLLECTION KEY only. 'migrate adopt USER' later gives it to a user."
            ))
        var unowned = false

        @Option(
            help: ArgumentHelp(
                "Load many records from NDJSON, one {\"user_id\",\"collection\",\"key\",\"data\"} a line; - reads standard input. All or nothing.",
                valueName: "file"))
        var from: String?

        @Option(
            help: ArgumentHelp(
                "With --from: what an existing key gets: replace (the default), skip, or fail (nothing is stored).",
                valueName: "policy"))
        var onConflict: RecordConflictPolicy?

        /// The record meant: (nil, collection, key) with --unowned.
        var location: (user: String?, collection: String, key: String) {
            if unowned { return (nil, user ?? "", collection ?? "") }
            return (user, collection ?? "", key ?? "")
        }

        func validate() throws {
            if from != nil {
                if user != nil || collection != nil || key != nil || data != nil || file != nil || unowned {
                    throw ValidationError("give either USER COLLECTION KEY with --data or --file, or --from, not both")
                }
                return
            }
            if onConflict != nil { throw ValidationError("--on-conflict goes with --from") }
            if (data == nil) == (file == nil) { throw ValidationError("give exactly one of --data and --file") }
            if unowned {
                if key != nil {
                    throw ValidationError("with --unowned give COLLECTION KEY only: the guest owner owns the record")
                }
                if collection == nil { throw ValidationError("give --unowned COLLECTION KEY") }
                return
            }
            if user == nil || collection == nil || key == nil {
                throw ValidationError("give USER COLLECTION KEY (or --unowned COLLECTION KEY, or --from FILE)")
            }
        }

        func run() throws {
            let engine = try global.openEngine()
            let now = try global.currentTime()
            if let from { return try load(from, engine: engine, now: now) }
            let (user, collection, key) = location
            let bytes = try data.map { Data($0.utf8) } ?? readInput(file ?? "-")
            let result =
                if let user {
                    try engine.putRecord(user: user, collection: collection, key: key, jsonBytes: bytes, now: now)
                } else {
                    try engine.putOwnerlessRecord(collection: collection, key: key, jsonBytes: bytes, now: now)
                }
            if global.json { try global.output.json(result) }
            if unowned {
                if !global.quiet && !global.json {
                    global.output.line("\(result.isReplacement ? "replaced" : "stored") ownerless \(collection)/\(key)")
                }
                return
            }
            try LimitCommand.finish(result.limit, stored: result.outcome == .allowed, key: key, global: global)
        }

        /// `--from`: standard input is spooled to a file first, so a store
        /// that runs the transaction again reads the same lines.
        private func load(_ source: String, engine: GuestMode, now: Date) throws {
            var spool: URL?
            defer { if let spool { unlink(spool.path) } }
            if source == "-" {
                spool = URL(fileURLWithPath: try StandardStream.spoolStandardInput(suffix: ".ndjson"))
            } else if !FileManager.default.fileExists(atPath: source) {
                throw GuestModeError(.notFound, code: .fileNotFound, "no file '\(source)'")
            }
            let report = try engine.putRecords(
                from: spool ?? URL(fileURLWithPath: source), label: source == "-" ? "<stdin>" : source,
                onConflict: onConflict ?? .replace, now: now)
            if global.json { return try global.output.json(report) }
            if !global.quiet {
                global.output.line(
                    "\(counted(report.lines, "line")): \(report.added) added, \(report.replaced) replaced, \(report.skipped) skipped"
                )
            }
        }
    }

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Print a record's JSON.")

        @OptionGroup var global: GlobalOptions

        @OptionGroup var record: RecordLocation

        func run() throws {
            let stored = try global.openEngine().record(
                user: record.user, collection: record.collection, key: record.key)
            if global.json { return try global.output.json(stored) }
            global.output.line(stored.data)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List a user's records in a collection.")

        @OptionGroup var global: GlobalOptions

        @OptionGroup var listing: ListingOptions

        @Argument(help: "The user id.") var user: String
        @Argument(help: "The collection.") var collection: String

        func run() throws {
            let records = try global.openEngine().records(user: user, collection: collection)
            try listing.render(
                records, header: ["KEY", "UPDATED", "DATA"],
                rows: records.map { [$0.key, Timestamp.format($0.updatedAt), $0.data] }, global: global)
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a record.")

        @OptionGroup var global: GlobalOptions

        @OptionGroup var record: RecordLocation

        func run() throws {
            try global.openEngine().deleteRecord(
                user: record.user, collection: record.collection, key: record.key, now: try global.currentTime())
            if global.json {
                return try global.output.json(
                    RecordDeletion(userId: record.user, collection: record.collection, key: record.key))
            }
            if !global.quiet { global.output.line("deleted \(record.collection)/\(record.key)") }
        }
    }
}

/// Which record a command is about: `USER COLLECTION KEY`.

extension RecordConflictPolicy: ExpressibleByArgument {}
