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

let arguments = reorderGlobalOptions(Array(CommandLine.arguments.dropFirst()))
let wantsJSON = arguments.contains("--json")

do {
    var command = try Guestmode.parseAsRoot(arguments)
    do {
        try command.run()
    } catch  where String(reflecting: type(of: error)).hasPrefix("ArgumentParser.") {
        // Help and usage requests raised while running are ArgumentParser's to print.
        Guestmode.exit(withError: error)
    } catch {
        exit(report(error, isJSON: wantsJSON))
    }
} catch {
    let status = Guestmode.exitCode(for: error)
    if wantsJSON && status != .success {
        _ = report(
            GuestModeError(.usage, code: .usage, Guestmode.message(for: error)), isJSON: true)
        exit(FailureKind.usage.exitStatus)
    }
    Guestmode.exit(withError: error)
}
