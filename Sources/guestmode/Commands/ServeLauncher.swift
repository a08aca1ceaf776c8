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

    /// What the shell offers after `guestmode serve`: the subcommands and options of the
    /// guestmode-serve command the words so far reach, read from guestmode-serve's own help dump,
    /// since this binary does not carry its command tree. Nothing when guestmode-serve is missing.
    static func completions(_ words: [String], index: Int, prefix: String) -> [String] {
        guard let path = serveProgramPath(), var command = helpDump(of: path) else { return [] }
        let typed = words.prefix(index).drop { $0 != "serve" }.dropFirst()
        var takesValue = false
        for word in typed {
            if takesValue {
                takesValue = false
            } else if word.hasPrefix("-") {
                takesValue = command.options[word] ?? false
            } else if let subcommand = command.subcommands[word] {
                command = subcommand
            }
        }
        // An option's value: left to the shell, as the other options' values are.
        guard !takesValue else { return [] }
        let offered = prefix.hasPrefix("-") ? Array(command.options.keys) : Array(command.subcommands.keys)
        return offered.filter { $0.hasPrefix(prefix) }.sorted()
    }

    /// One command of a help dump: its subcommands by name, its option names (true when one takes a value).
    private struct DumpedCommand {
        var subcommands: [String: DumpedCommand] = [:]
        var options: [String: Bool] = [:]

        init?(_ object: Any?) {
            guard let object = object as? [String: Any] else { return nil }
            for subcommand in object["subcommands"] as? [[String: Any]] ?? []
            where subcommand["shouldDisplay"] as? Bool != false {
                if let name = subcommand["commandName"] as? String { subcommands[name] = DumpedCommand(subcommand) }
            }
            for argument in object["arguments"] as? [[String: Any]] ?? []
            where argument["shouldDisplay"] as? Bool != false {
                let kind = argument["kind"] as? String
                guard kind == "option" || kind == "flag" else { continue }
                for name in argument["names"] as? [[String: Any]] ?? [] {
                    guard let text = name["name"] as? String else { continue }
                    options[(name["kind"] as? String == "short" ? "-" : "--") + text] = kind == "option"
                }
            }
        }
    }

    private static func helpDump(of path: String) -> DumpedCommand? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: path)
        process.arguments = ["--experimental-dump-help"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return DumpedCommand((try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["command"])
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
