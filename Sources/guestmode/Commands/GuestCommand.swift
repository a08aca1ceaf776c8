import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

struct GuestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "guest",
        abstract: "Create anonymous users.",
        subcommands: [New.self]
    )

    struct New: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "new",
            abstract: "Create an anonymous user and print its id.",
            discussion: """
                The id is stable: linking an identity later upgrades this same user in place. An app that \
                kept a legacy anonymous username and secret for the guest can store them with --username and \
                --secret-stdin; only a salted hash of the secret is kept, and it is removed once an identity \
                is linked. With --device the call is idempotent: the device id survives a reinstall (the app \
                keeps it in the keychain), so a device that already has a user gets that same user back, with \
                a note on standard error and "new": false in the JSON.
                """
        )

        /// `guest new [--device D] [--username N --secret-stdin]` without ArgumentParser's reflection
        /// (`QuickCommand`).
        static let quick = QuickCommand(
            path: ["guest", "new"], operands: 0...0,
            options: ["--device": .value, "--username": .value, "--secret-stdin": .flag]
        ) { line in
            var command = New()
            command.global = line.global
            command.device = try line.value("--device")
            command.username = try line.value("--username")
            command.secretStdin = line.flag("--secret-stdin")
            return command
        }

        @OptionGroup var global: GlobalOptions

        @Option(
            help: ArgumentHelp(
                "The device the guest was created on. Idempotent: a device that already has a guest gets that guest back, nothing created.",
                valueName: "id"))
        var device: String?

        @Option(help: ArgumentHelp("A legacy anonymous username to keep for this guest.", valueName: "name"))
        var username: String?

        @Flag(help: "Read the legacy anonymous secret from the first line of standard input.")
        var secretStdin = false

        func validate() throws {
            if (username == nil) != (secretStdin == false) {
                throw ValidationError("--username and --secret-stdin go together")
            }
        }

        func run() throws {
            let engine = try global.openEngine()
            var credentials: AnonymousCredentials?
            if let username {
                // Read as bytes: readLine would repair invalid UTF-8, and two different secrets would
                // then hash alike.
                // Byte by byte, so a terminal answers with Enter and nothing past the line is consumed.
                var line: [UInt8] = []
                var byte: UInt8 = 0
                while line.count <= 1 << 16, read(STDIN_FILENO, &byte, 1) == 1, byte != UInt8(ascii: "\n") {
                    line.append(byte)
                }
                if line.count > 1 << 16 {
                    throw GuestModeError(
                        .secretTooLong, "--secret-stdin: the secret is longer than 65536 bytes; give a shorter one")
                }
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                let secret = try TextRule.decode(line, what: "the secret on standard input (--secret-stdin)")
                guard !secret.isEmpty else {
                    throw GuestModeError(.missingSecret, "--secret-stdin: standard input held no secret")
                }
                credentials = AnonymousCredentials(username: username, secret: secret)
            }
            let creation = try engine.createOrFindGuest(
                device: device, credentials: credentials, now: try global.currentTime())
            let user = creation.user
            // With --json the document says it ("new": false); stderr stays for errors.
            if !creation.isNew {
                global.output.aside(
                    "device \(device ?? "") already has guest \(user.id); returning it (nothing created\(credentials == nil ? "" : ", the username was not stored"))"
                )
            }
            try global.output.data(GuestDocument(user: user, created: creation.isNew)) {
                global.output.line(user.id)
            }
        }
    }
}
