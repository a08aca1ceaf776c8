import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct LinkCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "link",
        abstract: "Upgrade a user in place by binding a sign-in identity to it.",
        discussion: """
            The user keeps its id, so its records, counters, usage, plans and sessions stay. An identity \
            already bound to another user exits 14 (identity_already_exists) and leaves the user untouched; \
            merge the two with 'guestmode merge'. A second upgrade of the same user while one runs exits 14 \
            (upgrade_in_progress). Stored anonymous credentials are removed only after the link succeeded.
            """
    )

    /// `link USER --provider P --subject S [--email E]` without ArgumentParser's reflection (`QuickCommand`).
    static let quick = QuickCommand(
        path: ["link"], operands: 1...1, options: ["--provider": .value, "--subject": .value, "--email": .value]
    ) { line in
        var command = LinkCommand()
        command.global = line.global
        command.user = line.operands[0]
        command.provider = try line.required("--provider")
        command.subject = try line.required("--subject")
        command.email = try line.value("--email")
        return command
    }

    @OptionGroup var global: GlobalOptions

    @Argument(help: "The user id.")
    var user: String

    @Option(
        help: ArgumentHelp(
            "The identity provider (apple, google, email, as the profile allows).", valueName: "provider"))
    var provider: String

    @Option(help: ArgumentHelp("The provider's stable subject id for the person.", valueName: "subject"))
    var subject: String

    @Option(help: ArgumentHelp("The email address the provider reported.", valueName: "address"))
    var email: String?

    func run() throws {
        let engine = try global.openEngine()
        let result = try engine.link(
            user: user, provider: provider, subject: subject, email: email, now: try global.currentTime()
        ) { checkpoint in
            // Lets tests leave an upgrade "in progress" the way a killed process would.
            if checkpoint == .afterLock { FaultHooks.stopIfAsked(after: "link-lock") }
        }
        try global.output.result(
            IdentityChange(
                userID: user, action: "link", provider: provider, subject: subject, changed: result.isNewlyLinked,
                state: .linked, removedAnonymousCredentials: result.didRemoveAnonymousCredentials)
        ) {
            if result.isNewlyLinked {
                global.output.line(
                    "linked \(provider) to \(user)\(result.didRemoveAnonymousCredentials ? "; anonymous credentials removed" : "")"
                )
            } else {
                global.output.line("\(provider) was already linked to \(user)")
            }
        }
    }
}
