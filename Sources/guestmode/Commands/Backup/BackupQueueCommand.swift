import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

extension BackupCommand {
    struct Queue: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "queue", abstract: "List users waiting in the backup outbox.")

        @OptionGroup var global: GlobalOptions

        @OptionGroup var listing: ListingOptions

        func run() throws {
            let entries = try global.openEngine().backupQueue()
            let output = global.output
            let format = listing.resolved(global)
            if entries.isEmpty && format == .table {
                output.note("the backup queue is empty")
                return
            }
            try listing.render(
                entries, header: ["USER_ID", "QUEUED_AT", "ATTEMPTS", "NEXT_ATTEMPT_AT", "LAST_ERROR"],
                rows: entries.map {
                    [
                        $0.userID, Timestamp.format($0.queuedAt), "\($0.attempts)",
                        $0.nextAttemptAt.map(Timestamp.format) ?? "now", $0.lastError ?? "",
                    ]
                },
                dataRows: entries.map {
                    [
                        $0.userID, Timestamp.format($0.queuedAt), "\($0.attempts)",
                        $0.nextAttemptAt.map(Timestamp.format) ?? "", $0.lastError ?? "",
                    ]
                }, global: global)
        }
    }
}
