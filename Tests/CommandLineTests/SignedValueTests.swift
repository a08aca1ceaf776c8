import ArgumentParser
import Testing

@testable import guestmode

/// Values that begin with a minus sign stay values: a negative
/// amount reaches the command, which says what it expects, and `--now -1h`
/// is a relative time.
@Suite struct SignedValueTests {
    @Test func aNegativePositionalMovesBehindADoubleDash() {
        #expect(
            reorderGlobalOptions(["meter", "use", "u", "api_minutes", "-5"])
                == ["meter", "use", "u", "api_minutes", "--", "-5"])
        #expect(
            reorderGlobalOptions(["meter", "use", "u", "api_minutes", "-5", "--id", "k"])
                == ["meter", "use", "u", "api_minutes", "--id", "k", "--", "-5"])
        #expect(
            reorderGlobalOptions(["--json", "meter", "use", "u", "api_minutes", "-0.5"])
                == ["meter", "use", "u", "api_minutes", "--json", "--", "-0.5"])
    }

    @Test func aSignedValueOfAnOptionIsJoinedToIt() {
        #expect(reorderGlobalOptions(["--now", "-1h", "user", "list"]) == ["user", "list", "--now=-1h"])
        #expect(reorderGlobalOptions(["user", "list", "--now", "-P1D"]) == ["user", "list", "--now=-P1D"])
        #expect(
            reorderGlobalOptions(["user", "events", "u", "--since", "-7d", "--limit", "5"])
                == ["user", "events", "u", "--since=-7d", "--limit", "5"])
        #expect(reorderGlobalOptions(["track", "u", "a", "--count", "-3"]) == ["track", "u", "a", "--count=-3"])
    }

    @Test func argumentsAfterADoubleDashAndPlainArgumentsAreLeftAlone() {
        let plain = ["record", "put", "u", "c", "k", "--data", "{}"]
        #expect(reorderGlobalOptions(plain) == plain)
        #expect(
            reorderGlobalOptions(["record", "put", "u", "c", "--", "-k"]) == ["record", "put", "u", "c", "--", "-k"])
        #expect(
            reorderGlobalOptions(["meter", "use", "u", "-5", "--", "x"]) == ["meter", "use", "u", "--", "-5", "x"])
        #expect(reorderGlobalOptions(["backup", "export", "u", "-o", "-"]) == ["backup", "export", "u", "-o", "-"])
    }

    @Test func theCommandsParse() throws {
        #expect(
            try Guestmode.parseAsRoot(reorderGlobalOptions(["meter", "use", "u", "api_minutes", "-5"]))
                is MeterCommand.Use)
        let list = try Guestmode.parseAsRoot(reorderGlobalOptions(["user", "list", "--now", "-1h"]))
        #expect((list as? UserCommand.List)?.global.now == "-1h")
    }
}
