import ArgumentParser
import GuestModeCommandLine
import GuestModeKit

extension ServeCommand {
    struct Session: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "session",
            abstract: "List a user's sessions and sign them out.",
            discussion: """
                A session is what one sign-in handed out: a chain of refresh tokens, each spent for the next. \
                Tokens are never shown: only their SHA-256 is kept.
                """,
            subcommands: [List.self, Revoke.self])

        struct List: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list",
                abstract: "List a user's sessions, revoked ones too, oldest first.",
                discussion: """
                    Each session: when it was signed in, when a refresh token of it was last spent and how many \
                    were, and when it was revoked. A refresh token does not expire: a session lasts until it is \
                    revoked.
                    """)

            @OptionGroup var global: GlobalOptions

            @OptionGroup var listing: ListingOptions

            @Argument(help: "The user id.") var user: String

            func run() throws {
                let sessions = try global.openEngine().sessions(of: user)
                try listing.render(
                    sessions, header: ["SESSION", "SIGNED IN", "LAST USED", "REFRESHES", "REVOKED"],
                    rows: sessions.map {
                        [
                            $0.id, Timestamp.format($0.createdAt), $0.lastUsedAt.map(Timestamp.format) ?? "-",
                            String($0.refreshes), $0.revokedAt.map(Timestamp.format) ?? "-",
                        ]
                    },
                    dataRows: sessions.map {
                        [
                            $0.id, Timestamp.format($0.createdAt), $0.lastUsedAt.map(Timestamp.format) ?? "",
                            String($0.refreshes), $0.revokedAt.map(Timestamp.format) ?? "",
                        ]
                    }, global: global)
            }
        }

        struct Revoke: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "revoke",
                abstract: "Sign a user out: revoke every session of the user, or one.",
                discussion: """
                    None of a revoked session's refresh tokens works again; access tokens already issued stay \
                    valid until they expire (an hour at most). The same as DELETE /v1/users/{user}/sessions.
                    """)

            @OptionGroup var global: GlobalOptions

            @Argument(help: "The user id.") var user: String

            @Option(help: ArgumentHelp("Only this session, as session list names it.", valueName: "id"))
            var family: String?

            func run() throws {
                let engine = try global.openEngine()
                let now = try global.currentTime()
                let revoked =
                    if let family {
                        try engine.revokeSession(family: family, user: user, now: now)
                    } else { try engine.revokeSessions(user: user, now: now) }
                try global.output.result(
                    SessionsRevoked(userId: user, revoked: revoked),
                    text: "revoked \(revoked) session\(revoked == 1 ? "" : "s") of \(user)")
            }
        }

        /// `serve session revoke --json`: the document of DELETE /v1/users/{user}/sessions.
        struct SessionsRevoked: Encodable {
            var userId: String
            var revoked: Int
        }
    }
}
