import ArgumentParser

/// ArgumentParser reads every command line as its own `--generate-completion-script [SHELL]`
/// before parsing it for the command, building two commands by reflection to do so: about 2 M of
/// the 41 M instructions a `guestmode counters U` takes (bench/results.md, "Start-up"). It skips
/// that for a root command with a super-command name, a name that shows only in help text, which
/// is never written while parsing. So a root that opts in (its `configuration` passed through
/// ``configuration(_:)``) reports one only while ``parse(_:as:)`` parses a command line in which
/// no word can be that option; every other command line, and every help text, sees the root as
/// it is declared.
///
/// ```swift
/// static var configuration: CommandConfiguration { CompletionScriptCheck.configuration(declared) }
/// ```
package enum CompletionScriptCheck {
    // A task-local, not a global: a parse on another thread (a test beside another) never sees it.
    @TaskLocal private static var skipping = false

    /// `declared`, with a super-command name while a command line that cannot ask for a completion
    /// script is parsed.
    package static func configuration(_ declared: CommandConfiguration) -> CommandConfiguration {
        guard skipping else { return declared }
        var configuration = declared
        configuration._superCommandName = declared.commandName
        return configuration
    }

    /// `Root.parseAsRoot(arguments)`, without the completion-script check when no word of
    /// `arguments` starts as that option does (ArgumentParser takes no abbreviation of it).
    package static func parse<Root: ParsableCommand>(
        _ arguments: [String], as root: Root.Type
    ) throws -> any ParsableCommand {
        let asksForScript = arguments.contains { $0.hasPrefix("--generate-completion-script") }
        return try $skipping.withValue(!asksForScript) { try Root.parseAsRoot(arguments) }
    }
}
