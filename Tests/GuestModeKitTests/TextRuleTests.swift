import Foundation
import Testing

@testable import GuestModeKit
@testable import GuestModeSQLite

/// Text is valid UTF-8, never repaired, and holds no
/// U+0000, at every use case that stores it.
@Suite struct TextRuleTests {
    @Test("validatedUTF8 accepts exactly what String(validating:) accepts, repaired bytes never")
    func validatedUTF8AgreesWithTheStandardLibrary() {
        func both(_ bytes: [UInt8]) -> (String?, String?) {
            (bytes.withUnsafeBufferPointer { TextRule.validatedUTF8($0) }, String(validating: bytes, as: UTF8.self))
        }
        let cases: [[UInt8]] = [
            [], Array("plain".utf8), Array("crêpe 🥞".utf8), Array("\u{FFFD}".utf8), [0x61, 0x00, 0x62],
            // A truncated four-byte sequence is repaired into one U+FFFD of the same length: still refused.
            [0xF0, 0x9F, 0x98], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xFF], [0x61, 0xE2, 0x82], [0xF4, 0x90, 0x80, 0x80],
        ]
        for bytes in cases {
            let (ours, library) = both(bytes)
            #expect(ours == library, "\(bytes)")
        }
        var generator = SystemRandomNumberGenerator()
        let alphabet: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC2, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xFF, 0x9F, 0xA0]
        for _ in 0..<20_000 {
            let bytes = (0..<Int.random(in: 0...6, using: &generator)).map { _ in
                alphabet.randomElement(using: &generator)!
            }
            let (ours, library) = both(bytes)
            #expect(ours == library, "\(bytes)")
        }
    }

    @Test func decodeRefusesInvalidUTF8AndNulAndKeepsTheRest() throws {
        #expect(try TextRule.decode(Array("crêpe 🥞".utf8), what: "x") == "crêpe 🥞")
        #expect(textCode { _ = try TextRule.decode([0x6B, 0xFF, 0x78], what: "the key") } == .invalidUtf8)
        // An overlong encoding of '/' and a lone surrogate are invalid too, not repaired.
        #expect(textCode { _ = try TextRule.decode([0xC0, 0xAF], what: "the key") } == .invalidUtf8)
        #expect(textCode { _ = try TextRule.decode([0xED, 0xA0, 0x80], what: "the key") } == .invalidUtf8)
        #expect(textCode { _ = try TextRule.decode([0x6B, 0x00, 0x78], what: "the key") } == .nulInText)
        do {
            _ = try TextRule.decode([0x61, 0x62, 0xFF], what: "the record key")
        } catch let error as GuestModeError {
            #expect(error.message.contains("the record key is not valid UTF-8 (first bad byte at offset 2)"))
        }
    }

    @Test func jsonValuesAreCheckedInsideStringsAndMemberNames() throws {
        #expect(
            textCode { try TextRule.check(try StrictJSON.parse(#"{"a":["x","y\u0000"]}"#), what: "d") } == .nulInText)
        #expect(textCode { try TextRule.check(try StrictJSON.parse(#"{"a\u0000b":1}"#), what: "d") } == .nulInText)
        try TextRule.check(try StrictJSON.parse(#"{"a":["x\u0001",{"b":null}],"c":1}"#), what: "d")
    }

    @Test func eventLogLinesAreNeverRepaired() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("textrule-\(UUID().uuidString).ndjson")
        defer { try? FileManager.default.removeItem(at: url) }
        try Data([0x61, 0x0A, 0x62, 0xFF, 0x0A, 0x63, 0x00, 0x0A, 0x64]).write(to: url)
        var lines: [String] = []
        var invalid: [(Int, GuestModeError.Code)] = []
        try EventLog.forEachLine(in: url, invalidText: { invalid.append(($0, $1.code)) }) { _, line in
            lines.append(String(line))
        }
        #expect(lines == ["a", "d"])
        #expect(invalid.map(\.0) == [2, 3])
        #expect(invalid.map(\.1) == [.invalidUtf8, .nulInText])
        // Without a handler the first such line ends the read, naming it.
        #expect(throws: GuestModeError.self) { try EventLog.forEachLine(in: url) { _, _ in } }
    }

    @Test func everyUseCaseRefusesNulAndWritesNothing() throws {
        let engine = try engine("recipes")
        let guest = try engine.createGuest(device: nil, now: day(1)).id
        #expect(
            textCode {
                _ = try engine.putRecord(user: guest, collection: "recipes", key: "k\u{0}evil", json: "{}", now: day(1))
            } == .nulInText)
        #expect(
            textCode {
                _ = try engine.putRecord(
                    user: guest, collection: "recipes", key: "k", json: #"{"a":"x\u0000y"}"#, now: day(1))
            } == .nulInText)
        #expect(
            textCode {
                _ = try engine.putRecord(
                    user: guest, collection: "recipes", key: "k", jsonBytes: Data([0x7B, 0xFF, 0x7D]), now: day(1))
            } == .invalidUtf8)
        #expect(
            textCode {
                _ = try engine.putOwnerlessRecord(collection: "recipes", key: "a\u{0}", json: "{}", now: day(1))
            }
                == .nulInText)
        #expect(try engine.records(user: guest, collection: "recipes").isEmpty)
        #expect(
            textCode {
                _ = try engine.track(
                    TrackedEvent(user: guest + "\u{0}x", action: "app_opened", at: day(1)), now: day(1))
            }
                == .nulInText)
        #expect(
            textCode {
                _ = try engine.track(
                    TrackedEvent(user: guest, action: "app_opened", at: day(1), properties: ["p": "a\u{0}"]),
                    now: day(1))
            } == .nulInText)
        #expect(try engine.counters(user: guest).isEmpty)
        #expect(
            textCode {
                _ = try engine.link(user: guest, provider: "google", subject: "s\u{0}other", email: nil, now: day(1))
            } == .nulInText)
        #expect(try engine.user(guest).state == .anonymous)
        // A lookup never reaches the user whose id the C string would be cut to.
        #expect(textCode { _ = try engine.user(guest + "\u{0}x") } == .nulInText)
        #expect(textCode { _ = try engine.counters(user: guest + "\u{0}x") } == .nulInText)
        #expect(textCode { _ = try engine.records(user: guest + "\u{0}", collection: "recipes") } == .nulInText)
    }

    @Test func aCountPastTheEventBoundIsRefusedByTheEngine() throws {
        let engine = try engine("recipes")
        let guest = try engine.createGuest(device: nil, now: day(1)).id
        let tooMany = TrackedEvent(
            user: guest, action: "app_opened", at: day(1), count: Int(Bounds.maximumEventCount) + 1)
        #expect(textCode { _ = try engine.track(tooMany, now: day(1)) } == .invalidEvent)
        #expect(try engine.counters(user: guest).isEmpty)
    }

    @Test func counterAdditionIsChecked() throws {
        #expect(try Bounds.addingToCounter(1, 2, action: "a", user: "u") == 3)
        #expect(try Bounds.addingToCounter(Int64.max - 1, 1, action: "a", user: "u") == Int64.max)
        #expect(textCode { _ = try Bounds.addingToCounter(Int64.max, 1, action: "a", user: "u") } == .countOverflow)
        #expect(textCode { _ = try Bounds.addingToCounter(-1, 1, action: "a", user: "u") } == .corruptStore)
    }

    private func textCode(_ body: () throws -> Void) -> GuestModeError.Code? {
        do {
            try body()
            return nil
        } catch {
            return (error as? GuestModeError)?.code
        }
    }
}
