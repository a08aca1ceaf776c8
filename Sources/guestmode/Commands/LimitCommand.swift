import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct LimitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "limit",
        abstract: "Show where a user stands against the tier caps.",
        discussion: """
            Lists used, cap and outcome for every capped collection, or for COLLECTION alone; then the exit \
            status is the outcome: 0 allowed, 10 needs-account, 11 needs-premium, so scripts can gate on it.
            """
    )

    /// `limit USER [COLLECTION] [--format F]` without ArgumentParser's reflection (`QuickCommand`).
    static let quick = QuickCommand(path: ["limit"], operands: 1...2, options: ["--format": .value]) { line in
        var command = LimitCommand()
        command.global = line.global
        command.listing = try ListingOptions(line)
        command.user = line.operands[0]
        command.collection = line.operands.dropFirst().first
        return command
    }

    @OptionGroup var global: GlobalOptions

    @OptionGroup var listing: ListingOptions

    @Argument(help: "The user id.") var user: String
    @Argument(help: "Only this collection; the exit status then tells its outcome.") var collection: String?

    func run() throws {
        let limits = try global.openEngine().limits(user: user, collection: collection, now: try global.currentTime())
        try listing.render(
            limits, header: ["COLLECTION", "TIER", "USED", "CAP", "OUTCOME"],
            rows: limits.map {
                [
                    $0.collection, $0.tier.rawValue, $0.used.map(String.init) ?? "-",
                    $0.cap.map(String.init) ?? "unlimited",
                    $0.outcome.rawValue,
                ]
            },
            dataRows: limits.map {
                [
                    $0.collection, $0.tier.rawValue, $0.used.map(String.init) ?? "", $0.cap.map(String.init) ?? "",
                    $0.outcome.rawValue,
                ]
            }, global: global)
        if collection != nil, let outcome = limits.first?.outcome.failureKind {
            throw ExitCode(outcome.exitStatus)
        }
    }
}
