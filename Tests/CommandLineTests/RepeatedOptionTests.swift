import ArgumentParser
import Foundation
import GuestModeCommandLine
import GuestModeKit
import Testing

@testable import guestmode

/// The checks main.swift runs over a parsed command line.
@Suite struct RepeatedOptionTests {
    func check(_ arguments: [String]) throws {
        try UsageErrors.refuseUnknownHelpTopic(arguments)
        let command = try GuestmodeCommand.parseAsRoot(arguments)
        try UsageErrors.refuseRepeatedOptions(arguments, command: command)
    }

    /// Every command type reachable from the root, with its path.
    static func everyCommand() -> [(path: [String], type: any ParsableCommand.Type)] {
        var found: [(path: [String], type: any ParsableCommand.Type)] = []
        func visit(_ command: any ParsableCommand.Type, _ path: [String]) {
            found.append((path, command))
            for subcommand in command.configuration.subcommands { visit(subcommand, path + [subcommand._commandName]) }
        }
        visit(GuestmodeCommand.self, [])
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
            #expect(UsageErrors.commandPath(path + ["x"]) == path)
            // ArgumentParser's own description of the command, read here (never at run time) to hold
            // the names main.swift derives from the declarations to the names ArgumentParser parses.
            let described = Self.describedSingleValueOptions(path)
            let derived = UsageErrors.singleValueOptions(of: type)
            #expect(Set(derived) == Set(described.flatMap { $0 }), "guestmode \(path.joined(separator: " "))")
            #expect(described.allSatisfy { $0.count == 1 }, "an option with more than one name: \(described)")
            // Every command that runs takes the global options, so each must be found single-valued.
            guard type.configuration.subcommands.isEmpty else { continue }
            for name in ["--store", "--schema", "--now"] {
                #expect(derived.contains(name), "guestmode \(path.joined(separator: " ")): \(derived)")
            }
        }
    }

    /// Each single-value option of the command at `path`, as its spellings, from `--experimental-dump-help`.
    static func describedSingleValueOptions(_ path: [String]) -> [[String]] {
        let dump: String
        do {
            _ = try GuestmodeCommand.parseAsRoot(path + ["--experimental-dump-help"])
            return []
        } catch {
            dump = GuestmodeCommand.fullMessage(for: error)
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

    @Test func optionNamesAreArgumentParsersDefaults() {
        #expect(UsageErrors.optionName("store") == "store")
        #expect(UsageErrors.optionName("toSchema") == "to-schema")
        #expect(UsageErrors.optionName("inactiveDays") == "inactive-days")
        #expect(UsageErrors.optionName("userID") == "user-id")
        #expect(UsageErrors.optionName("URLSession") == "url-session")
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

    /// main.swift tells the command line's refusals from the work's failures by the exit status
    /// ArgumentParser's public API gives them, never by the error's type name.
    @Test func usageFailuresAreKnownByTheirExitStatus() {
        #expect(UsageErrors.isUsageFailure(ValidationError("give --yes")))
        #expect(UsageErrors.isUsageFailure(CleanExit.helpRequest()))
        #expect(!UsageErrors.isUsageFailure(ExitCode(10)))
        #expect(!UsageErrors.isUsageFailure(GuestModeError(.userNotFound, "no user 'u'")))
        #expect(!UsageErrors.isUsageFailure(CocoaError(.fileNoSuchFile)))
    }

    @Test func anEmptyPropertyNameIsRefused() {
        #expect(throws: (any Error).self) { try check(["track", "u", "app_opened", "--prop", "=v"]) }
        #expect(throws: Never.self) { try check(["track", "u", "app_opened", "--prop", "a="]) }
    }
}
