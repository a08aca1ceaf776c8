import ArgumentParser
import Foundation
import GuestModeKit

struct InitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "init",
        abstract: "Create a store bound to a profile.",
        discussion: """
            NAME is a template (see 'guestmode profile list'); anything with a slash or a .yaml suffix is read \
            as a file. The store is created with mode 0600 and keeps a copy of the profile, so it never depends \
            on the template staying where it was. An existing store is never overwritten without --force; with \
            --force it is replaced only once the new store is complete.
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
        let path = global.storePath
        try global.storeLocation.create(profile: source, replacing: force, now: try global.currentTime())
        if global.json {
            struct Created: Encodable { var store: String; var profile: String; var version: Int; var origin: String }
            try output.json(
                Created(store: path, profile: source.profile.name, version: source.profile.version, origin: source.origin))
        } else if !global.quiet {
            output.line("created \(path) with profile \(source.profile.name) v\(source.profile.version)")
        }
    }
}
