import ArgumentParser
import Foundation
import GuestModeKit

struct GuestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "guest",
        abstract: "Create anonymous users.",
        subcommands: [New.self]
    )

    struct New: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "new",
            abstract: "Create an anonymous user and print its id.",
            discussion: """
                The id is stable: linking an identity later upgrades this same user in place. An app that \
                kept a legacy anonymous username and secret for the guest can store them with --username and \
                --secret-stdin; only a salted hash of the secret is kept, and it is removed once an identity \
                is linked.
                """
        )

        @OptionGroup var global: GlobalOptions

        @Option(help: ArgumentHelp("The device the guest was created on.", valueName: "id"))
        var device: String?

        @Option(help: ArgumentHelp("A legacy anonymous username to keep for this guest.", valueName: "name"))
        var username: String?

        @Flag(help: "Read the legacy anonymous secret from the first line of standard input.")
        var secretStdin = false

        func validate() throws {
            if (username == nil) != (secretStdin == false) {
                throw ValidationError("--username and --secret-stdin go together")
            }
        }

        func run() throws {
            let engine = try global.openEngine()
            var credentials: AnonymousCredentials?
            if let username {
                guard let secret = readLine(strippingNewline: true), !secret.isEmpty else {
                    throw GuestModeError(.usage, code: .missingSecret, "--secret-stdin: standard input held no secret")
                }
                credentials = AnonymousCredentials(username: username, secret: secret)
            }
            let user = try engine.createGuest(device: device, credentials: credentials, now: try global.currentTime())
            if global.json { return try global.output.json(user) }
            global.output.line(user.id)
        }
    }
}
