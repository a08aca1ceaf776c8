import ArgumentParser
import Foundation
import GuestModeKit

// A reader that stops early (`guestmode user list | head`) ends the process
// the Unix way, by SIGPIPE, quietly: the default action, set explicitly
// because Foundation would otherwise turn the failed write into a crash.
signal(SIGPIPE, SIG_DFL)

do {
    try RawArguments.requireUTF8()
} catch {
    exit(report(error, isJSON: CommandLine.arguments.contains("--json")))
}

let arguments = Array(CommandLine.arguments.dropFirst())
let wantsJSON = arguments.contains("--json")

do {
    try UsageErrors.refuseUnknownHelpTopic(arguments)
    var command = try GuestmodeCommand.parseAsRoot(arguments)
    try UsageErrors.refuseRepeatedOptions(arguments, command: command)
    do {
        try command.run()
    } catch  where UsageErrors.isUsageFailure(error) {
        // A ValidationError raised while running is a usage error like any other; help requests print help.
        exit(UsageErrors.reportFailure(error, arguments: arguments, isJSON: wantsJSON))
    } catch {
        exit(report(error, isJSON: wantsJSON))
    }
} catch {
    exit(UsageErrors.reportFailure(error, arguments: arguments, isJSON: wantsJSON))
}
