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
        static let configuration = CommandConfiguration(abstract: "Store a record, enforcing the tier cap.")

        @OptionGroup var global: GlobalOptions

        @OptionGroup var record: RecordLocation

        @Option(help: ArgumentHelp("The record as JSON.", valueName: "json"))
        var data: String?

        @Option(help: ArgumentHelp("Read the record's JSON from a file; - reads standard input.", valueName: "file"))
        var file: String?

        func validate() throws {
            if (data == nil) == (file == nil) { throw ValidationError("give exactly one of --data and --file") }
        }

        func run() throws {
            let engine = try global.openEngine()
            let now = try global.currentTime()
            let result =
                if let data {
                    try engine.putRecord(
                        user: record.user, collection: record.collection, key: record.key, json: data, now: now)
                } else {
                    try engine.putRecord(
                        user: record.user, collection: record.collection, key: record.key,
                        jsonBytes: readInput(file ?? "-"), now: now)
                }
            if global.json { try global.output.json(result) }
            try LimitCommand.finish(result.limit, stored: result.outcome == .allowed, key: record.key, global: global)
        }
    }

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a record's JSON.")

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
        static let configuration = CommandConfiguration(abstract: "List a user's records in a collection.")

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
        static let configuration = CommandConfiguration(abstract: "Delete a record.")

        @OptionGroup var global: GlobalOptions

        @OptionGroup var record: RecordLocation

        func run() throws {
            try global.openEngine().deleteRecord(
                user: record.user, collection: record.collection, key: record.key, now: try global.currentTime())
            if global.json {
                struct Deleted: Encodable {
                    var userId: String
                    var collection: String
                    var key: String
                    var deleted = true
                }
                return try global.output.json(
                    Deleted(userId: record.user, collection: record.collection, key: record.key))
            }
            if !global.quiet { global.output.line("deleted \(record.collection)/\(record.key)") }
        }
    }
}

/// Which record a command is about: `USER COLLECTION KEY`.
