import ArgumentParser
import GuestModeCommandLine
import Testing

@testable import guestmode

/// A command without an explicit name has ArgumentParser derive one from its
/// type name through reflection when the command tree is built, on every run
/// of every command (about 4.6 M instructions, bench/results.md "Start-up").
@Suite struct CommandNameTests {
    @Test func everyCommandNamesItself() {
        let unnamed = RepeatedOptionTests.everyCommand().filter { $0.type.configuration.commandName == nil }
        #expect(unnamed.map { ($0.path + [String(describing: $0.type)]).joined(separator: " ") } == [])
    }
}
