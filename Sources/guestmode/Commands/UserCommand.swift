import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct UserCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "List, find, show, delete, purge and import users.",
        subcommands: [List.self, Find.self, Show.self, Events.self, Delete.self, Purge.self, Import.self]
    )

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List users, oldest first.")

        @OptionGroup var global: GlobalOptions
        @OptionGroup var listing: ListingOptions

        @Flag(help: "Only anonymous users (guests).")
        var anonymous = false

        @Flag(help: "Only users with a linked identity.")
        var linked = false

        @Option(
            parsing: .unconditional,
            help: ArgumentHelp(
                "Only users not seen for at least this long: a duration such as 90d, 2w, 3 months or P90D.",
                valueName: "duration"))
        var inactive: String?

        @Option(
            parsing: .unconditional,
            help: ArgumentHelp(
                "Only users not seen for at least this many days (same as --inactive Nd).", valueName: "days"))
        var inactiveDays: Int?

        func validate() throws {
            if anonymous && linked { throw ValidationError("--anonymous and --linked exclude each other") }
            if let inactiveDays { try requireInRange(inactiveDays, 0...36_500, "--inactive-days") }
            _ = try UserCommand.inactivity(inactive, days: inactiveDays)
        }

        func run() throws {
            let engine = try global.openEngine()
            let filter = UserFilter(
                state: anonymous ? .anonymous : linked ? .linked : nil,
                inactive: try UserCommand.inactivity(inactive, days: inactiveDays))
            try UserCommand.render(
                try engine.users(matching: filter, now: try global.currentTime()), listing: listing, global: global)
        }
    }

    /// A listing of users, as `user list` and `user find` print it.
    static func render(_ users: [UserSummary], listing: ListingOptions, global: GlobalOptions) throws {
        // As `docker ps -q`: a quiet table is the ids alone, one a line, for `xargs` and `head -1`.
        if global.quiet && listing.resolved(global) == .table {
            for user in users { global.output.line(user.id) }
            return
        }
        try listing.render(
            users, header: ["USER ID", "STATE", "FIRST SEEN", "LAST SEEN", "IDENTITIES", "RECORDS"],
            rows: users.map {
                [
                    $0.id, $0.state.rawValue, Timestamp.format($0.createdAt), Timestamp.format($0.lastSeenAt),
                    String($0.identities), String($0.records),
                ]
            }, global: global)
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Show a user: state, tier, identities, counters, records, meters and plans.")

        /// `user show USER` without ArgumentParser's reflection (`QuickCommand`).
        static let quick = QuickCommand(path: ["user", "show"], operands: 1...1) { line in
            var command = Show()
            command.global = line.global
            command.user = line.operands[0]
            return command
        }

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The user id.")
        var user: String

        func run() throws {
            let engine = try global.openEngine()
            let details = try engine.details(user: user, now: try global.currentTime())
            try global.output.data(details) {
                let output = global.output
                output.line(output.bold(details.user.id))
                output.line(
                    "state:       \(details.user.state.rawValue) (tier \(details.tier.rawValue), prompts \(details.user.promptState))"
                )
                output.line("first seen:  \(Timestamp.format(details.user.firstSeenAt))")
                output.line("last seen:   \(Timestamp.format(details.user.lastSeenAt))")
                if let device = details.user.device { output.line("device:      \(device)") }
                for identity in details.identities {
                    output.line(
                        "identity:    \(identity.provider) \(identity.subject)\(identity.email.map { " <\($0)>" } ?? "")"
                    )
                }
                if details.hasAnonymousCredentials { output.line("credentials: legacy anonymous username kept") }
                for (action, total) in details.counters.sorted(by: { $0.key < $1.key }) {
                    output.line("counter:     \(action) \(total)")
                }
                for (collection, count) in details.records.sorted(by: { $0.key < $1.key }) {
                    output.line("records:     \(collection) \(count)")
                }
                for meter in details.meters { output.line("meter:       \(meter.summary)") }
                for plan in details.plans { output.line("plan:        \(PlanCommand.describe(plan))") }
            }
        }
    }

    struct Delete: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete a user and everything it owns, nothing else.")

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The user id.")
        var user: String

        @Flag(help: "Confirm the deletion.")
        var yes = false

        func validate() throws {
            if !yes { throw ValidationError("deleting a user cannot be undone; add --yes to confirm") }
        }

        func run() throws {
            try global.openEngine().deleteUser(user, now: try global.currentTime())
            struct Deleted: Encodable { var userID: String; var deleted = true }
            try global.output.result(Deleted(userID: user), text: "deleted \(user)")
        }
    }

    struct Events: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "events",
            abstract: "Show a user's event log, oldest first: tracked actions and system events.",
            discussion: """
                System events include meter_warning, account_upgrade_started, account_upgrade_succeeded and \
                account_upgrade_failed (with the provider and the failure code; never a token), \
                account_unlinked and prompt outcomes.
                """)

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The user id.") var user: String

        @Option(help: ArgumentHelp("Only this action, e.g. account_upgrade_failed.", valueName: "action"))
        var action: String?

        @Option(
            parsing: .unconditional,
            help: ArgumentHelp(
                "Only events at or after this time: ISO 8601, or relative to --now (-7d, -PT1H).", valueName: "time"))
        var since: String?

        @Option(parsing: .unconditional, help: ArgumentHelp("Only the latest N events (1 to 1000000).", valueName: "n"))
        var limit: Int?

        func validate() throws {
            if let limit { try requireInRange(limit, 1...EventQuery.largestLimit, "--limit") }
        }

        func run() throws {
            let engine = try global.openEngine()
            let now = try global.currentTime()
            let since = try self.since.map { try GlobalOptions.time($0, what: "--since", clock: now) }
            let events = try engine.events(user: user, matching: EventQuery(action: action, since: since, limit: limit))
            try global.output.data(events) {
                global.output.table(
                    events.map { event in
                        [
                            String(event.id), Timestamp.format(event.at), event.action, String(event.count),
                            event.properties.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.text)" }
                                .joined(separator: " "),
                        ]
                    },
                    header: ["ID", "AT", "ACTION", "COUNT", "PROPERTIES"])
            }
        }
    }

    struct Purge: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "purge",
            abstract: "Remove anonymous users inactive for a while (--inactive 90d).",
            discussion: """
                Guests that own records are kept unless --include-with-data; guests holding a plan in force are \
                always kept. --dry-run lists exactly what would go; otherwise --yes is required. Guests go in \
                chunks of 50,000, each chunk its own transaction: a purge that is interrupted keeps what it \
                removed, and running it again removes the rest.
                """
        )

        @OptionGroup var global: GlobalOptions

        @Option(
            parsing: .unconditional,
            help: ArgumentHelp(
                "Purge guests not seen for at least this long: a duration such as 90d, 2w, 3 months or P90D.",
                valueName: "duration"))
        var inactive: String?

        @Option(
            parsing: .unconditional,
            help: ArgumentHelp(
                "Purge guests not seen for at least this many days (same as --inactive Nd).", valueName: "days"))
        var inactiveDays: Int?

        @Flag(help: "List what would be removed and change nothing.")
        var dryRun = false

        @Flag(help: "Confirm the purge.")
        var yes = false

        @Flag(help: "Also purge inactive guests that own records.")
        var includeWithData = false

        func validate() throws {
            if let inactiveDays { try requireInRange(inactiveDays, 1...36_500, "--inactive-days") }
            if try UserCommand.inactivity(inactive, days: inactiveDays) == nil {
                throw ValidationError("say which guests are stale: --inactive DURATION (e.g. --inactive 90d)")
            }
            if !dryRun && !yes {
                throw ValidationError("purging cannot be undone; add --yes, or look first with --dry-run")
            }
        }

        func run() throws {
            guard let span = try UserCommand.inactivity(inactive, days: inactiveDays) else { return }
            let progress = Progress("user purge", unit: "users", global: global)
            if global.json { return try purgeAsJSON(span, progress: progress) }
            // Streamed: one line per purged guest as the store hands it over, written in blocks.
            let verb = dryRun ? "would purge" : "purged"
            var pending = ""
            let (cutoff, tally) = try global.openEngine().purge(
                inactive: span, includingUsersWithData: includeWithData, dryRun: dryRun,
                now: try global.currentTime(), progress: { progress.update(done: $0, total: nil) }
            ) { candidate, purged in
                guard purged else { return }
                pending +=
                    "\(verb) \(candidate.id) (last seen \(Timestamp.format(candidate.lastSeenAt)), \(counted(candidate.records, "record")))\n"
                if pending.utf8.count >= 1 << 16 {
                    ConsoleStream.output.write(pending)
                    pending = ""
                }
            }
            if !pending.isEmpty { ConsoleStream.output.write(pending) }
            progress.finish(done: tally.purged + tally.kept, total: tally.purged + tally.kept)
            global.output.note(
                "\(verb) \(counted(tally.purged, "guest")) inactive since \(Timestamp.format(cutoff)); kept \(tally.kept) with data or a plan"
            )
        }

        /// The JSON document of purge(inactive:), written as the store hands the candidates over (kept
        /// ones, then purged ones) instead of held whole, so memory stays flat at any number of guests.
        private func purgeAsJSON(_ span: TimeSpan, progress: Progress) throws {
            var pending = "{\n  \"kept\" : ["
            var section = "kept"
            var isFirstInSection = true
            func flush(force: Bool = false) {
                guard force || pending.utf8.count >= 1 << 16 else { return }
                ConsoleStream.output.write(pending)
                pending = ""
            }
            func append(_ candidate: PurgeCandidate) throws {
                pending +=
                    (isFirstInSection ? "\n    " : ",\n    ") + (try JSONDocument.encode(candidate, pretty: false))
                isFirstInSection = false
                flush()
            }
            let (cutoff, tally) = try global.openEngine().purge(
                inactive: span, includingUsersWithData: includeWithData, dryRun: dryRun,
                now: try global.currentTime(), progress: { progress.update(done: $0, total: nil) }
            ) { candidate, purged in
                if purged && section == "kept" {
                    pending += isFirstInSection ? "],\n  \"purged\" : [" : "\n  ],\n  \"purged\" : ["
                    section = "purged"
                    isFirstInSection = true
                }
                // The engine's purge reports kept guests first; anything else is a bug, not data.
                if !purged && section == "purged" {
                    throw GuestModeError(
                        .internalFailure, "the store reported a kept guest after purged ones")
                }
                try append(candidate)
            }
            if section == "kept" {
                pending += isFirstInSection ? "],\n  \"purged\" : [" : "\n  ],\n  \"purged\" : ["
                isFirstInSection = true
            }
            pending += isFirstInSection ? "]" : "\n  ]"
            let tail = try JSONDocument.encode(
                PurgeSummary(
                    cutoff: cutoff, dryRun: dryRun, inactive: span.description, inactiveDays: span.wholeDays),
                pretty: true)
            // The summary's members, spliced after the two lists: `{ … }` without its braces.
            let members = tail.dropFirst().dropLast().trimmingCharacters(in: .whitespacesAndNewlines)
            pending += ",\n  " + members + "\n}\n"
            flush(force: true)
            progress.finish(done: tally.purged + tally.kept, total: tally.purged + tally.kept)
        }
    }

    /// The fields of `user purge --json` besides its two lists.
    private struct PurgeSummary: Encodable {
        var cutoff: Date
        var dryRun: Bool
        var inactive: String
        var inactiveDays: Int?
    }

    /// `--inactive DURATION` or its alias `--inactive-days N`, at most one.
    static func inactivity(_ text: String?, days: Int?) throws -> TimeSpan? {
        if text != nil && days != nil {
            throw ValidationError("give either --inactive or --inactive-days, not both")
        }
        if let days { return TimeSpan(amount: days, unit: .days) }
        guard let text else { return nil }
        switch TimeSpan.parse(text) {
        case .success(let span): return span
        case .failure(let refusal): throw ValidationError("--inactive: \(refusal)")
        }
    }
}
