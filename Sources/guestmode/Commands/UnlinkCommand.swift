import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct UnlinkCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unlink",
        abstract: "Remove a user's identity; a user left without one is anonymous again.")

    /// `unlink USER --provider P` without ArgumentParser's reflection (`QuickCommand`).
    static let quick = QuickCommand(path: ["unlink"], operands: 1...1, options: ["--provider": .value]) { line in
        var command = UnlinkCommand()
        command.global = line.global
        command.user = line.operands[0]
        command.provider = try line.required("--provider")
        return command
    }

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The user id.")
    var user: String

    @Option(help: ArgumentHelp("The provider to unlink.", valueName: "provider"))
    var provider: String

    func run() throws {
        let updated = try global.openEngine().unlink(user: user, provider: provider, now: try global.currentTime())
        try global.output.result(
            IdentityChange(
                userID: user, action: "unlink", provider: provider, subject: nil, changed: true,
                state: updated.state, removedAnonymousCredentials: false),
            text: "unlinked \(provider) from \(user); now \(updated.state.rawValue)")
    }
}
