import ArgumentParser
import Testing

@testable import guestmode

/// Parsing in process: the argument layer checked without spawning a binary.
@Suite struct ArgumentParsingTests {
    func parse(_ arguments: [String]) throws -> any ParsableCommand {
        try Guestmode.parseAsRoot(reorderGlobalOptions(arguments))
    }

    @Test func globalOptionsBeforeTheCommandNameMoveAfterIt() {
        #expect(
            reorderGlobalOptions(["--store", "s.sqlite", "--json", "user", "list"])
                == ["user", "list", "--store", "s.sqlite", "--json"])
        #expect(
            reorderGlobalOptions(["--now=2026-11-01T00:00:00Z", "-q", "counters", "u"])
                == ["counters", "u", "--now=2026-11-01T00:00:00Z", "-q"])
    }

    @Test func globalOptionsStayBeforeADoubleDash() {
        #expect(
            reorderGlobalOptions(["--json", "record", "put", "u", "c", "--", "--json"])
                == ["record", "put", "u", "c", "--json", "--", "--json"])
    }

    @Test func argumentsWithoutLeadingGlobalsAreLeftAsTheyAre() {
        let arguments = ["user", "list", "--json", "--store", "x"]
        #expect(reorderGlobalOptions(arguments) == arguments)
        #expect(reorderGlobalOptions(["--json"]) == ["--json"])
    }

    @Test func globalOptionsReachTheSubcommandInEitherPosition() throws {
        for arguments in [
            ["--store", "a.sqlite", "--json", "user", "list", "--anonymous"],
            ["user", "list", "--anonymous", "--store", "a.sqlite", "--json"],
        ] {
            let command = try #require(try parse(arguments) as? UserCommand.List)
            #expect(command.global.store == "a.sqlite")
            #expect(command.global.json)
            #expect(command.anonymous && !command.global.quiet)
        }
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
        ["record", "put", "--from", "records.ndjson", "--unowned"],
        ["record", "put", "--unowned", "habits", "walk", "extra", "--data", "{}"],
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
            #expect(Guestmode.exitCode(for: error).rawValue == 64)
        }
    }
}
