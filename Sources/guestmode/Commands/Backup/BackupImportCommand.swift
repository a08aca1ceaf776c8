import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeCommandLine
import GuestModeKit

extension BackupCommand {
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Import an archive into the store, all or nothing.",
            discussion:
                "Every entry is checked against the manifest before anything is committed; any failure changes nothing."
        )

        @OptionGroup var global: GlobalOptions
        @OptionGroup(title: "Limits on the archive being read") var limits: ArchiveLimitOptions

        @Argument(help: ArgumentHelp("The archive to import; - reads it from standard input.", valueName: "file"))
        var file: String

        @Flag(name: .long, help: "Report what would be added, replaced or skipped; change nothing.")
        var dryRun = false

        @Option(
            name: .long,
            help: ArgumentHelp(
                "For users already in the store: fail (default), skip them, or replace their data.", valueName: "policy"
            ))
        var onConflict: ConflictPolicy = .fail

        @Flag(
            name: .long,
            help:
                "Also take plans, meter usage, identities, credentials and upgrade locks from an archive this deployment did not sign."
        )
        var trustUnsigned = false

        @OptionGroup var passphrase: PassphraseFileOption<DecryptingPassphrase>

        func validate() throws { try passphrase.requireOneStandardInput(archive: file) }

        /// The users a report names, and how many it does not.
        static func named(_ users: [String], of count: Int) -> String {
            users.joined(separator: ", ") + (count > users.count ? ", … (\(count - users.count) more)" : "")
        }

        func run() throws {
            let keys = try passphrase.keys(global)
            let source = try ArchiveSource(file)
            defer { source.close() }
            let signature = try source.naming {
                try BackupArchive.requireIntact(path: source.path, limits: limits.archiveLimits, keys: keys)
            }
            let engine = try global.openEngine()
            let progress = Progress("backup import", unit: "rows", global: global)
            let now = try global.currentTime()
            var report = try source.naming {
                try engine.importBackup(
                    from: source.path, onConflict: onConflict, dryRun: dryRun, limits: limits.archiveLimits,
                    keys: keys, trustUnsigned: trustUnsigned, signature: signature, now: now,
                    progress: { done in
                        progress.update(done: done, total: nil)
                        // The crash suite's kill point, once rows are in the store's journal.
                        if done == 1_000 { FaultHooks.stopIfAsked(after: "backup-import-rows") }
                    })
            }
            if source.isStandardInput { report.archive = "-" }
            let imported = report.rows.values.reduce(0, +)
            progress.finish(done: imported, total: imported)
            let output = global.output
            if !report.skippedTables.isEmpty {
                let who = report.signature == .unsigned ? "is not signed" : "is signed by another deployment"
                output.note(
                    "the archive \(who): left out \(report.skippedTables.joined(separator: ", ")) (import with --trust-unsigned to take them, or share this deployment's key with 'guestmode backup key')"
                )
            }
            if !report.unlinked.isEmpty {
                output.note(
                    "imported as guests, without their identities: \(Self.named(report.unlinked, of: report.unlinkedCount))"
                )
            }
            try output.result(report) {
                let verb = dryRun ? "would import" : "imported"
                let rows = report.rows.values.reduce(0, +)
                output.line(
                    "\(verb) \(counted(rows, "row")) from \(report.archive) (\(report.profile), format \(report.formatVersion))"
                )
                for (label, users, count) in [
                    ("added", report.added, report.addedCount), ("replaced", report.replaced, report.replacedCount),
                    ("skipped", report.skipped, report.skippedCount),
                ]
                where !users.isEmpty {
                    output.line(
                        "  \(label): \(Self.named(users.map { $0.isEmpty ? "guest owner \"\"" : $0 }, of: count))")
                }
                for (table, count) in report.rows.sorted(by: { $0.key < $1.key }) {
                    output.line("  \(padded(table, to: 24)) \(count)")
                }
                if report.renumbered > 0 {
                    output.note(
                        "\(counted(report.renumbered, "row")) got new ids because theirs were taken by other users' rows"
                    )
                }
            }
        }
    }
}
