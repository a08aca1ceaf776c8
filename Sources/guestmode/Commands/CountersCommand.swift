import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct CountersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "counters", abstract: "Show a user's counters, one per action.")

    /// `counters USER [--format F]` without ArgumentParser's reflection (`QuickCommand`).
    static let quick = QuickCommand(path: ["counters"], operands: 1...1, options: ["--format": .value]) { line in
        var command = CountersCommand()
        command.global = line.global
        command.listing = try ListingOptions(line)
        command.user = line.operands[0]
        return command
    }

    @OptionGroup var global: GlobalOptions

    @OptionGroup var listing: ListingOptions

    @Argument(help: "The user id.")
    var user: String

    func run() throws {
        let counters = try global.openEngine().counters(user: user)
        struct Counter: Encodable { var action: String; var total: Int }
        let items = counters.sorted { $0.key < $1.key }.map { Counter(action: $0.key, total: $0.value) }
        struct Document: Encodable { var userID: String; var counters: [String: Int] }
        try listing.render(
            document: Document(userID: user, counters: counters), items: items, header: ["ACTION", "TOTAL"],
            rows: items.map { [$0.action, String($0.total)] }, global: global)
    }
}
