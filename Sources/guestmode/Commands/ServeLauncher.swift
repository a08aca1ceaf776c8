import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit

/// `guestmode serve` as the command tree shows it (in `guestmode --help`, `guestmode help`,
/// the completion scripts): the server is a program of its own, guestmode-serve, installed beside
/// guestmode, which main.swift runs in this process's place before parsing, as git runs its
/// subcommands. Its options and subcommands are guestmode-serve's (`guestmode serve --help`).
struct ServeLauncher: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve the engine over HTTP to apps and their backends (runs guestmode-serve).",
        discussion: "See 'guestmode serve --help' and guestmode-serve(1).")

    // Taken as every command takes them, so the tree and the completion scripts show them for `serve` too.
    @OptionGroup var global: GlobalOptions

    @Argument(
        parsing: .allUnrecognized, help: "guestmode-serve's options and subcommands.",
        completion: .custom { words, index, prefix in ServeLauncher.completions(words, index: index, prefix: prefix) })
    var arguments: [String] = []

    func run() throws {
        // main.swift hands every `serve` to guestmode-serve before parsing; a parse that still
        // arrives here (never expected) goes the same way.
        Self.exec(Self.serveArguments(Array(CommandLine.arguments.dropFirst())) ?? arguments, isJSON: false)
    }

    /// What guestmode-serve is given for `arguments` when they name `serve`, the global options where
    /// they were (`--store s.sqlite serve key list` → `--store s.sqlite key list`; `help serve key` →
    /// `help key`); nil for every other command.
    static func serveArguments(_ arguments: [String]) -> [String]? {
        // The words are found by reflection over the global options: only when `serve` is there at all.
        guard arguments.contains("serve") else { return nil }
        let positions = UsageErrors.wordPositions(arguments)
        let words = positions.map { arguments[$0] }
        var serving = arguments
        if words.first == "serve" {
            serving.remove(at: positions[0])
        } else if words.count >= 2, words[0] == "help", words[1] == "serve" {
            serving.remove(at: positions[1])
        } else {
            return nil
        }
        return serving
    }

    /// Runs guestmode-serve with `arguments` in this process's place: the same process id, so its
    /// signals, standard streams, environment and exit status are the server's own. It is looked for
    /// beside this binary, then on PATH; without it, a failure that says where it was looked for.
    /// `command` is the guestmode command that runs it: `serve`, or `plan import` (PlanCommand.Import).
    static func exec(_ arguments: [String], isJSON: Bool, command: String = "serve") -> Never {
        let beside = executableURL().deletingLastPathComponent().appendingPathComponent(program).path
        guard let path = serveProgramPath() else {
            Foundation.exit(
                report(
                    GuestModeError(
                        .fileNotFound,
                        "'guestmode \(command)' runs \(program), which is neither beside this guestmode (\(beside)) nor on PATH; install both with 'make install', or put \(program) beside guestmode"
                    ), isJSON: isJSON))
        }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        execv(path, argv)
        let reason = String(cString: strerror(errno))
        Foundation.exit(
            report(GuestModeError(.ioError, "'guestmode \(command)' cannot run \(path): \(reason)"), isJSON: isJSON))
    }

    static let program = "guestmode-serve"

    /// What the shell offers after `guestmode serve`: guestmode-serve's answer for the words typed
    /// after `serve` (`--internal-completions`), since this binary does not carry its commands.
    /// Nothing when guestmode-serve is missing.
    static func completions(_ words: [String], index: Int, prefix: String) -> [String] {
        guard let path = serveProgramPath() else { return [] }
        let typed = words.prefix(index).drop { $0 != "serve" }.dropFirst()
        guard
            let answer = try? ChildProcess.run(path, arguments: [internalCompletionsArgument] + typed + [prefix]),
            answer.termination.succeeded
        else { return [] }
        return String(decoding: answer.output, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    private static func serveProgramPath() -> String? {
        let beside = executableURL().deletingLastPathComponent().appendingPathComponent(program).path
        return FileManager.default.isExecutableFile(atPath: beside) ? beside : onPath()
    }

    private static func onPath() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(program)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}
