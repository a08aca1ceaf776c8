import GuestModeCommandLine
import Testing

@Suite struct FormattingTests {
    @Test func paddingFillsCutsAndCountsCharactersNotBytes() {
        #expect(padded("users", to: 8) == "users   ")
        #expect(padded("counters", to: 8) == "counters")
        #expect(padded("meter_grant_draws", to: 8) == "meter_gr", "cut as Foundation's padding cuts")
        #expect(padded("", to: 2) == "  ")
        // Two characters of several bytes each still take two columns.
        #expect(padded("é🙂", to: 4) == "é🙂  ")
    }
}
