import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeCommandLine
import GuestModeKit
import GuestModeRemote

extension BackupCommand {
    struct Pull: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pull",
            abstract: "Fetch a user's latest pushed archive from a server and import it, all or nothing.",
            discussion:
                "The archive is read from URL/USER/backups/USER.EXT, where 'backup push --to URL' puts it. It must be signed with this deployment's backup key; then it is checked and imported as 'backup import' does, and any failure changes nothing."
        )

        @OptionGroup var global: GlobalOptions
        @OptionGroup(title: "Limits on the archive being read") var limits: ArchiveLimitOptions

        @Option(
            name: .long, help: ArgumentHelp("The server the archive was pushed to, an http(s) URL.", valueName: "url"))
        var from: String

        @Argument(help: "The user whose archive to restore.") var user: String

        @Option(
            name: .long,
            help: ArgumentHelp(
                "When the user is already in the store: fail (default), skip them, or replace their data.",
                valueName: "policy"))
        var onConflict: ConflictPolicy = .fail

        @OptionGroup var token: BackupTokenOption

        func run() throws {
            guard let remote = try token.remote(from, what: "--from") else {
                throw ValidationError("--from must be an http:// or https:// URL, not '\(from)'")
            }
            let keys = BackupKeys(deployment: try global.backupKey())
            let engine = try global.openEngine()
            let progress = Progress("backup pull", unit: "rows", global: global)
            let report = try engine.pullBackup(
                of: user, from: remote, onConflict: onConflict, limits: limits.archiveLimits, keys: keys,
                now: try global.currentTime(), progress: { progress.update(done: $0, total: nil) })
            let imported = report.rows.values.reduce(0, +)
            progress.finish(done: imported, total: imported)
            try global.output.result(report) {
                global.output.line("imported \(counted(imported, "row")) from \(report.archive)")
                for (label, users) in [
                    ("added", report.added), ("replaced", report.replaced), ("skipped", report.skipped),
                ]
                where !users.isEmpty {
                    global.output.line("  \(label): \(users.joined(separator: ", "))")
                }
            }
        }
    }
}

/// `--token-file` for a server destination, else $GUESTMODE_BACKUP_TOKEN:
/// sent as a bearer token, never printed.
struct BackupTokenOption: ParsableArguments {
    @Option(
        name: .long,
        help: ArgumentHelp(
            "For a server: the bearer token, the first line of this file (default: $GUESTMODE_BACKUP_TOKEN).",
            valueName: "file"))
    var tokenFile: String?

    /// A server client when `destination` is an http(s) URL; nil for anything else (a directory).
    func remote(_ destination: String, what: String) throws -> RemoteBackups? {
        let lowered = destination.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
            if tokenFile != nil { throw ValidationError("--token-file is for a server URL, not a directory") }
            return nil
        }
        return RemoteBackups(
            base: try RemoteURL(destination.hasSuffix("/") ? destination : destination + "/", what: what),
            token: try token(), userAgent: "guestmode/\(GuestModeVersion.current)")
    }

    private func token() throws -> String? {
        if let tokenFile {
            var bytes = Array(try readSecretFile(tokenFile, what: "the token file"))
            if let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) { bytes = Array(bytes[..<newline]) }
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            return try checked(String(decoding: bytes, as: UTF8.self), from: "the token file '\(tokenFile)'")
        }
        let environment = ProcessInfo.processInfo.environment["GUESTMODE_BACKUP_TOKEN"] ?? ""
        return environment.isEmpty ? nil : try checked(environment, from: "GUESTMODE_BACKUP_TOKEN")
    }

    /// A token goes into a header line: visible ASCII only, so it cannot end the line or add a header.
    private func checked(_ token: String, from source: String) throws -> String {
        guard !token.isEmpty, token.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) else {
            throw GuestModeError(
                .usage, "the token in \(source) must be one line of visible ASCII characters")
        }
        return token
    }
}
