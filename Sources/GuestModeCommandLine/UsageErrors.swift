import ArgumentParser
import Foundation
import GuestModeKit

/// The command line's own refusals: one line, `guestmode: <what>; see
/// 'guestmode <command> --help'`, exit 64 (JSON with --json), instead of
/// ArgumentParser's three (Error, Usage, See). `Root` is the executable's root command
/// (`guestmode`, or `guestmode serve` in guestmode-serve), whose name starts every command path.
package enum CommandLineUsage<Root: ParsableCommand> {
    /// How the root command is named in a message: `guestmode`, `guestmode serve`.
    static var rootName: String { Root.configuration.commandName ?? "guestmode" }

    /// The names of the commands `arguments` starts with (`["backup", "key", "import"]`), the global
    /// options that may come before or between them skipped.
    package static func commandPath(_ arguments: [String]) -> [String] {
        var command: any ParsableCommand.Type = Root.self
        var path: [String] = []
        for argument in words(arguments) {
            guard let next = subcommand(of: command, named: argument) else { break }
            // Every command names itself in its configuration (RepeatedOptionTests checks each).
            path.append(next.configuration.commandName ?? "")
            command = next
        }
        return path
    }

    /// The arguments up to `--` without the global options and their values (`--store s.sqlite
    /// user list` → `user list`). Whether an option takes a value is asked of the `GlobalOptions`
    /// group, the one place that declares them: it accepts such an option only with a value after it.
    package static func words(_ arguments: [String]) -> [String] {
        wordPositions(arguments).map { arguments[$0] }
    }

    /// Where in `arguments` the `words(_:)` are.
    package static func wordPositions(_ arguments: [String]) -> [Int] {
        var positions: [Int] = []
        var skipsValue = false
        for (position, argument) in arguments.prefix(while: { $0 != "--" }).enumerated() {
            if skipsValue {
                skipsValue = false
            } else if argument.hasPrefix("-") && argument != "-" {
                skipsValue =
                    (try? GlobalOptions.parse([argument])) == nil && (try? GlobalOptions.parse([argument, "-"])) != nil
            } else {
                positions.append(position)
            }
        }
        return positions
    }

    /// `guestmode help TOPIC` names a command; ArgumentParser would print the
    /// top-level help and exit 0 for any word.
    package static func refuseUnknownHelpTopic(_ arguments: [String]) throws {
        guard arguments.contains("help") else { return }
        let words = words(arguments)
        guard words.first == "help" else { return }
        let topic = words.dropFirst()
        let known = commandPath(Array(topic))
        guard known.count < topic.count else { return }
        let unknown = topic.dropFirst(known.count).first ?? ""
        let parent = ([rootName] + known).joined(separator: " ")
        throw ValidationError("help: '\(parent) \(unknown)' is not a command")
    }

    /// Refuses a single-value option given more than once (`--now a --now b`),
    /// which ArgumentParser would settle silently by keeping the last. Which
    /// options take one value is read from the command's own declarations
    /// (`singleValueOptions(of:)`), so every option of every command is covered
    /// without a list to keep.
    package static func refuseRepeatedOptions(_ arguments: [String], command: any ParsableCommand) throws {
        var occurrences: [String: Int] = [:]
        for argument in arguments.prefix(while: { $0 != "--" }) where argument.hasPrefix("-") && argument != "-" {
            let name = argument.split(separator: "=", maxSplits: 1).first.map(String.init) ?? argument
            occurrences[name, default: 0] += 1
        }
        guard occurrences.values.contains(where: { $0 > 1 }) else { return }
        for name in singleValueOptions(of: type(of: command)) {
            if let times = occurrences[name], times > 1 {
                throw ValidationError("\(name) takes one value but is given \(times) times")
            }
        }
    }

    /// The long names of the command's options that take one value (`--store`, `--now`, `--count`),
    /// its option groups' included. Mirror shows each `@Option` and `@OptionGroup` declared (as
    /// `_name`) with its value type; the name is ArgumentParser's default spelling of the
    /// property's, which is why guestmode declares no option under a custom name
    /// (RepeatedOptionTests holds every command's list to ArgumentParser's own description).
    package static func singleValueOptions(of type: any ParsableArguments.Type) -> [String] {
        declaredOptions(of: type) { ($0 as? any OptionDeclaration.Type)?.takesOneValue == true }
    }

    /// The long names of the properties of `type` (and of its option groups) whose property wrapper
    /// type `kept` accepts (an `Option<…>`, a `Flag<…>`).
    package static func declaredOptions(
        of type: any ParsableArguments.Type, where kept: (Any.Type) -> Bool
    )
        -> [String]
    {
        Mirror(reflecting: type.init()).children.flatMap { child -> [String] in
            guard let label = child.label, label.hasPrefix("_") else { return [] }
            let wrapper = Swift.type(of: child.value)
            if let group = wrapper as? any OptionGroupDeclaration.Type {
                return declaredOptions(of: group.arguments, where: kept)
            }
            return kept(wrapper) ? ["--" + optionName(String(label.dropFirst()))] : []
        }
    }

    /// The subcommand of `command` named `name` (or one of its aliases); nil when it has none.
    package static func subcommand(
        of command: any ParsableCommand.Type, named name: String
    )
        -> (any ParsableCommand.Type)?
    {
        command.configuration.subcommands.first {
            $0.configuration.commandName == name || $0.configuration.aliases.contains(name)
        }
    }

    /// `toSchema` → `to-schema`, `userID` → `user-id`: ArgumentParser's default long name of a property.
    package static func optionName(_ property: String) -> String {
        let characters = Array(property)
        var name = ""
        var separatesOnUppercase = true
        for (index, character) in characters.enumerated() {
            if character.isUppercase {
                if separatesOnUppercase && !name.isEmpty { name += "-" }
                // "URLSession": the L starts a word, as the next letter is lowercase.
                separatesOnUppercase =
                    index + 2 < characters.count && characters[index + 1].isUppercase
                    && characters[index + 2].isLowercase
            } else {
                separatesOnUppercase = character != "-"
            }
            name += character.lowercased()
        }
        return name
    }

    /// Reports a failure raised by ArgumentParser or by the checks above and
    /// returns the exit status. Help and version requests print as usual.
    package static func reportFailure(_ error: Error, arguments: [String], isJSON: Bool) -> Int32 {
        let status = Root.exitCode(for: error)
        if status == .success { Root.exit(withError: error) }
        if let exit = error as? ExitCode { return exit.rawValue }
        let lines = Root.message(for: error).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.hasPrefix("Usage:") && !$0.hasPrefix("See '") && !$0.hasPrefix("Help:") }
        var what = lines.joined(separator: " ")
        if what.hasPrefix("Error: ") { what.removeFirst("Error: ".count) }
        // ArgumentParser's sentences start with a capital; ours continue "guestmode: ".
        if let first = what.first, first.isUppercase, what.dropFirst().first?.isLowercase == true {
            what = first.lowercased() + what.dropFirst()
        }
        if what.hasSuffix(".") { what.removeLast() }
        let command = ([rootName] + commandPath(arguments)).joined(separator: " ")
        let failure = GuestModeError(.usage, "\(what); see '\(command) --help'")
        return report(failure, isJSON: isJSON)
    }

    /// Whether `error` is the command line's (a `ValidationError` or a help request, which
    /// ArgumentParser answers with 64 or 0) rather than a failure of the work.
    package static func isUsageFailure(_ error: Error) -> Bool {
        // The engine's refusals (exit 10–14, a script's everyday answers) are known without asking
        // ArgumentParser, whose `exitCode(for:)` builds the command's help by reflection: 9.8 M instructions
        // of a refused `prompt next` (bench/results.md, "Start-up: the plain command lines parsed without
        // reflection").
        guard !(error is ExitCode), !(error is GuestModeError) else { return false }
        let status = Root.exitCode(for: error)
        return status == .validationFailure || status == .success
    }
}

/// An `@Option` as `Mirror` shows it.
package protocol OptionDeclaration {
    static var takesOneValue: Bool { get }
}

extension Option: OptionDeclaration {
    package static var takesOneValue: Bool { !(Value.self is any RepeatingValue.Type) }
}

/// A value an option collects from each time it is given.
package protocol RepeatingValue {}
extension Array: RepeatingValue {}
extension Optional: RepeatingValue where Wrapped: RepeatingValue {}

/// An `@OptionGroup` as `Mirror` shows it.
package protocol OptionGroupDeclaration {
    static var arguments: any ParsableArguments.Type { get }
}

extension OptionGroup: OptionGroupDeclaration {
    package static var arguments: any ParsableArguments.Type { Value.self }
}
