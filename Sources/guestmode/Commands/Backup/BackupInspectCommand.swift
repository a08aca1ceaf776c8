import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeCommandLine
import GuestModeKit

extension BackupCommand {
    struct Inspect: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "inspect", abstract: "Show an archive's header and manifest.")

        @OptionGroup var global: GlobalOptions
        @OptionGroup(title: "Limits on the archive being read") var limits: ArchiveLimitOptions

        @Argument(help: ArgumentHelp("The archive to describe; - reads it from standard input.", valueName: "file"))
        var file: String

        @OptionGroup var passphrase: PassphraseFileOption<DecryptingPassphrase>

        func validate() throws { try passphrase.requireOneStandardInput(archive: file) }

        func run() throws {
            let keys = try passphrase.keys(global)
            let source = try ArchiveSource(file)
            defer { source.close() }
            var inspection = try source.naming {
                try BackupArchive.inspect(path: source.path, limits: limits.archiveLimits, keys: keys)
            }
            if source.isStandardInput { inspection.archive = "-" }
            let output = global.output
            try output.data(inspection) {
                let header = inspection.header
                output.line("archive:   \(inspection.archive)")
                output.line(
                    "format:    \(header.format) version \(header.formatVersion) (written by guestmode \(header.toolVersion))"
                )
                output.line("profile:   \(header.profile.name) v\(header.profile.version)")
                output.line("created:   \(header.created)")
                output.line("signature: \(describeSignature(inspection.signature, keyID: inspection.signatureKeyId))")
                output.line("encrypted: \(inspection.encrypted ? "yes" : "no")")
                output.line(
                    "users:     \(inspection.userCount)\(header.users.isEmpty ? "" : " (\(header.users.prefix(10).joined(separator: ", "))\(inspection.userCount > 10 ? ", …" : ""))")"
                )
                if let guestOwner = header.guestOwner {
                    output.line("also:      records of the guest owner \"\(guestOwner)\"")
                }
                output.line("tables:")
                for (table, count) in inspection.manifest.tables.sorted(by: { $0.key < $1.key }) {
                    output.line("  \(padded(table, to: 24)) \(count)")
                }
                output.line("entries:")
                output.table(
                    inspection.manifest.entries.map {
                        [$0.name, "\($0.size)", $0.rows.map(String.init) ?? "-", $0.sha256]
                    },
                    header: ["name", "bytes", "rows", "sha256"])
            }
        }
    }
}
