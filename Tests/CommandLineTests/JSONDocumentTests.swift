import Foundation
import GuestModeCommandLine
import GuestModeKit
import Testing

@testable import guestmode

/// The documents `--json` prints: names from the conventions or declared by
/// the type (`JSONNamed`), numbers as written, one writer for every layout.
@Suite struct JSONDocumentTests {
    static let time = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aTypeDeclaresTheNamesTheConventionsWouldGetWrong() throws {
        let event = LoggedEvent(
            id: 7, userID: "u", action: "app_opened", at: Self.time, count: 1, idempotencyKey: nil,
            properties: ["r": .number("1.50"), "big": .number("12345678901234567890"), "Mixed_Case": "x"])
        let text = try JSONDocument.encode(event, pretty: false)
        #expect(
            text
                == #"{"action":"app_opened","at":"2027-01-15T08:00:00.000Z","count":1,"event_id":7,"idempotency_key":null,"properties":{"Mixed_Case":"x","big":12345678901234567890,"r":1.50},"user_id":"u"}"#
        )
        let record = StoredRecord(
            owner: "u", collection: "c", key: "k", data: "{}", createdAt: Self.time, updatedAt: Self.time)
        let recordText = try JSONDocument.encode([record], pretty: false)
        #expect(recordText.contains(#""user_id":"u""#) && !recordText.contains("owner"))
    }

    @Test func aRecordsDataIsTheObjectItHoldsWithItsDigits() throws {
        let record = StoredRecord(
            owner: "u", collection: "c", key: "k", data: #"{"r":1.50,"big":12345678901234567890,"n":[null,"x"]}"#,
            createdAt: Self.time, updatedAt: Self.time)
        let text = try JSONDocument.encode(record, pretty: false)
        #expect(text.contains(#""data":{"big":12345678901234567890,"n":[null,"x"],"r":1.50}"#), "\(text)")
        // Foundation reads the object back (its numbers through Decimal); a string holding JSON is not a
        // record's data.
        let decoded = try JSONDecoder().decode(RecordJSON.self, from: Data(#"{"n":[null,"x"],"r":1.50}"#.utf8))
        #expect(decoded.wrappedValue == #"{"n":[null,"x"],"r":1.5}"#)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(RecordJSON.self, from: Data(#""{}""#.utf8)) }
        // A stored text that is not JSON fails the document instead of going out as a string.
        var broken = record
        broken.data = "{"
        #expect(throws: EncodingError.self) { try JSONDocument.encode(broken, pretty: false) }
    }

    @Test func theNamesOfOneTypeStayWithIt() throws {
        struct Wrapper: Encodable {
            var id = 1
            var isDone = true
            var event: LoggedEvent
        }
        let event = LoggedEvent(
            id: 2, userID: "u", action: "a", at: Self.time, count: 1, idempotencyKey: nil, properties: [:])
        let text = try JSONDocument.encode(Wrapper(event: event), pretty: false)
        #expect(text.hasPrefix(#"{"done":true,"event":{"#))
        #expect(text.contains(#""event_id":2"#) && text.hasSuffix(#","id":1}"#))
    }

    @Test func aDictionarysKeysAreDataAndKeepTheirSpelling() throws {
        struct Counts: Encodable {
            var perAction: [String: Int]
            var isOn = true
        }
        let text = try JSONDocument.encode(
            Counts(perAction: ["habitCreated": 1, "isOn": 2, "URLOpened": 3]), pretty: false)
        #expect(text == #"{"on":true,"per_action":{"URLOpened":3,"habitCreated":1,"isOn":2}}"#, "\(text)")
    }

    /// What a type is (a dictionary, a type with names of its own) is found once and kept: an optional of it
    /// met first as nil, then with a value, or the other way round, is written as each value alone would be.
    @Test func whatATypeIsDoesNotDependOnTheFirstValueMet() throws {
        let event = LoggedEvent(
            id: 2, userID: "u", action: "a", at: Self.time, count: 1, idempotencyKey: nil, properties: [:])
        let counts: [[String: Int]?] = [nil, ["b": 2, "a": 1]]
        #expect(try JSONDocument.encode(counts, pretty: false) == #"[null,{"a":1,"b":2}]"#)
        let amounts: [[String: Double]?] = [["x": 1.5], nil]
        #expect(try JSONDocument.encode(amounts, pretty: false) == #"[{"x":1.5},null]"#)
        let events: [LoggedEvent?] = [nil, event, nil]
        let text = try JSONDocument.encode(events, pretty: false)
        #expect(text.hasPrefix(#"[null,{"action":"a","#) && text.hasSuffix(#""user_id":"u"},null]"#), "\(text)")
        #expect(text.contains(#""event_id":2"#))
    }

    /// A value's encoder and containers say where it is, as the keys of the values holding it (an array's
    /// elements, a dictionary's values at the path of the array or dictionary).
    @Test func aValueIsToldWhereItIs() throws {
        final class Seen: @unchecked Sendable { var paths: [String] = [] }
        struct Probe: Encodable {
            let seen: Seen
            func encode(to encoder: any Encoder) throws {
                seen.paths.append(encoder.codingPath.map(\.stringValue).joined(separator: "."))
                var container = encoder.singleValueContainer()
                seen.paths.append(container.codingPath.map(\.stringValue).joined(separator: "."))
                try container.encode("p")
            }
        }
        struct Inner: Encodable {
            var probe: Probe
            var list: [Probe]
        }
        struct Outer: Encodable {
            var inner: Inner
            var maybe: Probe?
            var byName: [String: Probe]
        }
        let seen = Seen()
        let probe = Probe(seen: seen)
        let text = try JSONDocument.encode(
            Outer(inner: Inner(probe: probe, list: [probe]), maybe: probe, byName: ["k": probe]), pretty: false)
        #expect(text == #"{"by_name":{"k":"p"},"inner":{"list":["p"],"probe":"p"},"maybe":"p"}"#)
        #expect(
            seen.paths == [
                "inner.probe", "inner.probe", "inner.list", "inner.list", "maybe", "maybe", "byName", "byName",
            ])
    }

    @Test func numbersReadAsFoundationsSixPlacesWithoutTheTrailingZeros() {
        func foundations(_ value: Double) -> String {
            let rounded = (value * 1_000_000).rounded() / 1_000_000
            if rounded == rounded.rounded(), abs(rounded) < 1e15 { return String(Int64(rounded)) }
            var text = String(format: "%.6f", rounded)
            while text.hasSuffix("0") { text.removeLast() }
            if text.hasSuffix(".") { text.removeLast() }
            return text
        }
        var generator = SystemRandomNumberGenerator()
        var values: [Double] = [
            0.5, -0.5, 1.5, 0.000001, -0.000001, 0.0000004, 12.2, 3_999_999_999.999999, 4e9 + 0.25, 1e12 + 0.5,
        ]
        for scale in [1.0, 100, 1e6, 1e9, 4e9, 1e12] {
            values += (0..<2_000).map { _ in Double.random(in: -scale...scale, using: &generator) }
        }
        for value in values {
            guard case .number(let text) = JSONValue.number(value) else {
                Issue.record("\(value) is not a number")
                continue
            }
            #expect(text == foundations(value), "\(value)")
        }
        #expect(JSONValue.number(.nan) == .null && JSONValue.number(.infinity) == .null)
    }

    @Test func prettyAndCompactAreOneWriter() {
        let value = JSONValue.object([
            ("b", .array([.number("1.50"), .null, .object([])])), ("a", .string("x\n\u{1}")), ("c", .array([])),
        ])
        #expect(value.canonicalText == #"{"a":"x\n\u0001","b":[1.50,null,{}],"c":[]}"#)
        #expect(
            value.text(pretty: true) == """
                {
                  "a" : "x\\n\\u0001",
                  "b" : [
                    1.50,
                    null,
                    {}
                  ],
                  "c" : []
                }
                """)
        // Every escape, a control character past 9 (a letter among its hex digits) and text left as it is.
        #expect(
            JSONValue.string("\u{1F}\"\\\t\r\u{8}\u{C}\u{10}é/").canonicalText
                == #""\u001f\"\\\t\r\b\f\u0010é/""#)
    }

    /// A type's document is written from the encoder's nodes, not from `JSONValue`s: the same layout, the
    /// later of two values under one name, an object with no member as `{}` and nested arrays and objects.
    @Test func aTypesDocumentHasTheLayoutOfAValuesDocument() throws {
        struct Twice: Encodable {
            enum Name: String, CodingKey { case zeta, alpha, nothing, items }
            func encode(to encoder: any Encoder) throws {
                var container = encoder.container(keyedBy: Name.self)
                try container.encode("first", forKey: .zeta)
                try container.encode(1, forKey: .alpha)
                try container.encode("second", forKey: .zeta)
                _ = container.nestedContainer(keyedBy: Name.self, forKey: .nothing)
                var items = container.nestedUnkeyedContainer(forKey: .items)
                try items.encode([String: Int]())
                try items.encode([Int]())
                try items.encodeNil()
            }
        }
        struct Silent: Encodable {
            func encode(to encoder: any Encoder) throws {}
        }
        let value = JSONValue.object([
            ("zeta", .string("second")), ("alpha", .number("1")), ("nothing", .object([])),
            ("items", .array([.object([]), .array([]), .null])),
        ])
        #expect(try JSONDocument.encode(Twice(), pretty: false) == value.canonicalText)
        #expect(try JSONDocument.encode(Twice(), pretty: true) == value.text(pretty: true))
        #expect(try JSONDocument.encode(Silent(), pretty: false) == "{}")
        #expect(try JSONDocument.encode([Silent()], pretty: true) == "[\n  {}\n]")
    }

    /// Strings are escaped as one byte at a time would: quotes, backslashes and control characters
    /// wherever they fall among the eight bytes looked at together, beside text beyond ASCII.
    @Test func everyStringIsEscapedAsByteByByte() {
        func reference(_ text: String) -> String {
            var escaped = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": escaped += "\\\""
                case "\\": escaped += "\\\\"
                case "\n": escaped += "\\n"
                case "\r": escaped += "\\r"
                case "\t": escaped += "\\t"
                case "\u{8}": escaped += "\\b"
                case "\u{C}": escaped += "\\f"
                case _ where scalar.value < 0x20:
                    let hex = String(scalar.value, radix: 16)
                    escaped += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: escaped.unicodeScalars.append(scalar)
                }
            }
            return escaped + "\""
        }
        let alphabet: [Unicode.Scalar] = [
            "a", "Z", " ", "~", "\"", "\\", "\u{0}", "\u{1}", "\u{1F}", "\n", "\t", "\u{7F}", "é", "€", "😀",
            "\u{20}", "!", "#", "[", "]",
        ]
        var generator = SplitMix(seed: 0x0e5c_a9e5)
        for _ in 0..<3000 {
            var text = String.UnicodeScalarView()
            // Mostly plain runs, so that the bytes needing an escape fall at every place of a word.
            let plainOnly = Int.random(in: 0..<3, using: &generator) == 0
            for _ in 0..<Int.random(in: 0..<40, using: &generator) {
                text.append(plainOnly ? "q" : alphabet[Int.random(in: 0..<alphabet.count, using: &generator)])
            }
            let string = String(text)
            #expect(JSONValue.string(string).canonicalText == reference(string), "\(Array(string.utf8))")
        }
    }

    /// The engine's amounts and plain enums are written without an encoder of their own: as their own
    /// `encode(to:)` writes them, alone and as members.
    @Test func anAmountOrAnEnumIsWrittenAsItsOwnEncodableWritesIt() throws {
        struct Opaque<Value: Encodable>: Encodable {
            let value: Value
            func encode(to encoder: any Encoder) throws { try value.encode(to: encoder) }
        }
        struct Member<Value: Encodable>: Encodable { let value: Value }
        func check<Value: Encodable>(_ values: [Value]) throws {
            for value in values {
                #expect(try JSONDocument.encode(value) == JSONDocument.encode(Opaque(value: value)))
                #expect(
                    try JSONDocument.encode(Member(value: value), pretty: false)
                        == JSONDocument.encode(Member(value: Opaque(value: value)), pretty: false))
            }
        }
        let amounts: [Int64] = [
            0, 1, 10, 15, 100_000, 999_999, 1_000_000, 1_000_001, 1_500_000, 12_200_000, 60_000_000,
            999_999_999_999_999,
            .max, -1, -1_500_000, -60_000_000, .min + 1, .min,
        ]
        // Spread over ±10,000 units with every number of fraction digits, the same every run.
        let sampled = (1...200).map { Int64($0) * 382_272_577 % 20_000_000_001 - 10_000_000_000 }
        try check((amounts + sampled).map(MeterAmount.init(millionths:)))
        try check(TierLevel.allCases)
        try check(MeterLevel.allCases)
        try check(MeterGrantState.allCases)
        try check([PlanState.active, .trial, .expired, .revoked])
        try check(CapOutcome.allCases)
        try check(UserState.allCases)
        try check(PromptPriority.allCases)
        try check(PromptKind.allCases)
        try check(PromptVerdict.allCases)
        try check(PromptOutcome.allCases)
        try check(PromptState.allCases)
    }
}
