import ArgumentParser
import Testing

@testable import guestmode

/// The checks main.swift runs over a parsed command line.
@Suite struct RepeatedOptionTests {
    func check(_ arguments: [String]) throws {
        try UsageErrors.refuseUnknownHelpTopic(arguments)
        let command = try Guestmode.parseAsRoot(arguments)
        try UsageErrors.refuseRepeatedOptions(arguments, command: command)
    }

    /// Every command type reachable from the root, with its path.
    static func everyCommand() -> [(path: [String], type: any ParsableCommand.Type)] {
        var found: [(path: [String], type: any ParsableCommand.Type)] = []
        func visit(_ command: any ParsableCommand.Type, _ path: [String]) {
            found.append((path, command))
            for subcommand in command.configuration.subcommands { visit(subcommand, path + [subcommand._commandName]) }
        }
        visit(Guestmode.self, [])
        return found
    }

    @Test(arguments: [
        ["track", "u", "app_opened", "--now", "2026-11-01T00:00:00Z", "--now", "2027-01-01T00:00:00Z"],
        ["--now", "2026-11-01T00:00:00Z", "track", "u", "app_opened", "--now", "2026-11-01T00:00:00Z"],
        ["track", "u", "app_opened", "--count", "1", "--count", "2"],
        ["track", "u", "app_opened", "--count=1", "--count=2"],
        ["track", "u", "app_opened", "--id", "a", "--id", "b"],
        ["record", "put", "u", "c", "k", "--data", "{}", "--data", "{}"],
        ["meter", "use", "u", "m", "1", "--id", "a", "--id", "b"],
        ["migrate", "g", "--to", "a", "--to", "b"],
        ["backup", "export", "u", "--out", "a.tar.zst", "--out", "b.tar.zst"],
        ["--store", "a.sqlite", "user", "list", "--store", "b.sqlite"],
    ])
    func aSingleValueOptionGivenTwiceIsRefused(_ arguments: [String]) {
        #expect(throws: ValidationError.self) { try check(arguments) }
    }

    @Test(arguments: [
        ["track", "u", "app_opened", "--prop", "a=1", "--prop", "b=2"],
        ["track", "u", "app_opened", "--json", "--json"],
        ["-v", "track", "u", "app_opened", "--verbose", "--count", "2"],
        ["track", "u", "--count", "2", "--", "--count"],
        ["help", "backup", "key"],
        ["backup", "export", "a", "b", "--out", "x.tar.zst"],
    ])
    func repeatableOptionsFlagsAndOperandsAreNot(_ arguments: [String]) throws {
        try check(arguments)
    }

    @Test func everyCommandsDefinitionIsRead() throws {
        let commands = Self.everyCommand()
        #expect(commands.count > 40)
        for (path, type) in commands {
            #expect(UsageErrors.commandPath(of: type) == path)
            #expect(UsageErrors.commandPath(path + ["x"]) == path)
            // Every command that runs takes the global options, so each must be found single-valued.
            guard type.configuration.subcommands.isEmpty else { continue }
            let options = try UsageErrors.singleValueOptions(path)
            for name in ["--store", "--schema", "--now"] {
                #expect(options.contains([name]), "guestmode \(path.joined(separator: " ")): \(options)")
            }
        }
    }

    @Test func helpOfAnUnknownCommandIsRefused() {
        #expect(throws: ValidationError.self) { try UsageErrors.refuseUnknownHelpTopic(["help", "nosuchcommand"]) }
        #expect(throws: ValidationError.self) { try UsageErrors.refuseUnknownHelpTopic(["help", "backup", "nosuch"]) }
        #expect(throws: Never.self) { try UsageErrors.refuseUnknownHelpTopic(["help", "backup", "key", "import"]) }
        #expect(throws: Never.self) { try UsageErrors.refuseUnknownHelpTopic(["help"]) }
        #expect(throws: ValidationError.self) {
            try UsageErrors.refuseUnknownHelpTopic(["--store", "help", "help", "nosuchcommand"])
        }
        #expect(throws: Never.self) { try UsageErrors.refuseUnknownHelpTopic(["--store", "help", "user", "list"]) }
    }

    @Test func anEmptyPropertyNameIsRefused() {
        #expect(throws: (any Error).self) { try check(["track", "u", "app_opened", "--prop", "=v"]) }
        #expect(throws: Never.self) { try check(["track", "u", "app_opened", "--prop", "a="]) }
    }
}
