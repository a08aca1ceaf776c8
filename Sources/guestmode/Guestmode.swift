import ArgumentParser
import Foundation
import GuestModeKit

struct Guestmode: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "guestmode",
        abstract: "Guest-first apps from the command line: guests, caps, meters, prompts, migrations and backups.",
        discussion: """
            A store (one SQLite file) is bound to a profile that declares an app's collections, actions, \
            tiers, meters, plans and prompts. Start with 'guestmode tour', then \
            'guestmode init --profile NAME'. Global options may come before or after the command name. \
            Exit status: 0 done, 10 needs an account, 11 needs premium, 12 meter exhausted, 13 nothing due, \
            14 conflict, 64 usage, 65 bad data, 66 not found, 73 cannot create, 74 I/O error, 75 try again later. \
            See guestmode(1).
            """,
        version: GuestModeVersion.current,
        subcommands: [
            Initialize.self, ProfileCommand.self, DatabaseCommand.self,
            GuestCommand.self, UserCommand.self, Link.self, Unlink.self,
            Track.self, Counters.self, RecordCommand.self, LimitCommand.self, MeterCommand.self, PlanCommand.self,
            MigrateCommand.self, Merge.self, BackupCommand.self,
            PromptCommand.self, ExperimentCommand.self, ReportCommand.self, Replay.self,
            Tour.self,
        ]
    )

    @OptionGroup(title: "Global options (accepted by every command, before or after its name)")
    var global: GlobalOptions
}

/// Moves global options written before the command name to after it, where
/// every subcommand's option group reads them.
func reorderGlobalOptions(_ arguments: [String]) -> [String] {
    var leading: [String] = []
    var index = 0
    while index < arguments.count {
        let argument = arguments[index]
        let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
        guard GlobalOptions.names.contains(name) else { break }
        leading.append(argument)
        if GlobalOptions.namesTakingValues.contains(argument), index + 1 < arguments.count {
            leading.append(arguments[index + 1])
            index += 1
        }
        index += 1
    }
    guard !leading.isEmpty, index < arguments.count else { return arguments }
    var rest = Array(arguments[index...])
    let terminator = rest.firstIndex(of: "--") ?? rest.count
    rest.insert(contentsOf: leading, at: terminator)
    return rest
}

/// Writes a failure the way DESIGN §3 says (text or JSON on stderr) and
/// returns the exit status.
func report(_ error: Error, isJSON: Bool) -> Int32 {
    let (code, message, status): (String, String, Int32)
    switch error {
    case let failure as GuestModeError:
        (code, message, status) = (failure.code, failure.message, failure.kind.exitStatus)
    case let invalid as InvalidProfileError:
        (code, message, status) = ("invalid_profile", invalid.description, FailureKind.badData.exitStatus)
    case let exit as ExitCode:
        return exit.rawValue
    default:
        (code, message, status) = ("internal", "internal failure: \(error)", FailureKind.internalFailure.exitStatus)
    }
    let text: String
    if isJSON {
        struct Envelope: Encodable { var error: Body }
        struct Body: Encodable { var code: String; var message: String }
        text = (try? Output.encode(Envelope(error: Body(code: code, message: message)))) ?? "{}"
    } else if error is InvalidProfileError {
        text = message
    } else {
        text = "guestmode: \(message)"
    }
    FileHandle.standardError.write(Data((text + "\n").utf8))
    return status
}

enum GuestModeVersion {
    static let current = "0.1.0"
}
