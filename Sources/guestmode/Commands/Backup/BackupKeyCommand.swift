import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeKit

extension BackupCommand {
    struct Key: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "key",
            abstract: "Move the deployment's backup key to another machine of the same deployment.",
            discussion:
                "The key signs every archive this deployment writes and decrypts archives exported with --encrypt. It lives in <store>.key (mode 0600) or at $GUESTMODE_BACKUP_KEY_FILE.",
            subcommands: [Export.self, Import.self])

        struct Export: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "export",
                abstract:
                    "Write the backup key to a file (mode 0600) or to standard output; the only command that prints it."
            )

            @OptionGroup var global: GlobalOptions

            @Option(
                name: .long, help: ArgumentHelp("Where to write the key; - for standard output.", valueName: "file"))
            var out: String

            func run() throws {
                guard let key = try global.backupKey() else {
                    throw GuestModeError(
                        .backupKeyNotFound,
                        "no backup key at '\(global.backupKeyPath)'; 'guestmode init' or the first 'guestmode backup export' creates one"
                    )
                }
                if out == "-" {
                    FileHandle.standardOutput.write(Data(key.fileText.utf8))
                    return
                }
                try key.write(to: out, exclusive: false)
                struct Exported: Encodable { var keyFile: String; var keyId: String }
                try global.output.data(Exported(keyFile: out, keyId: key.id)) {
                    global.output.note("wrote the backup key \(key.id) to \(out) (mode 0600); keep it secret")
                }
            }
        }

        struct Import: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "import",
                abstract: "Install a backup key exported from another machine of this deployment.")

            @OptionGroup var global: GlobalOptions

            @Argument(help: ArgumentHelp("The key file to read; - for standard input.", valueName: "file"))
            var file: String

            @Flag(
                name: .long, help: "Replace a different key already in place (archives it signed stop being trusted).")
            var force = false

            func run() throws {
                let key = try BackupKey.parse(
                    try readSecretFile(file, what: "the key file"), source: file == "-" ? "standard input" : "'\(file)'"
                )
                let path = global.backupKeyPath
                // Installing is how a key named by GUESTMODE_BACKUP_KEY_FILE comes to exist: its absence is expected here.
                let existing = try BackupKey.load(path: path)
                if let existing, existing != key, !force {
                    throw GuestModeError(
                        .keyExists, "a different backup key (\(existing.id)) is already at '\(path)'")
                }
                if existing != key { try key.write(to: path, exclusive: false) }
                struct Imported: Encodable { var keyFile: String; var keyId: String; var changed: Bool }
                try global.output.result(Imported(keyFile: path, keyId: key.id, changed: existing != key)) {
                    global.output.line(
                        existing == key
                            ? "the backup key \(key.id) is already at \(path)"
                            : "installed the backup key \(key.id) at \(path)")
                }
            }
        }
    }
}
