import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit
import GuestModePurchases

/// `guestmode plan import`, run here: guestmode parses and checks the command, then execs
/// guestmode-serve with `PlanImportOptions.internalCommand` and its own arguments, unchanged
/// (main.swift). This tree is guestmode's as far as those arguments go, so they parse as they did
/// there and a message names `guestmode plan import`. The App Store verification (jwt-kit,
/// swift-certificates) is linked here, beside the server's, and not in guestmode, where its
/// conformance records would slow every command's start (bench/results.md, "Start-up").
///
/// ```swift
/// CommandLineMain<PlanImportRoot>.run(["plan", "import", "--from", "-", "--format", "revenuecat"])
/// ```
struct PlanImportRoot: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "guestmode", subcommands: [Plan.self])

    @OptionGroup var global: GlobalOptions

    struct Plan: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "plan", subcommands: [Import.self])
    }

    struct Import: ParsableCommand {
        static let configuration = CommandConfiguration(commandName: "import")

        @OptionGroup var global: GlobalOptions

        @OptionGroup var options: PlanImportOptions

        func validate() throws { try options.check() }

        func run() throws {
            let label = options.from == "-" ? "<stdin>" : options.from
            let data = try readInput(options.from)
            let file: PurchaseImport
            switch options.format {
            case .revenuecat:
                file = PurchaseImport(revenueCatLines: data)
            case .appStore:
                file = try Self.verified(data, verifier: try appStoreVerifier())
            }
            let engine = try global.openEngine()
            let now = try global.currentTime()
            let output = global.output
            let progress = GuestModeCommandLine.Progress("plan import", unit: "events", global: global)
            let report = try file.run(
                engine: engine, acceptsSandbox: options.sandbox, skippingInvalid: options.skipInvalid, now: now,
                progress: { progress.update(done: $0, total: $1) })
            progress.finish(done: report.events.count)
            for problem in report.problems.prefix(100) {
                output.problem("\(label):\(problem.line): \(problem.message)")
            }
            if report.problems.count > 100 {
                output.problem("\(label): … and \(report.problems.count - 100) more invalid lines")
            }
            if !options.skipInvalid && !report.problems.isEmpty {
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
            guard let path = options.appStoreRootCA, let bundleID = options.appStoreBundleID else {
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
