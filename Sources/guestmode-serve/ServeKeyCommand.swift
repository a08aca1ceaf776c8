import ArgumentParser
import GuestModeCommandLine
import GuestModeKit

extension ServeCommand {
    struct Key: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "key",
            abstract: "Create, list and revoke the server keys app backends authenticate with.",
            subcommands: [Create.self, List.self, Revoke.self])

        struct Create: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "create",
                abstract: "Create a server key and print its secret, the only time it is shown.",
                discussion: """
                    Only the SHA-256 of the secret is stored: keep the secret where the app backend reads it. \
                    A user-data key reaches every user's data; an admin key also does what only operators do.
                    """)

            @OptionGroup var global: GlobalOptions

            @Argument(help: "The key's name: letters, digits, '-', '_' or '.'.") var name: String

            @Option(help: ArgumentHelp("What the key may do: admin or user-data.", valueName: "scope"))
            var scope: ServerScope

            func run() throws {
                let issued = try global.openEngine().createServerKey(
                    named: name, scope: scope, now: try global.currentTime())
                try global.output.data(CreatedKey(key: issued.key, secret: issued.secret)) {
                    global.output.line(issued.secret)
                    global.output.note("created the \(scope.rawValue) key \(name); its secret is shown only now")
                }
            }
        }

        struct List: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list", abstract: "List the server keys, revoked ones too (never their secrets).")

            @OptionGroup var global: GlobalOptions

            @OptionGroup var listing: ListingOptions

            func run() throws {
                let keys = try global.openEngine().serverKeys()
                try listing.render(
                    keys, header: ["NAME", "SCOPE", "CREATED", "REVOKED"],
                    rows: keys.map {
                        [
                            $0.name, $0.scope.rawValue, Timestamp.format($0.createdAt),
                            $0.revokedAt.map(Timestamp.format) ?? "-",
                        ]
                    },
                    dataRows: keys.map {
                        [
                            $0.name, $0.scope.rawValue, Timestamp.format($0.createdAt),
                            $0.revokedAt.map(Timestamp.format) ?? "",
                        ]
                    }, global: global)
            }
        }

        struct Revoke: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "revoke", abstract: "Revoke a server key: it authenticates nothing from now on.")

            @OptionGroup var global: GlobalOptions

            @Argument(help: "The key's name.") var name: String

            func run() throws {
                let key = try global.openEngine().revokeServerKey(named: name, now: try global.currentTime())
                try global.output.result(key, text: "revoked \(name)")
            }
        }

        /// `serve key create --json`: the key and its secret, shown once.
        struct CreatedKey: Encodable {
            var key: ServerKey
            var secret: String

            enum CodingKeys: String, CodingKey { case name, scope, createdAt, revokedAt, secret }

            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: CodingKeys.self)
                try container.encode(key.name, forKey: .name)
                try container.encode(key.scope, forKey: .scope)
                try container.encode(key.createdAt, forKey: .createdAt)
                try container.encode(key.revokedAt, forKey: .revokedAt)
                try container.encode(secret, forKey: .secret)
            }
        }
    }
}

extension ServerScope: ArgumentChoice {}
