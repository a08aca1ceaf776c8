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
            let json = try data ?? readInput(file!)
            let result = try engine.putRecord(
                user: record.user, collection: record.collection, key: record.key, json: json, now: try global.currentTime())
            if global.json { try global.output.json(result) }
            try LimitCommand.finish(result.limit, stored: result.outcome == .allowed, key: record.key, global: global)
        }

        private func readInput(_ path: String) throws -> String {
            if path == "-" { return String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) }
            guard let contents = FileManager.default.contents(atPath: path) else {
                throw GuestModeError(.notFound, code: "file_not_found", "cannot read --file '\(path)'")
            }
            return String(decoding: contents, as: UTF8.self)
        }
    }

    struct Get: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print a record's JSON.")

        @OptionGroup var global: GlobalOptions

        @OptionGroup var record: RecordLocation

        func run() throws {
            let stored = try global.openEngine().record(user: record.user, collection: record.collection, key: record.key)
            if global.json { return try global.output.json(stored) }
            global.output.line(stored.data)
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List a user's records in a collection.")

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
        static let configuration = CommandConfiguration(abstract: "Delete a record.")

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
struct RecordLocation: ParsableArguments {
    @Argument(help: "The user id.") var user: String
    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The record key.") var key: String
}

struct LimitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "limit",
        abstract: "Show where a user stands against the tier caps.",
        discussion: """
            Lists used, cap and outcome for every capped collection, or for COLLECTION alone; then the exit \
            status is the outcome: 0 allowed, 10 needs-account, 11 needs-premium, so scripts can gate on it.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The user id.") var user: String
    @Argument(help: "Only this collection; the exit status then tells its outcome.") var collection: String?

    func run() throws {
        let limits = try global.openEngine().limits(user: user, collection: collection, now: try global.currentTime())
        if global.json {
            try global.output.json(limits)
        } else {
            global.output.table(
                limits.map { [$0.collection, $0.tier.rawValue, String($0.used), $0.cap.map(String.init) ?? "unlimited", $0.outcome.rawValue] },
                header: ["COLLECTION", "TIER", "USED", "CAP", "OUTCOME"])
        }
        if collection != nil, let outcome = limits.first?.outcome.failureKind {
            throw ExitCode(outcome.exitStatus)
        }
    }

    /// Reports a put: the stored line, or why it was refused with the exit
    /// status of the outcome.
    static func finish(_ limit: CollectionLimit, stored: Bool, key: String, global: GlobalOptions) throws {
        let usage = "\(limit.used)/\(limit.cap.map(String.init) ?? "unlimited") \(limit.collection) (tier \(limit.tier.rawValue))"
        if stored {
            if !global.json && !global.quiet { global.output.line("stored \(limit.collection)/\(key): \(usage)") }
            return
        }
        guard let kind = limit.outcome.failureKind else { return }
        if !global.json {
            let advice = limit.outcome == .needsAccount ? "sign in (link an identity) to add more" : "a premium plan lifts the cap"
            FileHandle.standardError.write(Data("guestmode: \(limit.outcome.rawValue): \(usage) is at its cap; nothing was stored; \(advice)\n".utf8))
        }
        throw ExitCode(kind.exitStatus)
    }
}
