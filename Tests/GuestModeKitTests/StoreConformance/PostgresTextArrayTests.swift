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

    /// An import's text cells go into its COPY text as byte-by-byte escaping
    /// would write them, though most are found to need none eight bytes at a
    /// time: every byte COPY escapes, at every place in texts of up to 40
    /// bytes, and 3,000 seeded texts of every kind of byte.
    @Test func copyTextIsEscapedAsByteByByte() {
        func reference(_ bytes: [UInt8]) -> [UInt8] {
            bytes.flatMap { byte -> [UInt8] in
                switch byte {
                case UInt8(ascii: "\\"): [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case UInt8(ascii: "\t"): [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                case UInt8(ascii: "\n"): [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case UInt8(ascii: "\r"): [UInt8(ascii: "\\"), UInt8(ascii: "r")]
                default: [byte]
                }
            }
        }
        func written(_ bytes: [UInt8]) -> [UInt8] {
            var buffer: [UInt8] = [UInt8(ascii: "x")]
            PostgresConnection.appendCopyText(String(decoding: bytes, as: UTF8.self), to: &buffer)
            return Array(buffer.dropFirst())
        }
        var texts: [[UInt8]] = []
        for length in 0...40 {
            let plain = Array(repeating: UInt8(ascii: "a"), count: length)
            texts.append(plain)
            for place in 0..<length {
                for special: UInt8 in [0x5C, 0x09, 0x0A, 0x0D, 0x01, 0x1F, 0x20, 0x5B, 0x5D, 0x7F] {
                    var text = plain
                    text[place] = special
                    texts.append(text)
                }
            }
        }
        var seed: UInt64 = 0x2545_F491_4F6C_DD1D
        let alphabet = Array("ab\\\t\n\r \u{1}é日🙂\\N".utf8)
        for _ in 0..<3_000 {
            var text: [UInt8] = []
            seed = seed &* 6_364_136_223_846_793_005 &+ 1
            for _ in 0..<Int(seed >> 58) {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1
                text.append(alphabet[Int(seed >> 33) % alphabet.count])
            }
            texts.append(Array(String(decoding: text, as: UTF8.self).utf8))
        }
        for text in texts {
            #expect(written(text) == reference(text), "\(text)")
        }
        var null: [UInt8] = []
        PostgresConnection.appendCopyText(nil, to: &null)
        #expect(null == Array("\\N".utf8))
    }
}
