import Foundation
import Testing

@testable import GuestModeKit

/// The archive import's fast path for record data (`CanonicalScan`) must
/// accept only text that the full strict parse accepts and that re-encoding
/// leaves byte for byte as it is; anything else goes the slow way.
@Suite struct CanonicalScanTests {
    static let pieces: [String] = [
        "a", "b", "c", "x", "ab", "a", "b", "Z", "/", "_", "1", "10", "9", "\"", "\\", " ", "é", "☃", "\t", "\n",
        "\u{1}", "0", "-", "{", "[", "é",
    ]

    static func randomString(_ random: inout SplitMix64) -> String {
        (0..<Int(random.next() % 4)).map { _ in pieces.randomElement(using: &random)! }.joined()
    }

    static func randomNumber(_ random: inout SplitMix64) -> String {
        ["0", "-0", "7", "-12", "123456789012345", "1234567890123456", "1.5", "1.0", "1e3", "-0.25", "00"]
            .randomElement(using: &random)!
    }

    /// Random JSON text: sometimes canonical, sometimes with spaces, unsorted or repeated keys.
    static func randomText(_ random: inout SplitMix64, depth: Int = 0) -> String {
        let choice = depth > 3 ? random.next() % 4 : random.next() % 6
        switch choice {
        case 0: return ["true", "false", "null"].randomElement(using: &random)!
        case 1: return randomNumber(&random)
        case 2, 3:
            var out: [UInt8] = []
            JSONValue.writeString(randomString(&random), to: &out)
            return String(decoding: out, as: UTF8.self)
        case 4:
            let items = (0..<Int(random.next() % 3)).map { _ in randomText(&random, depth: depth + 1) }
            return "[" + items.joined(separator: random.next() % 5 == 0 ? ", " : ",") + "]"
        default:
            var keys = (0..<Int(random.next() % 4)).map { _ in randomString(&random) }
            if random.next() % 3 != 0 { keys.sort() }
            let members = keys.map { key -> String in
                var name: [UInt8] = []
                JSONValue.writeString(key, to: &name)
                return String(decoding: name, as: UTF8.self) + ":" + randomText(&random, depth: depth + 1)
            }
            return "{" + members.joined(separator: ",") + "}"
        }
    }

    @Test("whatever the fast path accepts is strict JSON that re-encodes to itself")
    func fastPathIsSound() throws {
        var random = SplitMix64(state: 18)
        var accepted = 0
        for _ in 0..<20_000 {
            var text = Self.randomText(&random, depth: 1)
            if !text.hasPrefix("{") { text = "{\"v\":" + text + "}" }
            guard CanonicalScan.isCanonicalObject(text) else { continue }
            accepted += 1
            let parsed = try StrictJSON.parse(text)
            #expect(parsed.canonicalText == text, "\(text)")
        }
        #expect(accepted > 1_000)
    }

    @Test("examples")
    func examples() {
        for text in [#"{}"#, #"{"a":1,"b":[true,null,-3],"c":{"d":"x\"y\\z/"}}"#, #"{"a":0}"#] {
            #expect(CanonicalScan.isCanonicalObject(text), "\(text)")
        }
        for text in [
            #"{"a":1,"a":2}"#, #"{"b":1,"a":2}"#, #"{ "a":1}"#, #"{"a":1.0}"#, #"{"a":-0}"#, #"{"a":01}"#,
            #"{"a":"\u0041"}"#, #"{"a":"é"}"#, #"{"a\"":1}"#, #"{"b":1,"Z":2}"#, #"{"a_b":1}"#, #"{"a1":1}"#, #"[1]"#,
            #"{"a":1}x"#, #"{"a":1"#,
            #"{"a":1234567890123456}"#,
            "{\"a\":" + String(repeating: "[", count: 70) + String(repeating: "]", count: 70) + "}",
        ] {
            #expect(!CanonicalScan.isCanonicalObject(text), "\(text)")
        }
    }
}
