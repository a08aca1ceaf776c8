import ArgumentParser
import GuestModeCommandLine
import Synchronization
import Testing

@testable import guestmode

/// A root that opts in, and notes the super-command name ArgumentParser saw each time it read the
/// root's configuration.
private struct ProbeRoot: ParsableCommand {
    static let seen = Mutex<[String?]>([])
    static var configuration: CommandConfiguration {
        let configuration = CompletionScriptCheck.configuration(CommandConfiguration(commandName: "probe"))
        seen.withLock { $0.append(configuration._superCommandName) }
        return configuration
    }

    @Flag var verbose = false
}

/// The same root without the opt-in: what ArgumentParser does on its own.
private struct PlainRoot: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "probe")
    @Flag var verbose = false
}

/// ArgumentParser's completion-script check skipped for command lines that cannot ask for a script
/// (bench/results.md, "Start-up"), and nothing else changed.
@Suite(.serialized) struct CompletionScriptCheckTests {
    private func namesSeen(parsing arguments: [String]) -> (names: [String?], error: (any Error)?) {
        ProbeRoot.seen.withLock { $0.removeAll() }
        var failure: (any Error)?
        do { _ = try CompletionScriptCheck.parse(arguments, as: ProbeRoot.self) } catch { failure = error }
        return (ProbeRoot.seen.withLock { $0 }, failure)
    }

    @Test func aCommandLineWithoutTheOptionIsParsedWithTheCheckSkipped() throws {
        let parsed = namesSeen(parsing: ["--verbose"])
        #expect(parsed.error == nil)
        #expect(parsed.names.contains("probe"), "the parse saw the root as a pseudo-command, which skips the check")
        #expect(ProbeRoot.configuration._superCommandName == nil, "outside the parse the root is as declared")
    }

    @Test func aCommandLineAskingForAScriptKeepsTheCheck() throws {
        for arguments in [
            ["--generate-completion-script", "bash"], ["--generate-completion-script=zsh"],
            ["--generate-completion-script"],
        ] {
            let parsed = namesSeen(parsing: arguments)
            #expect(parsed.names.allSatisfy { $0 == nil }, "\(arguments)")
            let error = try #require(parsed.error, "\(arguments)")
            // The bare form names no shell, so ArgumentParser reads $SHELL: a script where it names
            // one it knows, a usage error where it is unset (as on CI). Either way, as without the opt-in.
            let plainError = try #require(throws: (any Error).self) { _ = try PlainRoot.parseAsRoot(arguments) }
            #expect(ProbeRoot.exitCode(for: error) == PlainRoot.exitCode(for: plainError), "\(arguments)")
            #expect(ProbeRoot.fullMessage(for: error) == PlainRoot.fullMessage(for: plainError), "\(arguments)")
            if arguments != ["--generate-completion-script"] {
                #expect(
                    ProbeRoot.exitCode(for: error) == .success, "a script request ends the parse as ArgumentParser's")
                #expect(ProbeRoot.fullMessage(for: error).contains("probe"), "\(arguments)")
            }
        }
    }

    @Test func guestmodeParsesHelpAndScriptsAsWithoutTheSkip() throws {
        let counters = try #require(
            try CompletionScriptCheck.parse(["--store", "s.sqlite", "counters", "U"], as: GuestmodeCommand.self)
                as? CountersCommand)
        #expect(counters.user == "U" && counters.global.store == "s.sqlite")
        // Help is written after the parse, so it names the command once.
        let help = try CompletionScriptCheck.parse(["counters", "--help"], as: GuestmodeCommand.self)
        #expect(String(describing: type(of: help)) == "HelpCommand", "ArgumentParser's own help command")
        #expect(GuestmodeCommand.helpMessage(for: CountersCommand.self).contains("USAGE: guestmode counters"))
        do {
            _ = try CompletionScriptCheck.parse(["--generate-completion-script", "bash"], as: GuestmodeCommand.self)
            Issue.record("a completion-script request parsed as a command")
        } catch {
            #expect(
                GuestmodeCommand.fullMessage(for: error) == GuestmodeCommand.completionScript(for: .bash))
        }
    }
}
