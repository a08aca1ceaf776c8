import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct MergeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "merge",
        abstract: "Fold a guest into an existing account in one atomic operation.",
        discussion: """
            For when 'link' failed with identity_already_exists: the person already has an account. \
            Records under the same key are settled by --policy: keep-guest, keep-account, or union (both \
            where the collection allows, else the newest; the loser is reported and kept in the store's \
            conflict archive). Caps are re-checked and reported, never enforced by dropping data. The guest \
            is removed only once everything is in the account. 'merge conflicts list' shows the archived \
            losing records and 'merge conflicts restore ID' brings one back under a new key.
            """,
        subcommands: [Guest.self, Conflicts.self],
        defaultSubcommand: Guest.self
    )

    /// `merge GUEST --into ACCOUNT --policy P`: the default subcommand, so
    /// `merge conflicts …` can sit beside it.
    struct Guest: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "guest",
            abstract: "Fold GUEST into the account --into (the default: 'merge GUEST --into …').")

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The guest's user id.") var guest: String

        @Option(help: ArgumentHelp("The account that receives the guest.", valueName: "user"))
        var into: String

        @Option(
            help: ArgumentHelp(
                "How conflicts on one record key are settled: keep-guest, keep-account or union.", valueName: "policy"))
        var policy: MergePolicy

        @Flag(help: "List every conflict and its resolution; change nothing.")
        var dryRun = false

        func run() throws {
            let report = try global.openEngine().merge(
                guest: guest, into: into, policy: policy, dryRun: dryRun, now: try global.currentTime())
            Progress("merge", unit: "records", global: global).finish(
                done: report.recordsMoved, total: report.recordsMoved)
            try global.output.data(report) {
                let output = global.output
                let verb = dryRun ? "would merge" : "merged"
                output.line(
                    "\(verb) \(guest) into \(into) (\(policy.rawValue)): \(counted(report.recordsMoved, "record")), \(counted(report.activityMoved, "activity row"))"
                )
                for conflict in report.conflicts { output.line("conflict \(ConflictText.describe(conflict))") }
                for limit in report.overCap {
                    output.line(
                        "over cap: \(limit.collection) \(limit.used ?? 0)/\(limit.cap ?? 0) for tier \(limit.tier.rawValue)"
                    )
                }
            }
        }
    }

    struct Conflicts: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "conflicts",
            abstract: "List and restore records that lost a merge (the conflict archive).",
            subcommands: [List.self, Restore.self]
        )

        struct List: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list",
                abstract: "List archived losing records, oldest first: of USER (who received the merge), or all.")

            @OptionGroup var global: GlobalOptions

            @Argument(help: "Only this user's archive (the account the guest was merged into).") var user: String?

            func run() throws {
                let conflicts = try global.openEngine().archivedConflicts(user: user)
                try global.output.data(conflicts) {
                    global.output.table(
                        conflicts.map {
                            [
                                String($0.id), $0.userID, $0.collection, $0.key, Timestamp.format($0.archivedAt),
                                $0.reason, $0.data,
                            ]
                        },
                        header: ["ID", "USER", "COLLECTION", "KEY", "ARCHIVED", "REASON", "DATA"])
                }
            }
        }

        struct Restore: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "restore",
                abstract: "Bring an archived losing record back under a new key, leaving the winner untouched.",
                discussion: """
                    The record goes back to the user whose archive holds it, in its collection, under --key \
                    (default: KEY~restored, or KEY~restored2, … if taken), and leaves the archive. A --key the \
                    user already has is refused (exit 14) and nothing changes. Caps are not enforced: the record \
                    was the user's before the merge.
                    """)

            @OptionGroup var global: GlobalOptions

            @Argument(help: "The archive id, as 'merge conflicts list' shows it.") var id: Int64

            @Option(help: ArgumentHelp("The key to restore the record under.", valueName: "key"))
            var key: String?

            func run() throws {
                let restored = try global.openEngine().restoreConflict(
                    id: id, key: key, now: try global.currentTime())
                try global.output.result(restored) {
                    global.output.line(
                        "restored \(restored.collection)/\(restored.key) of \(restored.userID) as \(restored.collection)/\(restored.restoredKey)"
                    )
                }
            }
        }
    }
}
