import ArgumentParser
import GuestModeArchive
import GuestModeCommandLine
import GuestModeKit

extension ServeCommand {
    struct SigningKeys: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "signing-key",
            abstract: "List, rotate and retire the keys access tokens are signed with.",
            discussion: """
                'guestmode serve' signs access tokens ES256 with the store's current signing key and names it \
                in the token's kid header; GET /.well-known/jwks.json publishes the public half of every key \
                not retired, so an app's backend, an API gateway or a database verifies tokens without any \
                secret. Every server on a store signs with the same current key. The private keys are kept in \
                the store sealed with a key the deployment's backup key derives: servers and this command need \
                the deployment's key file. A store has no signing key until 'guestmode serve' first starts on \
                it or 'rotate' makes one.

                A key goes current -> rotated -> retired. 'rotate' makes a new current key: new tokens are \
                signed with it, and tokens signed before keep verifying until they expire (an hour). 'retire' \
                ends a rotated key: tokens it signed are refused (401) and it leaves the key set. Running \
                servers read the keys again every 5 seconds. Retire a key once the tokens it signed have \
                expired, unless it leaked: then rotate and retire it at once, and each session gets a new \
                access token with its refresh token.
                """,
            subcommands: [List.self, Rotate.self, Retire.self])

        struct List: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list",
                abstract: "List the signing keys, oldest first, retired ones too (never their private halves).")

            @OptionGroup var global: GlobalOptions

            @OptionGroup var listing: ListingOptions

            func run() throws {
                let keys = try global.openEngine().signingKeys()
                if keys.isEmpty {
                    global.output.aside(
                        "no signing key yet: 'guestmode serve' makes one when it starts, or 'guestmode serve signing-key rotate'"
                    )
                }
                try listing.render(
                    keys, header: ["KID", "ALGORITHM", "STATE", "CREATED", "RETIRED"],
                    rows: keys.map {
                        [
                            $0.kid, $0.algorithm, $0.state.rawValue, Timestamp.format($0.createdAt),
                            $0.retiredAt.map(Timestamp.format) ?? "-",
                        ]
                    },
                    dataRows: keys.map {
                        [
                            $0.kid, $0.algorithm, $0.state.rawValue, Timestamp.format($0.createdAt),
                            $0.retiredAt.map(Timestamp.format) ?? "",
                        ]
                    }, global: global)
            }
        }

        struct Rotate: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "rotate",
                abstract: "Make a new current signing key; tokens signed before keep verifying until they expire.",
                discussion: """
                    Prints the new key's id. Running servers sign with it within 5 seconds; the key it \
                    replaces is 'rotated' and stays in /.well-known/jwks.json until it is retired. On a store \
                    with no signing key, this makes the first. Refused (signing_key_sealed_elsewhere) when the \
                    store's current key was sealed with another deployment key than this machine's: import the \
                    deployment's key first ('guestmode backup key import FILE').
                    """)

            @OptionGroup var global: GlobalOptions

            func run() throws {
                let engine = try global.openEngine()
                let seal = try global.backupKeyCreatingIfMissing().signingKeySeal
                let key = try engine.rotateSigningKey(seal: seal, now: try global.currentTime())
                try global.output.data(key) {
                    global.output.line(key.kid)
                    global.output.note("new access tokens are signed with \(key.kid)")
                }
            }
        }

        struct Retire: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "retire",
                abstract: "Retire a rotated signing key: tokens it signed are refused from now on.",
                discussion: """
                    The key leaves /.well-known/jwks.json, and running servers refuse its tokens (401) within \
                    5 seconds; verifiers that cached the key set may accept them until their copy expires (5 \
                    minutes). The current key cannot be retired: rotate first. Retiring a retired key changes \
                    nothing.
                    """)

            @OptionGroup var global: GlobalOptions

            @Argument(help: "The key's id, as 'signing-key list' prints it and tokens name it in kid.") var kid: String

            func run() throws {
                let key = try global.openEngine().retireSigningKey(kid: kid, now: try global.currentTime())
                try global.output.result(key, text: "retired \(kid)")
            }
        }
    }
}
