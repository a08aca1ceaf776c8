import ArgumentParser
import Foundation
import GuestModeKit

struct UserCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "user",
        abstract: "List, show, delete and purge users.",
        subcommands: [List.self, Show.self, Delete.self, Purge.self]
    )

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List users, oldest first.")

        @OptionGroup var global: GlobalOptions

        @Flag(help: "Only anonymous users (guests).")
        var anonymous = false

        @Flag(help: "Only users with a linked identity.")
        var linked = false

        @Option(help: ArgumentHelp("Only users not seen for at least this many days.", valueName: "days"))
        var inactiveDays: Int?

        func validate() throws {
            if anonymous && linked { throw ValidationError("--anonymous and --linked exclude each other") }
            if let inactiveDays { try requireInRange(inactiveDays, 0...36_500, "--inactive-days") }
        }

        func run() throws {
            let engine = try global.openEngine()
            let filter = UserFilter(
                state: anonymous ? .anonymous : linked ? .linked : nil, inactiveDays: inactiveDays)
            let users = try engine.users(matching: filter, now: try global.currentTime())
            if global.json { return try global.output.json(users) }
            global.output.table(
                users.map {
                    [
                        $0.id, $0.state.rawValue, Timestamp.format($0.createdAt), Timestamp.format($0.lastSeenAt),
                        String($0.identities), String($0.records),
                    ]
                },
                header: ["ID", "STATE", "FIRST SEEN", "LAST SEEN", "IDENTITIES", "RECORDS"])
        }
    }

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Show a user: state, tier, identities, counters, records, meters and plans.")

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The user id.")
        var user: String

        func run() throws {
            let engine = try global.openEngine()
            let details = try engine.details(of: user, now: try global.currentTime())
            if global.json { return try global.output.json(details) }
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
                    "identity:    \(identity.provider) \(identity.subject)\(identity.email.map { " <\($0)>" } ?? "")")
            }
            if details.hasAnonymousCredentials { output.line("credentials: legacy anonymous username kept") }
            for (action, total) in details.counters.sorted(by: { $0.key < $1.key }) {
                output.line("counter:     \(action) \(total)")
            }
            for (collection, count) in details.records.sorted(by: { $0.key < $1.key }) {
                output.line("records:     \(collection) \(count)")
            }
            for meter in details.meters { output.line("meter:       \(MeterCommand.describe(meter))") }
            for plan in details.plans { output.line("plan:        \(PlanCommand.describe(plan))") }
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
            try global.openEngine().deleteUser(user)
            if global.json {
                struct Deleted: Encodable { var deleted: String }
                return try global.output.json(Deleted(deleted: user))
            }
            if !global.quiet { global.output.line("deleted \(user)") }
        }
    }

    struct Purge: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "purge",
            abstract: "Remove anonymous users inactive for a number of days.",
            discussion: """
                Guests that own records are kept unless --include-with-data; guests holding a plan in force are \
                always kept. --dry-run lists exactly what would go; otherwise --yes is required.
                """
        )

        @OptionGroup var global: GlobalOptions

        @Option(help: ArgumentHelp("Purge guests not seen for at least this many days.", valueName: "days"))
        var inactiveDays: Int

        @Flag(help: "List what would be removed and change nothing.")
        var dryRun = false

        @Flag(help: "Confirm the purge.")
        var yes = false

        @Flag(help: "Also purge inactive guests that own records.")
        var includeWithData = false

        func validate() throws {
            try requireInRange(inactiveDays, 1...36_500, "--inactive-days")
            if !dryRun && !yes {
                throw ValidationError("purging cannot be undone; add --yes, or look first with --dry-run")
            }
        }

        func run() throws {
            if global.json {
                let report = try global.openEngine().purge(
                    inactiveDays: inactiveDays, includingUsersWithData: includeWithData, dryRun: dryRun,
                    now: try global.currentTime())
                return try global.output.json(report)
            }
            // Streamed: one line per purged guest as the store hands it over, written in blocks.
            let verb = dryRun ? "would purge" : "purged"
            var pending = ""
            let (cutoff, tally) = try global.openEngine().purge(
                inactiveDays: inactiveDays, includingUsersWithData: includeWithData, dryRun: dryRun,
                now: try global.currentTime()
            ) { candidate, purged in
                guard purged else { return }
                pending +=
                    "\(verb) \(candidate.id) (last seen \(Timestamp.format(candidate.lastSeenAt)), \(candidate.records) records)\n"
                if pending.utf8.count >= 1 << 16 {
                    FileHandle.standardOutput.write(Data(pending.utf8))
                    pending = ""
                }
            }
            if !pending.isEmpty { FileHandle.standardOutput.write(Data(pending.utf8)) }
            global.output.note(
                "\(verb) \(tally.purged) guests inactive since \(Timestamp.format(cutoff)); kept \(tally.kept) with data or a plan"
            )
        }
    }
}
