import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeCommandLine
import GuestModeKit

extension BackupCommand {
    struct Key: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "key",
            abstract: "Move, list, rotate and retire the deployment's backup keys.",
            discussion: """
                The current key signs every archive this deployment writes and decrypts archives exported with \
                --encrypt. It lives in <store>.key (mode 0600) or at $GUESTMODE_BACKUP_KEY_FILE, with the keys it \
                replaced. 'rotate' makes a new current key: archives signed by the one it replaces stay this \
                deployment's. 'retire' ends a rotated key: archives it signed import as another deployment's, \
                though it still decrypts what it encrypted. After a rotate or a retire, 'export' the file again \
                to every machine of the deployment. Archives name the key that signed them (signing_key_id).
                """,
            subcommands: [Export.self, Import.self, List.self, Rotate.self, Retire.self])

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
                    ConsoleStream.output.write(key.fileText)
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

        /// `backup key list|rotate|retire --json`: one key of the deployment, never its bytes.
        struct ListedKey: Encodable {
            var keyId: String
            var state: String
            /// When it was rotated or retired; nil for the current key.
            var since: Date?
        }

        static func listed(_ key: BackupKey) -> [ListedKey] {
            key.earlier.map { ListedKey(keyId: $0.key.id, state: $0.state.rawValue, since: $0.since) }
                + [ListedKey(keyId: key.id, state: "current", since: nil)]
        }

        static func existing(_ global: GlobalOptions) throws -> BackupKey {
            guard let key = try global.backupKey() else {
                throw GuestModeError(
                    .backupKeyNotFound,
                    "no backup key at '\(global.backupKeyPath)'; 'guestmode init' or the first 'guestmode backup export' creates one"
                )
            }
            return key
        }

        struct List: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "list",
                abstract: "List the deployment's backup keys by id, oldest first, the current one last.")

            @OptionGroup var global: GlobalOptions

            func run() throws {
                let keys = Key.listed(try Key.existing(global))
                try global.output.result(keys) {
                    global.output.table(
                        keys.map { [$0.keyId, $0.state, $0.since.map(Timestamp.format) ?? "-"] },
                        header: ["KEY ID", "STATE", "SINCE"])
                }
            }
        }

        struct Rotate: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "rotate",
                abstract: "Make a new current backup key; archives the old one signed stay this deployment's.",
                discussion: """
                    The key file keeps the old key as rotated. Export the file to the deployment's other \
                    machines ('guestmode backup key export', then 'import --force' there), or they keep signing \
                    with the old key and do not trust the new one's archives.
                    """)

            @OptionGroup var global: GlobalOptions

            func run() throws {
                let key = try Key.existing(global).rotated(at: try global.currentTime())
                try key.write(to: global.backupKeyPath, exclusive: false)
                try global.output.data(Key.listed(key).last) {
                    global.output.line(key.id)
                    global.output.note("archives are signed with the backup key \(key.id) from now on")
                }
            }
        }

        struct Retire: ParsableCommand {
            static let configuration = CommandConfiguration(
                commandName: "retire",
                abstract: "Retire a rotated backup key: archives it signed import as another deployment's.",
                discussion: """
                    It still decrypts the archives it encrypted. The current key cannot be retired: rotate \
                    first. Refused while the store's current token signing key is sealed with it: rotate that \
                    first ('guestmode serve signing-key rotate'). Retiring a retired key changes nothing.
                    """)

            @OptionGroup var global: GlobalOptions

            @Argument(help: "The key's id, as 'backup key list' prints it.") var id: String

            func run() throws {
                let key = try Key.existing(global)
                guard id != key.id else {
                    throw GuestModeError(
                        .backupKeyInUse,
                        "the backup key \(id) is the current one; 'guestmode backup key rotate' first, then retire it")
                }
                guard let next = key.retiring(id: id, at: try global.currentTime()) else {
                    throw GuestModeError(.backupKeyNotFound, "the deployment has no backup key with the id '\(id)'")
                }
                if let signing = try global.openEngine().signingKeys().first(where: { $0.state == .current }),
                    signing.sealedBy == id
                {
                    throw GuestModeError(
                        .backupKeyInUse,
                        "the store's current signing key \(signing.kid) is sealed with the backup key \(id); 'guestmode serve signing-key rotate' first, then retire it"
                    )
                }
                if next != key { try next.write(to: global.backupKeyPath, exclusive: false) }
                try global.output.result(Key.listed(next).first { $0.keyId == id }) {
                    global.output.line("retired \(id)")
                }
            }
        }
    }
}
