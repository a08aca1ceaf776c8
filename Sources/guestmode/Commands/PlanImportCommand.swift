import ArgumentParser
import Foundation
import GuestModeKit
import GuestModePurchases
import GuestModeServer

/// The formats `plan import` reads.
enum PlanImportFormat: String, ExpressibleByArgument, CaseIterable {
    case revenuecat
}

extension PlanCommand {
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Apply a file of store notifications to plans, as the server does when they are delivered.",
            discussion: """
                For backfills and for replaying what a server missed. revenuecat: NDJSON, one RevenueCat \
                webhook body ({"api_version":"1.0","event":{...}}) a line, as the webhook route takes it; \
                blank lines are skipped.

                Each notification is applied as POST /v1/integrations/revenuecat applies it: once per event \
                id (a line the server already took is a duplicate, so running a file twice changes nothing \
                the second time), never over a newer event of the same purchase (superseded), and to the \
                first of app_user_id, original_app_user_id and aliases that is a user here (unknown_user \
                otherwise). Lines are applied oldest first by event_timestamp_ms. SANDBOX events are \
                reported as ignored unless --sandbox.

                Every line is read before any is applied: a line that is not a notification is named \
                FILE:LINE on standard error and nothing is applied (exit 65), unless --skip-invalid. A \
                store failure stops at its line, which changed nothing; the lines before it stay applied \
                and running the file again finds them duplicates. See guestmode-plan(1).

                Example: guestmode plan import --from missed.ndjson --format revenuecat
                """)

        @OptionGroup var global: GlobalOptions

        @Option(help: ArgumentHelp("The notifications, one a line; - reads standard input.", valueName: "file"))
        var from: String

        @Option(help: ArgumentHelp("What the file holds: revenuecat.", valueName: "format"))
        var format: PlanImportFormat

        @Flag(help: "Apply sandbox notifications too (a test store); by default they are reported as ignored.")
        var sandbox = false

        @Flag(help: "Apply the valid lines and report the invalid ones (exit 0).")
        var skipInvalid = false

        func run() throws {
            let label = from == "-" ? "<stdin>" : from
            let data = try readInput(from)
            let file = PurchaseImport(revenueCatLines: data)
            let engine = try global.openEngine()
            let now = try global.currentTime()
            let output = global.output
            let progress = Progress("plan import", unit: "events", global: global)
            let report = try file.run(
                application: RevenueCatApplication(engine: engine, acceptsSandbox: sandbox),
                skippingInvalid: skipInvalid, now: now,
                progress: { progress.update(done: $0, total: $1) })
            progress.finish(done: report.events.count)
            for problem in report.problems.prefix(100) {
                output.problem("\(label):\(problem.line): \(problem.message)")
            }
            if report.problems.count > 100 {
                output.problem("\(label): … and \(report.problems.count - 100) more invalid lines")
            }
            if !skipInvalid && !report.problems.isEmpty {
                throw GuestModeError(
                    .invalidImportFile,
                    "\(label): \(counted(report.invalid, "invalid line")) (the first at line \(report.problems[0].line): \(report.problems[0].message)); nothing was applied (fix them, or use --skip-invalid)"
                )
            }
            try output.result(report) {
                for line in report.events {
                    var text = "\(label):\(line.line): \(line.type) \(line.eventID) \(line.outcome.rawValue)"
                    if let user = line.user { text += " user \(user)" }
                    if !line.plans.isEmpty { text += " (\(line.plans.joined(separator: ", ")))" }
                    if let note = line.note { text += ": \(note)" }
                    output.line(text)
                }
                output.line(
                    "\(counted(report.lines, "line")): \(report.applied) applied, \(report.duplicate) duplicate, \(report.superseded) superseded, \(report.unknownUser) unknown user, \(report.ignored) ignored, \(report.invalid) invalid"
                )
            }
        }
    }
}
