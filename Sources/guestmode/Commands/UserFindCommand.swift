import ArgumentParser
import GuestModeCommandLine
import GuestModeKit

extension UserCommand {
    struct Find: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "find",
            abstract: "Find the users a person names: by identity, email or device.",
            discussion: """
                Exactly one of --identity, --email or --device. An identity is held by one user at most; an \
                email address may be reported by identities of several users, and a device shared by several \
                guests, so the answer is a listing, as user list prints it, oldest first. --email matches the \
                email an identity was linked with, or the subject of an email identity that carries none, ASCII \
                letters in either case. No user found exits 66. Every lookup is answered from an index.
                """)

        @OptionGroup var global: GlobalOptions
        @OptionGroup var listing: ListingOptions

        @Option(
            help: ArgumentHelp(
                "The identity a provider vouches for, such as apple:001234.abcd.", valueName: "provider:subject"))
        var identity: String?

        @Option(help: ArgumentHelp("An email address an identity carries.", valueName: "address"))
        var email: String?

        @Option(help: ArgumentHelp("The device id guests were created with.", valueName: "id"))
        var device: String?

        func validate() throws {
            if [identity, email, device].compactMap({ $0 }).count != 1 {
                throw ValidationError("give exactly one of --identity, --email or --device")
            }
        }

        func run() throws {
            let lookup: UserLookup =
                if let identity { try UserLookup.identity(parsing: identity) } else if let email {
                    .email(email)
                } else { .device(device ?? "") }
            let users = try global.openEngine().findUsers(lookup)
            if users.isEmpty { throw lookup.nobody }
            try UserCommand.render(users, listing: listing, global: global)
        }
    }
}
