import ArgumentParser
import GuestModeCommandLine
import Testing

@testable import guestmode

/// Parsing in process: the argument layer checked without spawning a binary.
@Suite struct ArgumentParsingTests {
    func parse(_ arguments: [String]) throws -> any ParsableCommand {
        try GuestmodeCommand.parseAsRoot(arguments)
    }

    @Test func globalOptionsReachTheSubcommandInEitherPosition() throws {
        for arguments in [
            ["--store", "a.sqlite", "--json", "user", "list", "--anonymous"],
            ["user", "list", "--anonymous", "--store", "a.sqlite", "--json"],
            ["--store", "a.sqlite", "user", "--json", "list", "--anonymous"],
            ["--store=a.sqlite", "user", "list", "--anonymous", "--json"],
        ] {
            let command = try #require(try parse(arguments) as? UserCommand.List)
            #expect(command.global.store == "a.sqlite")
            #expect(command.global.json)
            #expect(command.anonymous && !command.global.quiet)
        }
        let counters = try #require(
            try parse(["--now=2026-11-01T00:00:00Z", "-q", "counters", "u"]) as? CountersCommand)
        #expect(counters.global.now == "2026-11-01T00:00:00Z" && counters.global.quiet && counters.user == "u")
    }

    @Test func globalOptionsStayBeforeADoubleDash() throws {
        let put = try #require(
            try parse(["--json", "record", "put", "u", "c", "--data", "{}", "--", "--json"]) as? RecordCommand.Put)
        #expect(put.global.json)
        #expect(put.user == "u" && put.collection == "c" && put.key == "--json")
        let operand = try #require(
            try parse(["record", "put", "u", "c", "--data", "{}", "--", "-k"]) as? RecordCommand.Put)
        #expect(operand.key == "-k" && !operand.global.json)
    }

    @Test func theCommandPathSkipsGlobalOptions() {
        #expect(UsageErrors.commandPath(["--store", "user", "--json", "user", "list", "u"]) == ["user", "list"])
        #expect(
            UsageErrors.commandPath(["--now", "-1h", "-q", "backup", "key", "import", "k"]) == [
                "backup", "key", "import",
            ])
        #expect(UsageErrors.commandPath(["--store=s.sqlite", "track", "u", "a"]) == ["track"])
        #expect(UsageErrors.commandPath(["record", "put", "--", "get"]) == ["record", "put"])
    }

    @Test func eachCommandGroupParsesToItsType() throws {
        #expect(try parse(["init", "--profile", "voice"]) is InitCommand)
        #expect(try parse(["link", "u", "--provider", "apple", "--subject", "s"]) is LinkCommand)
        #expect(try parse(["unlink", "u", "--provider", "apple"]) is UnlinkCommand)
        #expect(try parse(["track", "u", "app_opened"]) is TrackCommand)
        #expect(try parse(["counters", "u"]) is CountersCommand)
        #expect(try parse(["merge", "g", "--into", "a", "--policy", "union"]) is MergeCommand.Guest)
        #expect(try parse(["merge", "conflicts", "list"]) is MergeCommand.Conflicts.List)
        #expect(try parse(["merge", "conflicts", "restore", "3", "--key", "k"]) is MergeCommand.Conflicts.Restore)
        #expect(try parse(["replay", "log.ndjson"]) is ReplayCommand)
        #expect(try parse(["tour"]) is TourCommand)
        #expect(try parse(["limit", "u"]) is LimitCommand)
        #expect(try parse(["plan", "status", "u"]) is PlanCommand.Status)
        #expect(try parse(["guest", "new"]) is GuestCommand.New)
    }

    @Test(arguments: [
        ["merge", "g", "--into", "a", "--policy", "coin-flip"],
        ["user", "list", "--bogus"],
        ["link", "u", "--provider", "apple"],
        ["no-such-command"],
        ["record", "put", "--from", "records.ndjson", "--data", "{}"],
        ["record", "put", "habits", "walk", "--data", "{}"],
        ["record", "put-ownerless", "habits", "walk", "extra", "--data", "{}"],
        ["record", "put-ownerless", "habits", "walk"],
        ["record", "put", "u", "habits", "walk", "--data", "{}", "--on-conflict", "skip"],
    ])
    func usageErrorsAreRefusedWhileParsing(arguments: [String]) {
        #expect(throws: (any Error).self) { try parse(arguments) }
    }

    @Test func usageErrorsExitSixtyFour() {
        do {
            _ = try parse(["merge", "g", "--into", "a", "--policy", "coin-flip"])
            Issue.record("parsed a policy that does not exist")
        } catch {
            #expect(GuestmodeCommand.exitCode(for: error).rawValue == 64)
        }
    }
}
