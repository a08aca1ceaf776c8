import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeCommandLine
import GuestModeKit

struct InitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create a store bound to a profile.",
        discussion: """
            NAME is a template (see 'guestmode profile list'); anything with a slash or a .yaml suffix is read \
            as a file. The store is created with mode 0600 and keeps a copy of the profile, so it never depends \
            on the template staying where it was. An existing store is never overwritten without --force; with \
            --force it is replaced only once the new store is complete. The deployment's backup key is created \
            beside the store (<store>.key, mode 0600) or at $GUESTMODE_BACKUP_KEY_FILE, unless it already exists.
            """
    )

    @OptionGroup var global: GlobalOptions

    @Option(name: .long, help: ArgumentHelp("A template name or a profile file.", valueName: "name|file"))
    var profile: String

    @Flag(name: .long, help: "Replace an existing store.")
    var force = false

    func run() throws {
        let output = global.output
        let source = try global.catalog().load(profile)
        let path = global.storeDescription
        try global.storeLocation.create(profile: source, replacing: force, now: try global.currentTime())
        let key = try global.createBackupKeyIfMissing()
        struct Created: Encodable {
            var store: String; var profile: String; var version: Int; var origin: String; var keyFile: String;
            var keyId: String
        }
        try output.result(
            Created(
                store: path, profile: source.profile.name, version: source.profile.version, origin: source.origin,
                keyFile: global.backupKeyPath, keyId: key.id),
            text: "created \(path) with profile \(source.profile.name) v\(source.profile.version)")
    }
}
