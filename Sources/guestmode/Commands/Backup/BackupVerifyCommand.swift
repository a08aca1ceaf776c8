import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeCommandLine
import GuestModeKit

extension BackupCommand {
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "verify",
            abstract: "Check an archive against its manifest.",
            discussion:
                "Without --full: names, order, entry types, sizes and limits. With --full: also the SHA-256 of every entry and every row. Exits 0 only when everything checked out, 65 otherwise."
        )

        @OptionGroup var global: GlobalOptions
        @OptionGroup(title: "Limits on the archive being read") var limits: ArchiveLimitOptions

        @Argument(help: ArgumentHelp("The archive to check; - reads it from standard input.", valueName: "file"))
        var file: String

        @Flag(name: .long, help: "Hash every entry and parse every row.")
        var full = false

        @OptionGroup var passphrase: PassphraseFileOption<DecryptingPassphrase>

        func validate() throws { try passphrase.requireOneStandardInput(archive: file) }

        func run() throws {
            let keys = try passphrase.keys(global)
            let source = try ArchiveSource(file)
            defer { source.close() }
            var report = try source.naming {
                try BackupArchive.verify(path: source.path, full: full, limits: limits.archiveLimits, keys: keys)
            }
            if source.isStandardInput { report.archive = "-" }
            report.errors = report.errors.map(source.relabel)
            let output = global.output
            // The problems are data, printed with --quiet too; "ok" is for people.
            try output.data(report) {
                guard report.ok else {
                    for error in report.errors { output.line(error) }
                    return
                }
                let rows = report.tables.values.reduce(0, +)
                output.say(
                    "ok: \(file) (\(full ? "full" : "structural") check, \(report.profile ?? ""), \(counted(report.users ?? 0, "user")), \(counted(report.entries, "entry", "entries")), \(counted(rows, "row")), \(describeSignature(report.signature, keyID: report.signatureKeyId))\(report.encrypted ? ", encrypted" : ""))"
                )
            }
            if !report.ok {
                throw GuestModeError(
                    .verifyFailed,
                    "the archive '\(file)' failed verification (\(report.errors.count) \(report.errors.count == 1 ? "problem" : "problems"))"
                )
            }
        }
    }
}
