import ArgumentParser
import Foundation
import GuestModeArchive
import GuestModeCommandLine
import GuestModeKit
import GuestModeRemote

extension BackupCommand {
    struct Push: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "push",
            abstract: "Write each queued user's archive into a directory or to a server and drain the queue.",
            discussion:
                "An entry leaves the queue only once its archive is on disk or on the server. When the destination cannot be written the entry stays, with its attempt count and next retry time, and the command exits 75. A server (an http or https URL: a WebDAV folder, or guestmode serve's /v1/users/) gets each archive with PUT to a temporary name, then MOVE onto USER/backups/USER.EXT, with the bearer token from --token-file or $GUESTMODE_BACKUP_TOKEN."
        )

        @OptionGroup var global: GlobalOptions

        @Option(
            name: .long,
            help: ArgumentHelp("The destination: a directory, or an http(s) URL of a server.", valueName: "dir|url"))
        var to: String

        @OptionGroup var token: BackupTokenOption

        @Option(
            name: .long,
            help: ArgumentHelp(
                "Stop retrying an entry automatically once it has failed this many times (default 8).", valueName: "n"))
        var maxAttempts = 8

        @Flag(name: .long, help: "Try every entry now, even those whose next retry time has not come.")
        var retryNow = false

        @Flag(name: .long, help: "Encrypt each archive with a key derived from the deployment's backup key.")
        var encrypt = false

        func validate() throws {
            try requireInRange(maxAttempts, 1...1_000, "--max-attempts")
        }

        func run() throws {
            let engine = try global.openEngine()
            let key = try global.backupKeyCreatingIfMissing()
            let progress = Progress("backup push", unit: "users", global: global)
            let encryption: BackupEncryption? = encrypt ? .deploymentKey(key) : nil
            let report =
                if let remote = try token.remote(to, what: "--to") {
                    try engine.pushBackups(
                        to: remote, maxAttempts: maxAttempts, retryNow: retryNow, now: try global.currentTime(),
                        toolVersion: GuestModeVersion.current, signingKey: key, encryption: encryption,
                        progress: { progress.update(done: $0, total: $1) })
                } else {
                    try engine.pushBackups(
                        to: to, maxAttempts: maxAttempts, retryNow: retryNow, now: try global.currentTime(),
                        toolVersion: GuestModeVersion.current, signingKey: key, encryption: encryption,
                        progress: { progress.update(done: $0, total: $1) })
                }
            progress.finish()
            let output = global.output
            try output.result(report) {
                for pushed in report.pushed {
                    output.line(
                        "pushed \(pushed.user) -> \(pushed.archive)\(pushed.isRequeued ? " (changed meanwhile; still queued)" : "")"
                    )
                }
                for failed in report.failed {
                    output.line(
                        "failed \(failed.user): \(failed.error) (attempt \(failed.attempts); next at \(Timestamp.format(failed.nextAttemptAt)))"
                    )
                }
                for entry in report.waiting {
                    output.line("waiting \(entry.userID) until \(entry.nextAttemptAt.map(Timestamp.format) ?? "now")")
                }
                for entry in report.held {
                    output.line(
                        "held \(entry.userID) after \(entry.attempts) failed attempts; push with a higher --max-attempts to retry"
                    )
                }
                for user in report.dropped { output.line("dropped \(user): the user no longer exists") }
                for stale in report.removedStale { output.note("removed \(stale), left by an interrupted push") }
                if report.pushed.isEmpty && report.failed.isEmpty && report.waiting.isEmpty && report.held.isEmpty
                    && report.dropped.isEmpty
                {
                    output.note("nothing to push")
                }
            }
            if report.needsRetry {
                throw GuestModeError(
                    .pushIncomplete,
                    "\(report.failed.count + report.held.count) queued \(report.failed.count + report.held.count == 1 ? "backup was" : "backups were") not delivered to '\(to)'; they stay queued, push again later"
                )
            }
        }
    }
}
