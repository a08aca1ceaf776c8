import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct MigrateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate",
        abstract: "Move a guest's data into an account, adopt ownerless data, list migration journals.",
        discussion: """
            'guestmode migrate GUEST --to ACCOUNT' takes a backup archive of both users first (kept; its path \
            is printed), then runs the profile's migration steps, each in its own transaction, recording each \
            in a journal. Interrupted, it continues from the first unfinished step with --resume and never \
            applies a step twice. Records under the same key in both users are settled as 'merge --policy \
            union' does; nothing is dropped (losers go to the store's conflict archive).
            """,
        subcommands: [Run.self, Adopt.self, Status.self],
        defaultSubcommand: Run.self
    )

    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Migrate a guest into an account (the default: 'guestmode migrate GUEST --to ACCOUNT').")

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The guest's user id.") var guest: String

        @Option(help: ArgumentHelp("The account that receives the guest's data.", valueName: "account"))
        var to: String

        @Flag(help: "Print the plan (steps, row counts, conflicts) and change nothing.")
        var dryRun = false

        @Flag(help: "Continue an interrupted migration from its first unfinished step.")
        var resume = false

        @Option(
            help: ArgumentHelp(
                "Where the safety backup goes (default: guestmode-backups/ next to a SQLite store; for a PostgreSQL store, $XDG_STATE_HOME/guestmode/backups, else ~/.local/state/guestmode/backups).",
                valueName: "dir"))
        var backupDirectory: String?

        func validate() throws {
            if dryRun && resume { throw ValidationError("--dry-run and --resume exclude each other") }
        }

        func run() throws {
            let engine = try global.openEngine()
            let now = try global.currentTime()
            let output = global.output
            if dryRun {
                let plan = try engine.planMigration(guest: guest, to: to, now: now)
                return try output.data(plan) {
                    output.line("plan: migrate \(guest) into \(to) (nothing changed)")
                    for step in plan.steps {
                        let collections =
                            step.collections.isEmpty ? "" : " [\(step.collections.joined(separator: ", "))]"
                        output.line(
                            "  step \(step.position)/\(plan.steps.count) \(step.name)\(collections): \(counted(step.rows, "row"))"
                        )
                    }
                    for conflict in plan.conflicts { output.line("  conflict \(ConflictText.describe(conflict))") }
                }
            }
            SafetyBackup.removeAbandoned(directory: backupDirectory, global: global)
            let progress = Progress("migrate", unit: "steps", global: global)
            let report = try engine.migrate(
                guest: guest, to: to, resuming: resume, now: now,
                takeBackup: { users in
                    let path = try SafetyBackup.take(
                        engine: engine, users: users, directory: backupDirectory, label: "migrate", global: global,
                        now: now)
                    output.aside("backup of \(users.joined(separator: " and ")) written to \(path)")
                    return path
                },
                progress: { step, total in
                    progress.update(done: step.position, total: total)
                    output.aside("step \(step.position)/\(total) \(step.name): \(counted(step.rows, "row")) moved")
                },
                checkpoint: { checkpoint in
                    // Lets tests stop the process exactly where a crash would.
                    if case .stepStarting(let position) = checkpoint {
                        try InjectedFaults.failIfAsked(at: "migrate-step-\(position)")
                    }
                    if case .stepDone(let position) = checkpoint {
                        FaultHooks.stopIfAsked(after: "migrate-step-\(position)")
                    }
                    if checkpoint == .backupTaken { FaultHooks.stopIfAsked(after: "migrate-backup") }
                })
            progress.finish(done: report.journal.steps.count, total: report.journal.steps.count)
            try output.result(report) {
                output.line(
                    "migrated \(guest) into \(to) (journal #\(report.journal.id)\(report.isResumed ? ", resumed" : ""))"
                )
                if let backup = report.journal.backupPath { output.line("backup: \(backup)") }
                for conflict in report.conflicts { output.line("conflict \(ConflictText.describe(conflict))") }
                for limit in report.overCap {
                    output.line(
                        "over cap: \(limit.collection) \(limit.used ?? 0)/\(limit.cap ?? 0) for tier \(limit.tier.rawValue); new records will be refused until under it"
                    )
                }
            }
        }
    }

    struct Adopt: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "adopt",
            abstract: "Give a user the records written before any user existed; idempotent per record.",
            discussion: """
                Records owned by the profile's guest owner (guest_owner, usually "") move to USER. Keys of \
                collections with unique fields start with their owner ("/habit/day") and are rewritten \
                ("USER/habit/day"); a key USER already has is reported and left untouched. Adoption is \
                idempotent per record: a later run adopts the ownerless records written since (the app fell \
                back to guest mode offline), nothing twice, and a run with nothing to adopt changes nothing.
                """
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The user who adopts the data.") var user: String

        func run() throws {
            let report = try global.openEngine().adopt(user: user, now: try global.currentTime())
            try global.output.data(report) {
                let output = global.output
                for (collection, count) in report.moved.sorted(by: { $0.key < $1.key }) {
                    output.line("adopted \(count) \(collection)")
                }
                if report.moved.isEmpty {
                    output.line(
                        report.wasAlreadyAdopted
                            ? "no new ownerless records to adopt; nothing changed" : "no ownerless records to adopt")
                }
                for collision in report.collisions {
                    output.line(
                        "collision: \(collision.collection)/\(collision.key) → \(collision.keyAfter) already exists; left unadopted"
                    )
                }
            }
        }
    }

    struct Status: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "List migration and merge journals, done and unfinished.")

        @OptionGroup var global: GlobalOptions

        @OptionGroup var listing: ListingOptions

        @Argument(help: "Only journals involving this user.") var user: String?

        func run() throws {
            let journals = try global.openEngine().journals(involving: user)
            if listing.resolved(global) != .table {
                return try listing.render(
                    journals,
                    header: ["JOURNAL", "KIND", "SOURCE", "TARGET", "STATUS", "STEPS_DONE", "STEPS", "ERROR"],
                    rows: journals.map { journal in
                        [
                            String(journal.id), journal.kind.rawValue, journal.source, journal.target,
                            journal.status.rawValue,
                            String(journal.steps.filter { $0.status == .done }.count), String(journal.steps.count),
                            journal.error ?? "",
                        ]
                    }, global: global)
            }
            for journal in journals {
                let done = journal.steps.filter { $0.status == .done }.count
                let steps = journal.steps.isEmpty ? "" : " \(done)/\(journal.steps.count) steps"
                global.output.line(
                    "#\(journal.id) \(journal.kind) \(journal.source) → \(journal.target): \(journal.status)\(steps)\(journal.error.map { " (\($0))" } ?? "")"
                )
                for step in journal.steps {
                    global.output.line("    \(step.position) \(step.name) \(step.status) \(counted(step.rows, "row"))")
                }
            }
            if journals.isEmpty { global.output.note("no migrations") }
        }
    }
}
