import ArgumentParser
import Foundation
import GuestModeCommandLine
import Testing

@testable import guestmode

/// Values that begin with a minus sign stay values, by ArgumentParser's own
/// parsing strategies: a negative amount reaches the command, which says what
/// it expects, and `--now -1h` is a relative time.
@Suite struct SignedValueTests {
    func parse(_ arguments: [String]) throws -> any ParsableCommand {
        try GuestmodeCommand.parseAsRoot(arguments)
    }

    @Test func aNegativeAmountReachesTheCommand() throws {
        for (arguments, amount) in [
            (["meter", "use", "u", "api_minutes", "-5"], "-5"),
            (["meter", "use", "u", "api_minutes", "-5", "--id", "k"], "-5"),
            (["--json", "meter", "use", "u", "api_minutes", "-0.5"], "-0.5"),
            (["meter", "use", "u", "api_minutes", "--", "-5"], "-5"),
            (["meter", "use", "u", "api_minutes", "12.5"], "12.5"),
        ] {
            let use = try #require(try parse(arguments) as? MeterCommand.Use)
            #expect(try MeterCommand.amount(use.amount) == amount, "\(arguments)")
        }
        let check = try #require(try parse(["meter", "check", "u", "api_minutes", "-1"]) as? MeterCommand.Check)
        #expect(try MeterCommand.amount(check.amount) == "-1")
        let open = try #require(try parse(["meter", "check", "u", "api_minutes"]) as? MeterCommand.Check)
        #expect(try MeterCommand.amount(open.amount) == nil)
    }

    /// `meter use` and `meter check` write their usage out; it must still name every argument they take.
    @Test(arguments: [["meter", "use"], ["meter", "check"]])
    func theWrittenUsageNamesEveryArgument(_ path: [String]) throws {
        let usage = try #require(
            (path.last == "use" ? MeterCommand.Use.configuration : MeterCommand.Check.configuration).usage)
        #expect(usage.hasPrefix("guestmode " + path.joined(separator: " ") + " "))
        var dump = ""
        do {
            _ = try GuestmodeCommand.parseAsRoot(path + ["--experimental-dump-help"])
        } catch {
            dump = GuestmodeCommand.fullMessage(for: error)
        }
        let document = try #require(try JSONSerialization.jsonObject(with: Data(dump.utf8)) as? [String: Any])
        let arguments = try #require((document["command"] as? [String: Any])?["arguments"] as? [[String: Any]])
        for argument in arguments where argument["shouldDisplay"] as? Bool == true {
            let name = (argument["preferredName"] as? [String: Any])?["name"] as? String
            let shown =
                argument["kind"] as? String == "positional" ? "<\(argument["valueName"] ?? "")>" : "--\(name ?? "")"
            if ["--help", "--version"].contains(shown) { continue }
            #expect(usage.contains(shown), "\(shown) is missing from: \(usage)")
        }
    }

    @Test(arguments: [
        ["meter", "use", "u", "api_minutes"],
        ["meter", "use", "u", "api_minutes", "5", "--bogus"],
        ["meter", "use", "u", "api_minutes", "5", "-3"],
        ["meter", "check", "u", "api_minutes", "-5", "--", "-6"],
    ])
    func whatIsNotOneAmountIsRefused(_ arguments: [String]) {
        #expect(throws: (any Error).self) { try parse(arguments) }
    }

    @Test func aSignedValueOfAnOptionIsItsValue() throws {
        let now = try #require(try parse(["--now", "-1h", "user", "list"]) as? UserCommand.List)
        #expect(now.global.now == "-1h")
        let after = try #require(try parse(["user", "list", "--now", "-P1D"]) as? UserCommand.List)
        #expect(after.global.now == "-P1D")
        let events = try #require(
            try parse(["user", "events", "u", "--since", "-7d", "--limit", "5"]) as? UserCommand.Events)
        #expect(events.since == "-7d" && events.limit == 5)
    }

    /// The command refuses the value itself, saying what it expects, rather than ArgumentParser a missing one.
    @Test(arguments: [
        (["track", "u", "a", "--count", "-3"], "--count must be between 1"),
        (["user", "list", "--inactive-days", "-1"], "--inactive-days must be between 0"),
        (["user", "purge", "--inactive", "-3d", "--dry-run"], "--inactive"),
        (["plan", "grant", "u", "premium", "--trial", "-7d"], "--trial: "),
    ])
    func aSignedValueTheCommandRefusesIsRefusedByIt(_ arguments: [String], _ message: String) {
        do {
            _ = try parse(arguments)
            Issue.record("\(arguments) parsed")
        } catch {
            let text = GuestmodeCommand.message(for: error)
            #expect(text.contains(message) && !text.contains("Missing value"), "\(text)")
        }
    }

    @Test func plainArgumentsAreLeftAlone() throws {
        let put = try #require(try parse(["record", "put", "u", "c", "k", "--data", "{}"]) as? RecordCommand.Put)
        #expect(put.document.data == "{}" && put.key == "k")
        let export = try #require(try parse(["backup", "export", "u", "--out", "-"]) as? BackupCommand.Export)
        #expect(export.out == "-" && export.users == ["u"])
    }
}
