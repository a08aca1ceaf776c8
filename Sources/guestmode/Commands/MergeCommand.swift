import ArgumentParser
import Foundation
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
            is removed only once everything is in the account.
            """
    )

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
        if global.json { return try global.output.json(report) }
        let output = global.output
        let verb = dryRun ? "would merge" : "merged"
        output.line(
            "\(verb) \(guest) into \(into) (\(policy.rawValue)): \(report.recordsMoved) records, \(report.activityMoved) activity rows"
        )
        for conflict in report.conflicts { output.line("conflict \(ConflictText.describe(conflict))") }
        for limit in report.overCap {
            output.line(
                "over cap: \(limit.collection) \(limit.used ?? 0)/\(limit.cap ?? 0) for tier \(limit.tier.rawValue)")
        }
    }
}
