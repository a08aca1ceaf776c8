import ArgumentParser
import Foundation
import GuestModeKit

/// The command line's own refusals: one line, `guestmode: <what>; see
/// 'guestmode <command> --help'`, exit 64 (JSON with --json), instead of
/// ArgumentParser's three (Error, Usage, See).
enum UsageErrors {
    /// The names of the commands `arguments` starts with (`["backup", "key", "import"]`), the global
    /// options that may come before or between them skipped.
    static func commandPath(_ arguments: [String]) -> [String] {
        var command: any ParsableCommand.Type = Guestmode.self
        var path: [String] = []
        for argument in words(arguments) {
            guard
                let next = command.configuration.subcommands.first(where: {
                    $0._commandName == argument || $0.configuration.aliases.contains(argument)
                })
            else { break }
            path.append(next._commandName)
            command = next
        }
        return path
    }

    /// The names leading to a parsed command's type (a default subcommand included).
    static func commandPath(of type: any ParsableCommand.Type) -> [String]? {
        func search(_ command: any ParsableCommand.Type, _ path: [String]) -> [String]? {
            if ObjectIdentifier(command) == ObjectIdentifier(type) { return path }
            for subcommand in command.configuration.subcommands {
                if let found = search(subcommand, path + [subcommand._commandName]) { return found }
            }
            return nil
        }
        return search(Guestmode.self, [])
    }

    /// The arguments up to `--` without the global options and their values (`--store s.sqlite
    /// user list` → `user list`). Whether an option takes a value is asked of the `GlobalOptions`
    /// group, the one place that declares them: it accepts such an option only with a value after it.
    static func words(_ arguments: [String]) -> [String] {
        var words: [String] = []
        var skipsValue = false
        for argument in arguments.prefix(while: { $0 != "--" }) {
            if skipsValue {
                skipsValue = false
            } else if argument.hasPrefix("-") && argument != "-" {
                skipsValue =
                    (try? GlobalOptions.parse([argument])) == nil && (try? GlobalOptions.parse([argument, "-"])) != nil
            } else {
                words.append(argument)
            }
        }
        return words
    }

    /// `guestmode help TOPIC` names a command; ArgumentParser would print the
    /// top-level help and exit 0 for any word.
    static func refuseUnknownHelpTopic(_ arguments: [String]) throws {
        guard arguments.contains("help") else { return }
        let words = words(arguments)
        guard words.first == "help" else { return }
        let topic = words.dropFirst()
        let known = commandPath(Array(topic))
        guard known.count < topic.count else { return }
        let unknown = topic.dropFirst(known.count).first ?? ""
        let parent = (["guestmode"] + known).joined(separator: " ")
        throw ValidationError("help: '\(parent) \(unknown)' is not a command")
    }

    /// Refuses a single-value option given more than once (`--now a --now b`),
    /// which ArgumentParser would settle silently by keeping the last. Which
    /// options take one value is read from the command's own definition (the
    /// description ArgumentParser dumps for `--experimental-dump-help`), so
    /// every option of every command is covered without a list to keep.
    static func refuseRepeatedOptions(_ arguments: [String], command: any ParsableCommand) throws {
        var occurrences: [String: Int] = [:]
        for argument in arguments.prefix(while: { $0 != "--" }) where argument.hasPrefix("-") && argument != "-" {
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            occurrences[name, default: 0] += 1
        }
        guard occurrences.values.contains(where: { $0 > 1 }),
            let path = commandPath(of: type(of: command))
        else { return }
        for option in try singleValueOptions(path) {
            let given = option.filter { occurrences[$0] != nil }
            let times = given.map { occurrences[$0] ?? 0 }.reduce(0, +)
            if times > 1 {
                let names = given.joined(separator: " and ")
                throw ValidationError("\(names) takes one value but is given \(times) times")
            }
        }
    }

    /// Each single-value option of the command at `path`, as its spellings (`["-n", "--count"]`).
    static func singleValueOptions(_ path: [String]) throws -> [[String]] {
        let dump: String
        do {
            _ = try Guestmode.parseAsRoot(path + ["--experimental-dump-help"])
            return []
        } catch {
            dump = Guestmode.fullMessage(for: error)
        }
        guard let document = try? JSONSerialization.jsonObject(with: Data(dump.utf8)) as? [String: Any],
            let command = document["command"] as? [String: Any],
            let arguments = command["arguments"] as? [[String: Any]]
        else { return [] }
        return arguments.compactMap { argument in
            guard argument["kind"] as? String == "option", argument["isRepeating"] as? Bool != true,
                let names = argument["names"] as? [[String: Any]]
            else { return nil }
            return names.compactMap { name in
                guard let text = name["name"] as? String else { return nil }
                return (name["kind"] as? String == "long" ? "--" : "-") + text
            }
        }
    }

    /// Reports a failure raised by ArgumentParser or by the checks above and
    /// returns the exit status. Help and version requests print as usual.
    static func reportFailure(_ error: Error, arguments: [String], isJSON: Bool) -> Int32 {
        let status = Guestmode.exitCode(for: error)
        if status == .success { Guestmode.exit(withError: error) }
        if let exit = error as? ExitCode { return exit.rawValue }
        let lines = Guestmode.message(for: error).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("Usage:") && !$0.hasPrefix("See '") && !$0.hasPrefix("Help:") }
        var what = lines.joined(separator: " ")
        if what.hasPrefix("Error: ") { what.removeFirst("Error: ".count) }
        // ArgumentParser's sentences start with a capital; ours continue "guestmode: ".
        if let first = what.first, first.isUppercase, what.dropFirst().first?.isLowercase == true {
            what = first.lowercased() + what.dropFirst()
        }
        if what.hasSuffix(".") { what.removeLast() }
        let command = (["guestmode"] + commandPath(arguments)).joined(separator: " ")
        let failure = GuestModeError(.usage, "\(what); see '\(command) --help'")
        return report(failure, isJSON: isJSON)
    }

    /// Whether `error` is ArgumentParser's (a parse failure, a help request, a `ValidationError`).
    static func isArgumentParserError(_ error: Error) -> Bool {
        String(reflecting: type(of: error)).hasPrefix("ArgumentParser.")
    }
}
