import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeCommandLine
import GuestModeKit

extension BackupCommand {
    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Write users' data to an archive (atomically, mode 0600).",
            discussion:
                "The format follows --format, else the --out extension (.gmbackup or .tar.zst, .tar.gz, .zip), else tar.zst."
        )

        @OptionGroup var global: GlobalOptions

        @Argument(help: "The users to export.")
        var users: [String] = []

        @Flag(name: .long, help: "Export every user, and records not yet adopted by one.")
        var all = false

        @Option(
            name: .long, help: ArgumentHelp("The archive to write; - writes it to standard output.", valueName: "file"))
        var out: String

        @Option(name: .long, help: ArgumentHelp("tar.zst (default), tar.gz or zip.", valueName: "format"))
        var format: ArchiveFormat?

        @Option(
            name: .long,
            help: ArgumentHelp("Compression level: 1-19 for tar.zst, 1-9 for tar.gz, 0-9 for zip.", valueName: "n"))
        var level: Int?

        @Flag(
            name: .long,
            help: "Encrypt the archive (ChaCha20-Poly1305) with a key derived from the deployment's backup key.")
        var encrypt = false

        @OptionGroup var passphrase: PassphraseFileOption<EncryptingPassphrase>

        func validate() throws {
            if passphrase.passphraseFile != nil && !encrypt {
                throw ValidationError("--passphrase-file needs --encrypt")
            }
            if out == "-" && isatty(STDOUT_FILENO) == 1 {
                throw ValidationError("--out - writes the archive to standard output, which is a terminal; redirect it")
            }
            if all && !users.isEmpty { throw ValidationError("give either USER… or --all, not both") }
            if !all && users.isEmpty { throw ValidationError("name the users to export, or pass --all") }
            if let level {
                switch format ?? ArchiveFormat.named(by: out) ?? .tarZstd {
                case .tarZstd: try requireInRange(level, 1...19, "--level for tar.zst")
                case .tarGzip: try requireInRange(level, 1...9, "--level for tar.gz")
                case .zip: try requireInRange(level, 0...9, "--level for zip")
                }
            }
            if let format, let named = ArchiveFormat.named(by: out), named != format {
                throw ValidationError(
                    "--out '\(out)' is named like a \(named.rawValue) archive but --format is \(format.rawValue); make them agree"
                )
            }
        }

        func run() throws {
            let engine = try global.openEngine()
            let chosen = format ?? ArchiveFormat.named(by: out) ?? .tarZstd
            let output = global.output
            let key = try global.backupKeyCreatingIfMissing()
            var encryption: BackupEncryption?
            if let passphrase = try passphrase.read() {
                encryption = .passphrase(passphrase)
            } else if encrypt {
                encryption = .deploymentKey(key)
            }
            // `--out -`: written to a private temporary file first (atomic, verified layout), then sent to stdout.
            let destination = out == "-" ? try StandardStream.temporaryFile(suffix: ".partial") : out
            defer { if out == "-" { unlink(destination) } }
            if out == "-" { unlink(destination) }
            let progress = Progress("backup export", unit: "rows", global: global)
            var summary = try engine.exportBackup(
                all ? .all : .users(users), to: destination, format: chosen, level: level,
                now: try global.currentTime(),
                toolVersion: GuestModeVersion.current, signingKey: key, encryption: encryption,
                progress: progress.isShown ? { done, total in progress.update(done: done, total: total) } : nil)
            progress.finish()
            if out == "-" {
                // Nothing but the archive on stdout: the summary goes to stderr.
                try StandardStream.send(destination)
                summary.archive = "-"
                if global.json {
                    ConsoleStream.error.write(try Output.encode(summary) + "\n")
                    return
                }
                let rows = summary.tables.values.reduce(0, +)
                output.note(
                    "wrote the archive to standard output (\(summary.format.rawValue), \(counted(summary.users, "user")), \(counted(rows, "row")), \(counted(Int(summary.bytes), "byte")))"
                )
                return
            }
            try output.result(summary) {
                let rows = summary.tables.values.reduce(0, +)
                let sealed =
                    summary.encryption.map {
                        ", encrypted with the \($0 == "passphrase" ? "passphrase" : "deployment key")"
                    } ?? ""
                output.line(
                    "wrote \(summary.archive) (\(summary.format.rawValue), \(counted(summary.users, "user")), \(counted(rows, "row")), \(counted(Int(summary.bytes), "byte")), signed\(sealed))"
                )
            }
        }
    }
}
