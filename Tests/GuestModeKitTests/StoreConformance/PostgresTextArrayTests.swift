import Testing

@testable import GuestModeKit
@testable import GuestModePostgres

/// A list sent as one `text[]` parameter reaches the server element for element, whatever the texts hold: the
/// array literal's quoting and escaping are built by hand.
@Suite("PostgreSQL text[] parameters")
struct PostgresTextArrayTests {
    @Test func everyElementArrivesAsSent() throws {
        let (store, _) = try StoreBackend.postgres.makeStore(profile: "subscriptions")
        let postgres = try #require(store as? PostgresStore)
        let values = [
            "plain", "", "with space", "quote\"inside", "back\\slash", "\\\"", "\"", "\\", "a,b", "{braces}",
            "NULL", "null", "tab\there", "new\nline", "élève", "日本", "🙂", "trailing\\",
        ]
        let received = try postgres.read { connection in
            try connection.execute(
                "SELECT value FROM unnest($1::text[]) WITH ORDINALITY AS sent (value, position) ORDER BY position",
                [PostgresValue.textArray(values)]
            ).map { try $0.string("value") }
        }
        #expect(received.map { Array($0.utf8) } == values.map { Array($0.utf8) })
        let none = try postgres.read { connection in
            try connection.execute("SELECT cardinality($1::text[]) AS n", [PostgresValue.textArray([])])
                .map { try $0.string("n") }
        }
        #expect(none == ["0"])
    }

    /// An import writes integer cells into its COPY text digit by digit, not through a string.
    @Test func copyIntegersAreWrittenAsTheirDigits() {
        var values: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, 1_000_000, 123_456_789, .max, .min, .max - 1, .min + 1]
        var power: Int64 = 1
        while power <= Int64.max / 10 {
            power *= 10
            values += [power, power - 1, -power, -(power - 1)]
        }
        for value in values {
            var buffer: [UInt8] = []
            PostgresConnection.appendCopyInteger(value, to: &buffer)
            #expect(String(decoding: buffer, as: UTF8.self) == String(value))
        }
    }
}
