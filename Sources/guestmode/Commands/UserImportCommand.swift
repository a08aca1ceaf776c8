import ArgumentParser
import Foundation
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
                provider, email or phone becomes an anonymous guest. Password hashes and tokens are never \
                imported. An account already in the store with the same state and identities is left alone, so \
                running the same file again changes nothing; one with other data is a conflict (exit 14). All or \
                nothing: every refused account is named FILE:LINE on standard error and nothing is imported.
                """)

        @OptionGroup var global: GlobalOptions

        @Option(
            help: ArgumentHelp("The export to read; - reads standard input.", valueName: "file"))
        var from: String

        @Option(help: ArgumentHelp("The export's format: firebase.", valueName: "format"))
        var format: UserImportFormat

        @Flag(help: "Check the whole export and report what would be imported; change nothing.")
        var dryRun = false

        func run() throws {
            var spool: URL?
            defer { if let spool { unlink(spool.path) } }
            if from == "-" {
                // Spooled: a store may run the transaction again and read the accounts twice.
                spool = URL(fileURLWithPath: try StandardStream.spoolStandardInput(suffix: ".json"))
            } else if !FileManager.default.fileExists(atPath: from) {
                throw GuestModeError(.notFound, code: .fileNotFound, "no file '\(from)'")
            }
            let progress = Progress("user import", unit: "accounts", global: global)
            let report = try global.openEngine().importUsers(
                from: spool ?? URL(fileURLWithPath: from), label: from == "-" ? "<stdin>" : from, format: format,
                dryRun: dryRun, now: try global.currentTime(),
                // With --json, standard error holds only the error document, which names the first problem.
                problem: { if !global.json { FileHandle.standardError.write(Data("guestmode: \($0)\n".utf8)) } },
                progress: { progress.update(done: $0, total: nil) })
            progress.finish(done: report.accounts)
            if global.json { return try global.output.json(report) }
            guard !global.quiet else { return }
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
