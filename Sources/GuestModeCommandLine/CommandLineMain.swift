import ArgumentParser
import Foundation
import GuestModeKit

/// What guestmode and guestmode-serve do with their arguments: refuse bytes that are not UTF-8,
/// parse with `Root` (a plain line of one of `quick`'s commands without it), refuse a repeated option,
/// run, and turn every failure into guestmode(1)'s one line (or JSON document) and exit status.
///
/// ```swift
/// CommandLineMain<GuestmodeCommand>.run(Array(CommandLine.arguments.dropFirst()))
/// ```
package enum CommandLineMain<Root: ParsableCommand> {
    package static func run(_ arguments: [String], quick: [QuickCommand] = []) -> Never {
        // A reader that stops early (`guestmode user list | head`) ends the process
        // the Unix way, by SIGPIPE, quietly: the default action, set explicitly
        // because Foundation would otherwise turn the failed write into a crash.
        signal(SIGPIPE, SIG_DFL)
        let wantsJSON = arguments.contains("--json")
        do {
            try RawArguments.requireUTF8()
        } catch {
            finish(report(error, isJSON: wantsJSON))
        }
        typealias Usage = CommandLineUsage<Root>
        do {
            // A quickly parsed line names no help topic and repeats no option, so the checks are the full parse's.
            var command: any ParsableCommand
            if let parsed = QuickCommand.parse(arguments, among: quick) {
                command = parsed
            } else {
                try Usage.refuseUnknownHelpTopic(arguments)
                command = try CompletionScriptCheck.parse(arguments, as: Root.self)
                try Usage.refuseRepeatedOptions(arguments, command: command)
            }
            do {
                try command.run()
            } catch  where Usage.isUsageFailure(error) {
                // A ValidationError raised while running is a usage error like any other; help requests print help.
                finish(Usage.reportFailure(error, arguments: arguments, isJSON: wantsJSON))
            } catch {
                finish(report(error, isJSON: wantsJSON))
            }
        } catch {
            finish(Usage.reportFailure(error, arguments: arguments, isJSON: wantsJSON))
        }
        finish(0)
    }

    /// Closes the stores the command opened, then exits with `status`.
    private static func finish(_ status: Int32) -> Never {
        ExitingStores.closeAll()
        exit(status)
    }
}

/// The version both executables print with --version.
package enum GuestModeVersion {
    package static let current = "0.1.0"
}
