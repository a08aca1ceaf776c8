import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

extension UserCommand {
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Bring in the users of another auth system, keeping their ids.",
            discussion: """
                firebase: the JSON file 'firebase auth:export users.json' writes. Each account keeps its localId \
                as its user id; providerUserInfo entries become identities (apple.com → apple, google.com → \
                google, …), an email with a password becomes the email identity, and an account with no \
                provider, email or phone becomes an anonymous guest.

                supabase: auth.users (--from) and auth.identities (--identities), each exported by psql in user \
                id order: \\copy (SELECT * FROM auth.users ORDER BY id) TO 'users.csv' CSV HEADER, and the same \
                for auth.identities ORDER BY user_id. is_anonymous users become guests, the others linked users \
                with their identities (provider_id is the subject).

                Password hashes and tokens are never imported. An account already in the store with the same \
                state and identities is left alone, so running the same files again changes nothing; one with \
                other data is a conflict (exit 14). All or nothing: every refused account is named FILE:LINE on \
                standard error and nothing is imported.
                """)

        @OptionGroup var global: GlobalOptions

        @Option(
            help: ArgumentHelp("The export to read; - reads standard input.", valueName: "file"))
        var from: String

        @Option(help: ArgumentHelp("The export's format: firebase or supabase.", valueName: "format"))
        var format: UserImportFormat

        @Option(
            help: ArgumentHelp(
                "With --format supabase: auth.identities as psql exports it (--from holds auth.users).",
                valueName: "file"))
        var identities: String?

        @Flag(help: "Check the whole export and report what would be imported; change nothing.")
        var dryRun = false

        func validate() throws {
            switch (format, identities) {
            case (.supabase, nil):
                throw ValidationError("--format supabase reads two files: add --identities FILE (auth.identities)")
            case (.firebase, _?):
                throw ValidationError("--identities goes with --format supabase; a Firebase export is one file")
            case (_, "-") where from == "-":
                throw ValidationError("only one of --from and --identities can read standard input")
            default: break
            }
        }

        func run() throws {
            var spools: [URL] = []
            defer { for spool in spools { unlink(spool.path) } }
            // Standard input is spooled: a store may run the transaction again and read the accounts twice.
            func input(_ path: String) throws -> (url: URL, label: String) {
                if path == "-" {
                    spools.append(URL(fileURLWithPath: try StandardStream.spoolStandardInput(suffix: ".import")))
                    return (spools[spools.count - 1], "<stdin>")
                }
                guard FileManager.default.fileExists(atPath: path) else {
                    throw GuestModeError(.fileNotFound, "no file '\(path)'")
                }
                return (URL(fileURLWithPath: path), path)
            }
            let users = try input(from)
            let identityFile = try identities.map(input)
            let progress = Progress("user import", unit: "accounts", global: global)
            let report = try global.openEngine().importUsers(
                from: users.url, label: users.label, identities: identityFile?.url,
                identitiesLabel: identityFile?.label, format: format, dryRun: dryRun, now: try global.currentTime(),
                // With --json, standard error holds only the error document, which names the first problem.
                problem: { [output = global.output] in output.problem("guestmode: \($0)") },
                progress: { progress.update(done: $0, total: nil) })
            progress.finish(done: report.accounts)
            try global.output.result(report) {
                let verb = dryRun ? "would import" : "imported"
                global.output.line(
                    "\(counted(report.accounts, "account")) read: \(verb) \(counted(report.usersCreated, "user")) (\(report.anonymous) anonymous, \(report.linked) linked, \(counted(report.identities, "identity", "identities"))), \(report.unchanged) already there unchanged"
                )
                if report.passwordHashesSkipped > 0 {
                    global.output.note(
                        "\(counted(report.passwordHashesSkipped, "password hash", "password hashes")) left out: guestmode never imports password hashes or tokens"
                    )
                }
            }
        }
    }
}
