import ArgumentParser
import GuestModeCommandLine
import Testing

@testable import guestmode

/// The quick parse (`QuickCommand`) takes a line only when ArgumentParser would make the same command of it.
@Suite struct QuickParseTests {
    static func quick(_ arguments: [String]) -> (any ParsableCommand)? {
        QuickCommand.parse(arguments, among: GuestmodeCommand.quickCommands)
    }

    /// Everything `dump` shows of a command: every property wrapper's state and value, option groups within.
    static func contents(_ command: Any) -> String {
        var text = ""
        dump(command, to: &text)
        return text
    }

    /// The command ArgumentParser makes of `arguments` with main.swift's checks, or the refusal's text.
    static func parsedByArgumentParser(_ arguments: [String]) -> Result<any ParsableCommand, Error> {
        Result {
            try UsageErrors.refuseUnknownHelpTopic(arguments)
            let command = try GuestmodeCommand.parseAsRoot(arguments)
            try UsageErrors.refuseRepeatedOptions(arguments, command: command)
            return command
        }
    }

    /// Holds the quick parse of `arguments`, when it takes the line, to ArgumentParser's; returns whether it took it.
    @discardableResult
    static func expectSameCommand(_ arguments: [String]) -> Bool {
        guard let quick = quick(arguments) else { return false }
        switch parsedByArgumentParser(arguments) {
        case .success(let full):
            #expect(type(of: quick) == type(of: full), "\(arguments)")
            #expect(contents(quick) == contents(full), "\(arguments)")
        case .failure(let error):
            Issue.record("the quick parse took \(arguments), which ArgumentParser refuses: \(error)")
        }
        return true
    }

    /// The lines a script runs once per user are the quick parse's: were it to decline them all, nothing
    /// would fail but the start-up would be ArgumentParser's again.
    @Test(arguments: [
        ["guest", "new", "--quiet"],
        ["guest", "new", "--device", "dev-1", "--json"],
        ["guest", "new", "--username", "legacy", "--secret-stdin"],
        ["link", "u1", "--provider", "apple", "--subject", "001.abc", "--email", "a@example.com"],
        ["user", "show", "u1", "--json"],
        ["unlink", "u1", "--provider", "apple"],
        ["prompt", "record", "u1", "first_export", "dismissed", "--now", "+1h"],
        ["record", "delete", "u1", "notes", "n1", "-q"],
        ["meter", "status", "u1", "api_minutes", "--format", "csv"],
        ["counters", "u1"],
        ["--store", "s.sqlite", "counters", "u1", "--json"],
        ["counters", "u1", "--format", "tsv", "-q"],
        ["limit", "u1", "notes", "--now", "-1h"],
        ["track", "u1", "app_opened", "--count", "3", "--id", "k1", "--prop=plan=pro"],
        ["meter", "use", "u1", "api_minutes", "12.5", "--id", "call-7", "--overage", "allow"],
        ["--now=2026-11-01T00:00:00Z", "meter", "check", "u1", "api_minutes", "1", "--raise-prompt"],
        ["meter", "check", "u1", "api_minutes"],
        ["prompt", "next", "u1", "--trigger", "export", "--explain", "--verbose"],
        ["record", "get", "u1", "notes", "n1", "--schema", "app"],
        ["record", "put", "u1", "notes", "n1", "--data", "{\"title\":\"-\"}"],
        ["record", "put", "u1", "notes", "n1", "--file=note.json", "--json"],
    ])
    func aPlainLineIsQuicklyParsed(_ arguments: [String]) {
        #expect(Self.expectSameCommand(arguments), "declined: \(arguments)")
    }

    /// What only ArgumentParser answers (help, completion, versions, its refusals) is declined.
    @Test(arguments: [
        ["counters"], ["counters", "u1", "u2"], ["counters", "--help"], ["counters", "u1", "-h"], ["--version"],
        ["help", "counters"], ["counters", "u1", "--format", "xml"], ["counters", "u1", "--format"],
        ["counters", "u1", "--json", "--json"], ["counters", "u1", "-qv"], ["counters", "--", "u1"],
        ["--format", "tsv", "counters", "u1"], ["counters", "u1", "--store", "--json"], ["counters", "u1", "--store="],
        ["counters", "u1", "--json=yes"], ["track", "u1", "a", "--count", "0"], ["track", "u1", "a", "--count", "x"],
        ["track", "u1", "a", "--prop", "a=1", "--prop", "b=2"], ["track", "--from", "log.ndjson"],
        ["track", "u1", "a", "--prop", "=1"], ["meter", "use", "u1", "m"], ["meter", "use", "u1", "m", "-3"],
        ["meter", "check", "u1", "m", "1", "2"], ["meter", "use", "u1", "m", "1", "--overage", "sometimes"],
        ["prompt", "next", "u1", "--trigger", "-x"], ["record", "get", "u1", "notes"],
        ["counters", "u1", "--generate-completion-script", "bash"], ["meter", "grants", "u1"], ["cnt", "u1"],
        ["record", "put", "u1", "notes", "n1"], ["record", "put", "u1", "notes", "n1", "--data", "{}", "--file", "f"],
        ["record", "put", "--from", "records.ndjson"], ["guest", "new", "--username", "legacy"],
        ["guest", "new", "u1"], ["link", "u1", "--provider", "apple"], ["link", "u1", "--subject", "s"],
        ["user", "show"], ["meter", "status", "u1", "m", "x"], ["unlink", "u1"],
        ["prompt", "record", "u1", "first_export", "sometimes"], ["prompt", "record", "--from", "outcomes.ndjson"],
        ["record", "delete", "u1", "notes"], ["record", "put", "u1", "notes", "n1", "--file", "-"],
    ])
    func anythingElseIsArgumentParsers(_ arguments: [String]) {
        #expect(Self.quick(arguments) == nil, "\(arguments)")
    }

    /// Lines made at random from each quick command's words, options and awkward values: every line the quick
    /// parse takes, ArgumentParser makes the same command of, and it takes enough of them to mean it.
    @Test func generatedLinesAgreeWithArgumentParser() {
        var generator = SplitMix(seed: 0x5eed_9a11)
        let operands = [
            "u1", "m", "12.5", "0", "-1", "help", "counters", "x=y", "=y", "-", "--", "notes", "", "é", "shown",
            "never",
        ]
        let globals = [
            ["--store", "s.sqlite"], ["--store=a.sqlite"], ["--schema", "app"], ["--now", "+1d"], ["--now", "-1h"],
            ["--now=2026-01-01T00:00:00Z"], ["--json"], ["--quiet"], ["-q"], ["-v"], ["--verbose"], ["-qv"],
            ["--json=1"], ["--store"], ["--help"], ["-h"],
        ]
        let values = [
            "table", "tsv", "json", "bogus", "allow", "refuse", "5", "-5", "0", "abc", "a=b", "=b", "--json", "{}", "-",
            "",
        ]
        var taken = 0
        var lines = 0
        for command in GuestmodeCommand.quickCommands {
            let options =
                command.options.keys.sorted() + [
                    "--format", "--id", "--from", "--count", "--data", "--on-conflict", "--subject", "--provider",
                ]
            for _ in 0..<320 {
                let path: [String] = generator.next(100) < 95 ? command.path : command.path.reversed()
                var pieces: [[String]] = []
                for _ in 0..<max(0, command.operands.lowerBound + generator.next(3) - 1) {
                    pieces.append([
                        generator.next(100) < 70 ? "u\(generator.next(9))" : operands.randomElement(using: &generator)!
                    ])
                }
                for _ in 0..<generator.next(4) {
                    if generator.next(2) == 0 {
                        pieces.append(globals.randomElement(using: &generator)!)
                    } else {
                        let name = options.randomElement(using: &generator)!
                        let value = values.randomElement(using: &generator)!
                        switch generator.next(3) {
                        case 0: pieces.append([name])
                        case 1: pieces.append([name, value])
                        default: pieces.append([name + "=" + value])
                        }
                    }
                }
                // Options go anywhere: before the command's names, between them, among the operands.
                let split = generator.next(path.count + 1)
                var before: [[String]] = []
                var after: [[String]] = []
                for piece in pieces {
                    if piece.first?.hasPrefix("-") == true && piece.first != "-" && generator.next(4) == 0 {
                        before.append(piece)
                    } else {
                        after.append(piece)
                    }
                }
                let line =
                    Array(path.prefix(split)) + before.flatMap { $0 } + Array(path.dropFirst(split))
                    + after.flatMap { $0 }
                lines += 1
                if Self.expectSameCommand(line) { taken += 1 }
            }
        }
        // Enough taken that the agreement is tested, enough declined that the awkward lines were made.
        #expect(taken > lines / 10, "\(taken) of \(lines)")
        #expect(taken < lines * 9 / 10, "\(taken) of \(lines)")
    }
}

/// A fixed-seed generator, so a failing line is the same line on every run.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xbf58_476d_1ce4_e5b9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94d0_49bb_1331_11eb
        return mixed ^ (mixed >> 31)
    }

    mutating func next(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
