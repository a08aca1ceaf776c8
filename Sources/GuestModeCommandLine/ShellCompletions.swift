import ArgumentParser
import Foundation

/// What a shell offers for the next word of a command line under `Root`: the subcommands of the
/// command the words so far reach, or, for a word starting with `-`, its long options. guestmode
/// asks guestmode-serve for the words after `serve` (`guestmode-serve --internal-completions`),
/// since guestmode does not carry the server's commands; the tree is read from the commands
/// themselves, as `CommandLineUsage` reads it, not from ArgumentParser's help dump.
package enum ShellCompletions<Root: ParsableCommand> {
    /// The candidates for `current`, the word being completed, after `typed`, the words before it.
    /// Nothing while the word is an option's value: that is left to the shell.
    ///
    /// ```swift
    /// ShellCompletions<ServeCommand>.candidates(typed: ["key"], current: "cr")  // ["create"]
    /// ```
    package static func candidates(typed: [String], current: String) -> [String] {
        var command: any ParsableCommand.Type = Root.self
        var takesValue = false
        for word in typed {
            if takesValue {
                takesValue = false
            } else if word.hasPrefix("-") {
                takesValue = valueOptions(of: command).contains(word)
            } else if let next = CommandLineUsage<Root>.subcommand(of: command, named: word) {
                command = next
            }
        }
        guard !takesValue else { return [] }
        let offered =
            current.hasPrefix("-")
            ? longOptions(of: command)
            : command.configuration.subcommands.filter { $0.configuration.shouldDisplay }
                .compactMap { $0.configuration.commandName }
                + (ObjectIdentifier(command) == ObjectIdentifier(Root.self) ? ["help"] : [])
        return Set(offered).filter { $0.hasPrefix(current) }.sorted()
    }

    /// Prints the candidates for `arguments` (the words typed, the one being completed last), one a
    /// line, and exits 0: guestmode-serve's answer to `--internal-completions`.
    package static func answer(_ arguments: [String]) -> Never {
        let typed = Array(arguments.dropLast())
        for candidate in candidates(typed: typed, current: arguments.last ?? "") { print(candidate) }
        Foundation.exit(0)
    }

    /// Every long option and flag of `type`, its option groups' included, with `--help`.
    private static func longOptions(of type: any ParsableArguments.Type) -> [String] {
        CommandLineUsage<Root>.declaredOptions(of: type) {
            ($0 as? any OptionDeclaration.Type) != nil || ($0 as? any FlagDeclaration.Type) != nil
        } + ["--help"]
    }

    /// The long options of `type` that take a value.
    private static func valueOptions(of type: any ParsableArguments.Type) -> [String] {
        CommandLineUsage<Root>.declaredOptions(of: type) { ($0 as? any OptionDeclaration.Type) != nil }
    }
}

/// The hidden first argument that asks guestmode-serve for completions instead of a command.
package let internalCompletionsArgument = "--internal-completions"

/// A `@Flag` as `Mirror` shows it.
package protocol FlagDeclaration {}

extension Flag: FlagDeclaration {}
