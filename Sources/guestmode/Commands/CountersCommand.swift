import ArgumentParser
import Foundation
import GuestModeKit

struct CountersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "counters", abstract: "Show a user's counters, one per action.")

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The user id.")
    var user: String

    func run() throws {
        let counters = try global.openEngine().counters(of: user)
        if global.json { return try global.output.json(counters) }
        global.output.table(
            counters.sorted { $0.key < $1.key }.map { [$0.key, String($0.value)] }, header: ["ACTION", "TOTAL"])
    }
}
