import ArgumentParser
import Foundation
import GuestModeCommandLine
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
        subcommands: [Put.self, PutOwnerless.self, Load.self, Get.self, List.self, Delete.self]
    )

    struct Put: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "put", abstract: "Store a record, enforcing the tier cap.")

        /// `record put USER COLLECTION KEY --data JSON` (or `--file F`) without ArgumentParser's reflection
        /// (`QuickCommand`); the deprecated `--from` is left to ArgumentParser.
        static let quick = QuickCommand(
            path: ["record", "put"], operands: 3...3, options: ["--data": .value, "--file": .value]
        ) { line in
            var command = Put()
            command.global = line.global
            command.user = line.operands[0]
            command.collection = line.operands[1]
            command.key = line.operands[2]
            command.document = RecordDocument()
            command.document.data = try line.value("--data")
            command.document.file = try line.value("--file")
            command.from = nil
            command.onConflict = nil
            return command
        }

        @OptionGroup var global: GlobalOptions

        // USER COLLECTION KEY as in get and delete; none with the deprecated --from.
        @Argument(help: "The user id.") var user: String?
        @Argument(help: "The collection.") var collection: String?
        @Argument(help: "The record key.") var key: String?

        @OptionGroup var document: RecordDocument

        // `record load` before it had its name; still taken so scripts keep working, and said so.
        @Option(help: ArgumentHelp("Deprecated: 'record load FILE'.", valueName: "file", visibility: .hidden))
        var from: String?

        @Option(
            help: ArgumentHelp("Deprecated: 'record load --on-conflict'.", valueName: "policy", visibility: .hidden))
        var onConflict: RecordConflictPolicy?

        func validate() throws {
            if from != nil {
                if user != nil || collection != nil || key != nil || document.isGiven {
                    throw ValidationError("give either USER COLLECTION KEY with --data or --file, or --from, not both")
                }
                return
            }
            if onConflict != nil { throw ValidationError("--on-conflict goes with --from") }
            try document.requireOne()
            if user == nil || collection == nil || key == nil {
                throw ValidationError(
                    "give USER COLLECTION KEY ('record load FILE' loads many; 'record put-ownerless COLLECTION KEY' writes a record no user owns yet)"
                )
            }
        }

        func run() throws {
            let engine = try global.openEngine()
            let now = try global.currentTime()
            if let from {
                global.output.aside("guestmode: 'record put --from' is deprecated; use 'record load \(from)'")
                return try Load.load(from, onConflict: onConflict, engine: engine, now: now, global: global)
            }
            guard let user, let collection, let key else { return }
            let result = try engine.putRecord(
                user: user, collection: collection, key: key, jsonBytes: try document.bytes(), now: now)
            if let refusal = result.refusal {
                // The document says where the user stands; the refusal, the engine's, is the failure.
                if global.json { try global.output.json(result) }
                throw refusal.failure
            }
            try global.output.result(result, text: "stored \(collection)/\(key): \(result.limit.summary)")
        }
    }

    struct PutOwnerless: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "put-ownerless",
            abstract: "Store a record owned by the profile's guest owner, as an app does before any user exists.",
            discussion: """
                No cap applies and no user is touched; 'migrate adopt USER' later gives the record to a user. In \
                a collection with unique fields the key starts with the guest owner and a slash (/habit/day).
                """)

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The collection.") var collection: String
        @Argument(help: "The record key.") var key: String

        @OptionGroup var document: RecordDocument

        func validate() throws { try document.requireOne() }

        func run() throws {
            let result = try global.openEngine().putOwnerlessRecord(
                collection: collection, key: key, jsonBytes: try document.bytes(), now: try global.currentTime())
            try global.output.result(result) {
                global.output.line("\(result.isReplacement ? "replaced" : "stored") ownerless \(collection)/\(key)")
            }
        }
    }

    struct Load: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "load", abstract: "Store many records from NDJSON, all or nothing, enforcing each user's caps."
        )

        @OptionGroup var global: GlobalOptions

        @Argument(
            help: ArgumentHelp(
                "NDJSON, one {\"user_id\",\"collection\",\"key\",\"data\"} a line; - reads standard input.",
                valueName: "file"))
        var file: String

        @Option(
            help: ArgumentHelp(
                "What an existing key gets: replace (the default), skip, or fail (nothing is stored).",
                valueName: "policy"))
        var onConflict: RecordConflictPolicy?

        func run() throws {
            try Load.load(
                file, onConflict: onConflict, engine: try global.openEngine(), now: try global.currentTime(),
                global: global)
        }

        /// Standard input is spooled to a file first, so a store that runs the
        /// transaction again reads the same lines.
        static func load(
            _ source: String, onConflict: RecordConflictPolicy?, engine: GuestMode, now: Date, global: GlobalOptions
        ) throws {
            var spool: URL?
            defer { if let spool { unlink(spool.path) } }
            if source == "-" {
                spool = URL(fileURLWithPath: try StandardStream.spoolStandardInput(suffix: ".ndjson"))
            } else if !FileManager.default.fileExists(atPath: source) {
                throw GuestModeError(.fileNotFound, "no file '\(source)'")
            }
            let report = try engine.putRecords(
                from: spool ?? URL(fileURLWithPath: source), label: source == "-" ? "<stdin>" : source,
                onConflict: onConflict ?? .replace, now: now)
            try global.output.result(report) {
                global.output.line(
                    "\(counted(report.lines, "line")): \(report.added) added, \(report.replaced) replaced, \(report.skipped) skipped, \(report.unchanged) unchanged"
                )
            }
        }
    }

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "get", abstract: "Print a record's JSON.")

        /// `record get USER COLLECTION KEY` without ArgumentParser's reflection (`QuickCommand`).
        static let quick = QuickCommand(path: ["record", "get"], operands: 3...3) { line in
            var command = Get()
            command.global = line.global
            command.record = RecordLocation(line)
            return command
        }

        @OptionGroup var global: GlobalOptions

        @OptionGroup var record: RecordLocation

        func run() throws {
            let stored = try global.openEngine().record(
                user: record.user, collection: record.collection, key: record.key)
            try global.output.data(stored) {
                global.output.line(stored.data)
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list", abstract: "List a user's records in a collection.",
            discussion: """
                Records come by key, in byte order. A long collection is read a page at a time: --limit N \
                lists at most N, and --after KEY the ones after the last key of the page before.
                """)

        @OptionGroup var global: GlobalOptions

        @OptionGroup var listing: ListingOptions

        @Argument(help: "The user id.") var user: String
        @Argument(help: "The collection.") var collection: String

        @Option(
            parsing: .unconditional,
            help: ArgumentHelp("Only records whose key comes after this one, in byte order.", valueName: "key"))
        var after: String?

        @Option(parsing: .unconditional, help: ArgumentHelp("At most N records (1 to 1000000).", valueName: "n"))
        var limit: Int?

        func validate() throws {
            if let limit { try requireInRange(limit, 1...EventQuery.largestLimit, "--limit") }
        }

        func run() throws {
            let records = try global.openEngine().records(
                user: user, collection: collection, after: after, limit: limit)
            try listing.render(
                records, header: ["KEY", "UPDATED", "DATA"],
                rows: records.map { [$0.key, Timestamp.format($0.updatedAt), $0.data] }, global: global)
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "delete", abstract: "Delete a record.")

        /// `record delete USER COLLECTION KEY` without ArgumentParser's reflection (`QuickCommand`).
        static let quick = QuickCommand(path: ["record", "delete"], operands: 3...3) { line in
            var command = Delete()
            command.global = line.global
            command.record = RecordLocation(line)
            return command
        }

        @OptionGroup var global: GlobalOptions

        @OptionGroup var record: RecordLocation

        func run() throws {
            try global.openEngine().deleteRecord(
                user: record.user, collection: record.collection, key: record.key, now: try global.currentTime())
            try global.output.result(
                RecordDeletion(userID: record.user, collection: record.collection, key: record.key),
                text: "deleted \(record.collection)/\(record.key)")
        }
    }
}

/// The JSON of the record a put writes: `--data` or `--file`, exactly one.
struct RecordDocument: ParsableArguments {
    @Option(help: ArgumentHelp("The record as JSON.", valueName: "json"))
    var data: String?

    @Option(help: ArgumentHelp("Read the record's JSON from a file; - reads standard input.", valueName: "file"))
    var file: String?

    var isGiven: Bool { data != nil || file != nil }

    /// Not `validate()`, which ArgumentParser would run for every put: the deprecated `--from` takes neither.
    func requireOne() throws {
        if (data == nil) == (file == nil) { throw ValidationError("give exactly one of --data and --file") }
    }

    func bytes() throws -> Data {
        try data.map { Data($0.utf8) } ?? readInput(file ?? "-")
    }
}

extension RecordConflictPolicy: ArgumentChoice {}
