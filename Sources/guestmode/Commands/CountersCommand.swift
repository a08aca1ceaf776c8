import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct CountersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "counters", abstract: "Show a user's counters, one per action.")

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
