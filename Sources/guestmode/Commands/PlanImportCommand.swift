import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit
import GuestModePurchases

/// The formats `plan import` reads.
enum PlanImportFormat: String, ExpressibleByArgument, CaseIterable {
    case appStore = "app-store"
    case revenuecat
}

extension PlanCommand {
    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Apply a file of store notifications to plans, as the server does when they are delivered.",
            discussion: """
                For backfills and for replaying what a server missed. revenuecat: NDJSON, one RevenueCat \
                webhook body ({"api_version":"1.0","event":{...}}) a line, as the webhook route takes it. \
                app-store: one App Store Server Notification V2 a line, its signedPayload or the body Apple \
                posts ({"signedPayload":"..."}), verified as the server verifies it against \
                --app-store-root-ca and --app-store-bundle-id. Blank lines are skipped.

                Each notification is applied as POST /v1/integrations/revenuecat or /app-store applies it: \
                once per event id (a line the server already took is a duplicate, so running a file twice \
                changes nothing the second time), never over a newer event of the same purchase \
                (superseded), and to a user here (unknown_user otherwise). Lines are applied oldest first by \
                the store's time. Sandbox notifications are reported as ignored unless --sandbox.

                Every line is read before any is applied: a line that is not a notification is named \
                FILE:LINE on standard error and nothing is applied (exit 65), unless --skip-invalid. A \
                store failure stops at its line, which changed nothing; the lines before it stay applied \
                and running the file again finds them duplicates. See guestmode-plan(1).

                Example: guestmode plan import --from missed.ndjson --format revenuecat
                """)

        @OptionGroup var global: GlobalOptions

        @Option(help: ArgumentHelp("The notifications, one a line; - reads standard input.", valueName: "file"))
        var from: String

        @Option(help: ArgumentHelp("What the file holds: revenuecat or app-store.", valueName: "format"))
        var format: PlanImportFormat

        @Option(
            name: .customLong("app-store-root-ca"),
            help: ArgumentHelp(
                "With --format app-store: the root certificate (PEM or DER) the notifications' chains must lead to, Apple Root CA - G3 for the App Store.",
                valueName: "file"))
        var appStoreRootCA: String?

        @Option(
            name: .customLong("app-store-bundle-id"),
            help: ArgumentHelp(
                "With --format app-store: the app's bundle id; a notification of another app is an invalid line.",
                valueName: "id"))
        var appStoreBundleID: String?

        @Flag(help: "Apply sandbox notifications too (a test store); by default they are reported as ignored.")
        var sandbox = false

        @Flag(help: "Apply the valid lines and report the invalid ones (exit 0).")
        var skipInvalid = false

        func validate() throws {
            switch format {
            case .appStore where appStoreRootCA == nil || appStoreBundleID == nil:
                throw ValidationError(
                    "--format app-store verifies each notification: give --app-store-root-ca FILE and --app-store-bundle-id ID"
                )
            case .revenuecat where appStoreRootCA != nil || appStoreBundleID != nil:
                throw ValidationError("--app-store-root-ca and --app-store-bundle-id go with --format app-store")
            default: break
            }
        }

        func run() throws {
            let label = from == "-" ? "<stdin>" : from
            let data = try readInput(from)
            let file: PurchaseImport
            switch format {
            case .revenuecat:
                file = PurchaseImport(revenueCatLines: data)
            case .appStore:
                file = try Self.verified(data, verifier: try appStoreVerifier())
            }
            let engine = try global.openEngine()
            let now = try global.currentTime()
            let output = global.output
            let progress = Progress("plan import", unit: "events", global: global)
            let report = try file.run(
                engine: engine, acceptsSandbox: sandbox, skippingInvalid: skipInvalid, now: now,
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

        /// The verifier of --app-store-root-ca and --app-store-bundle-id; sandbox notifications are verified
        /// too, and applied only with --sandbox.
        private func appStoreVerifier() throws -> AppStoreVerifier {
            guard let path = appStoreRootCA, let bundleID = appStoreBundleID else {
                throw ValidationError("--format app-store needs --app-store-root-ca and --app-store-bundle-id")
            }
            let root = try readInput(path)
            return try AppStoreVerifier(rootCertificate: root, bundleID: bundleID, acceptsSandbox: true)
        }

        /// The file's lines verified: the verifier is asynchronous, the command is not.
        private static func verified(_ data: Data, verifier: AppStoreVerifier) throws -> PurchaseImport {
            let box = ImportBox()
            let done = DispatchSemaphore(value: 0)
            Task {
                box.file = await PurchaseImport.appStore(lines: data, verifier: verifier)
                done.signal()
            }
            done.wait()
            guard let file = box.file else {
                throw GuestModeError(.internalFailure, "the App Store notifications were not read")
            }
            return file
        }
    }
}

/// The verified file, handed from the task that reads it to the command waiting for it.
private final class ImportBox: @unchecked Sendable {
    var file: PurchaseImport?
}
