import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

@Suite("Meter amounts")
struct MeterAmountTests {
    @Test func sumsAreExact() throws {
        let uses: [MeterAmount] = [12.2, 19.9, 12.9] + Array(repeating: 1, count: 15)
        let total = try #require(MeterAmount.sum(uses))
        #expect(total == 60)
        #expect(total.description == "60")
        #expect(MeterAmount(60).remaining(after: total) == .zero)
        #expect(MeterAmount.sum([MeterAmount.largest, 0.000001]) == nil, "overflow is reported, not wrapped")
        #expect(MeterAmount.largest.adding(.largest) == nil)
    }

    @Test(
        arguments: [
            ("12.2", 12_200_000), ("15", 15_000_000), ("0.5", 500_000), ("007", 7_000_000), ("0.000001", 1),
            ("999999999.999999", 999_999_999_999_999), ("1.10", 1_100_000),
        ] as [(String, Int64)])
    func plainDecimalsParse(text: String, millionths: Int64) throws {
        #expect(try MeterAmount(parsing: text) == MeterAmount(millionths: millionths))
    }

    @Test(arguments: [
        "1e308", "0x10", "nan", "inf", "-inf", "infinity", "0", "0.0", "-5", "+5", "", " 5", "5 ", ".5", "5.", "1.2.3",
        "1,5", "0.0000001", "1000000000", "99999999999999999999999", "١٢", "5e0",
    ])
    func everythingElseIsRefused(text: String) {
        #expect(throws: MeterAmount.ParseFailure.self) { try MeterAmount(parsing: text) }
    }

    @Test func refusalsSayWhy() {
        func message(_ text: String) -> String {
            do {
                _ = try MeterAmount(parsing: text)
                return ""
            } catch {
                return error.description
            }
        }
        #expect(message("1e308").contains("plain decimal"))
        #expect(message("0").contains("greater than zero"))
        #expect(message("0.1234567").contains("more than 6 digits"))
        #expect(message("1000000000").contains("too large"))
        #expect(throws: GuestModeError.self) { try MeterAmount.parse("nan") }
        #expect((try? MeterAmount.parse("nan")) == nil)
        do {
            _ = try MeterAmount.parse("-5")
        } catch let error as GuestModeError {
            #expect(error.kind == .usage)
            #expect(error.code == .invalidAmount)
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func descriptionsArePlainDecimals() {
        #expect(MeterAmount.zero.description == "0")
        #expect(MeterAmount(millionths: 12_200_000).description == "12.2")
        #expect(MeterAmount(millionths: 1).description == "0.000001")
        #expect(MeterAmount(millionths: 44_999_999).description == "44.999999")
        #expect(MeterAmount(millionths: -1_500_000).description == "-1.5")
        #expect(MeterAmount.largest.description == "9223372036854.775807")
    }

    @Test func doublesFromDecimalsConvertBackExactly() {
        #expect(MeterAmount(approximating: 12.2) == MeterAmount(millionths: 12_200_000))
        #expect(MeterAmount(approximating: 0.1 + 0.2) == MeterAmount(millionths: 300_000))
        #expect(MeterAmount(approximating: 999_999_999.999999) == .largestRequest)
        #expect(MeterAmount(approximating: -1) == .zero)
        #expect(MeterAmount(approximating: .nan) == .zero)
        #expect(MeterAmount(approximating: .infinity) == .largest)
        #expect(MeterAmount(approximating: 1e308) == .largest)
        #expect(MeterAmount(approximating: MeterAmount.largestRequest.doubleValue) == .largestRequest)
    }

    @Test func jsonShowsPlainNumbersAndReadsThemBack() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let amounts: [MeterAmount] = [60, 0, 12.2, MeterAmount(millionths: 44_999_999)]
        let json = String(decoding: try encoder.encode(amounts), as: UTF8.self)
        #expect(json == "[60,0,12.2,44.999999]")
        #expect(try JSONDecoder().decode([MeterAmount].self, from: Data(json.utf8)) == amounts)
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode([MeterAmount].self, from: Data("[0.0000001]".utf8))
        }
    }
}
