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

        // USER COLLECTION KEY (as in get and delete), optional only because --from replaces them.
        @Argument(help: "The user id.") var user: String?
        @Argument(help: "The collection.") var collection: String?
        @Argument(help: "The record key.") var key: String?

        @Option(help: ArgumentHelp("The record as JSON.", valueName: "json"))
        var data: String?

        @Option(help: ArgumentHelp("Read the record's JSON from a file; - reads standard input.", valueName: "file"))
        var file: String?

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

        func validate() throws {
            if from != nil {
                if user != nil || collection != nil || key != nil || data != nil || file != nil {
                    throw ValidationError("give either USER COLLECTION KEY with --data or --file, or --from, not both")
                }
                return
            }
            if onConflict != nil { throw ValidationError("--on-conflict goes with --from") }
            if user == nil || collection == nil || key == nil {
                throw ValidationError("missing USER COLLECTION KEY (or --from FILE)")
            }
            if (data == nil) == (file == nil) { throw ValidationError("give exactly one of --data and --file") }
        }

        func run() throws {
            let engine = try global.openEngine()
            let now = try global.currentTime()
            if let from { return try load(from, engine: engine, now: now) }
            guard let user, let collection, let key else {
                throw ValidationError("missing USER COLLECTION KEY (or --from FILE)")
            }
            let result =
                if let data {
                    try engine.putRecord(user: user, collection: collection, key: key, json: data, now: now)
                } else {
                    try engine.putRecord(
                        user: user, collection: collection, key: key, jsonBytes: readInput(file ?? "-"), now: now)
                }
            if global.json { try global.output.json(result) }
            try LimitCommand.finish(result.limit, stored: result.outcome == .allowed, key: key, global: global)
        }

        /// `--from`: standard input is spooled to a file first, so a store
        /// that runs the transaction again reads the same lines.
        private func load(_ source: String, engine: GuestMode, now: Date) throws {
            var spool: URL?
            defer { if let spool { try? FileManager.default.removeItem(at: spool) } }
            if source == "-" {
                let url = FileManager.default.temporaryDirectory.appendingPathComponent(
                    "guestmode-records-\(ProcessInfo.processInfo.processIdentifier).ndjson")
                guard FileManager.default.createFile(atPath: url.path, contents: nil),
                    let handle = FileHandle(forWritingAtPath: url.path)
                else {
                    throw GuestModeError(.cannotCreate, code: .ioError, "cannot spool standard input to \(url.path)")
                }
                spool = url
                defer { try? handle.close() }
                while true {
                    let chunk = FileHandle.standardInput.readData(ofLength: 1 << 20)
                    if chunk.isEmpty { break }
                    handle.write(chunk)
                }
            } else if !FileManager.default.fileExists(atPath: source) {
                throw GuestModeError(.notFound, code: .fileNotFound, "no file '\(source)'")
            }
            let report = try engine.putRecords(
                from: spool ?? URL(fileURLWithPath: source), label: source == "-" ? "<stdin>" : source,
                onConflict: onConflict ?? .replace, now: now)
            if global.json { return try global.output.json(report) }
            if !global.quiet {
                global.output.line(
                    "\(report.lines) line\(report.lines == 1 ? "" : "s"): \(report.added) added, \(report.replaced) replaced, \(report.skipped) skipped"
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

        @Argument(help: "The user id.") var user: String
        @Argument(help: "The collection.") var collection: String

        func run() throws {
            let records = try global.openEngine().records(user: user, collection: collection)
            if global.json { return try global.output.json(records) }
            global.output.table(
                records.map { [$0.key, Timestamp.format($0.updatedAt), $0.data] }, header: ["KEY", "UPDATED", "DATA"])
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
                struct Deleted: Encodable { var collection: String; var key: String; var deleted = true }
                return try global.output.json(Deleted(collection: record.collection, key: record.key))
            }
            if !global.quiet { global.output.line("deleted \(record.collection)/\(record.key)") }
        }
    }
}

/// Which record a command is about: `USER COLLECTION KEY`.

extension RecordConflictPolicy: ExpressibleByArgument {}
