import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit

/// The flat row parser against the generic decoder it replaced
/// (`JSONDecoder` into `[String: CellValue]`): same rows for what the
/// encoder writes, and no row for anything that is not a flat object.
@Suite("Backup row decoder")
struct RowDecoderTests {
    private func generic(_ text: String) -> [String: CellValue]? {
        try? JSONDecoder().decode([String: CellValue].self, from: Data(text.utf8))
    }

    @Test(
        "rows the encoder writes read back as the generic decoder read them",
        arguments: [
            #"{}"#, #"{"a":null}"#, #"{"id":42,"user_id":"u1","at":"2026-11-22T09:30:00.000Z"}"#,
            #"{"n":-9223372036854775808,"m":9223372036854775807}"#, #"{"big":12345678901234567890}"#,
            #"{"r":1.5,"s":-0.25,"e":1e300,"f":2.5E-3}"#, #"{"two":2.0,"neg":-3.0}"#,
            #"{"t":"a\"b\\c\/d\n\r\t\b\f"}"#, #"{"u":"\u00e9\u4e2d\ud83d\ude00"}"#, #"{"raw":"é中😀"}"#,
            #" { "sp" : 1 , "x" : "y" } "#, #"{"zero":0,"negzero":-0}"#, #"{"nul":"\u0000"}"#,
        ])
    func sameAsGeneric(text: String) throws {
        let fast = RowDecoder.decode(Array(text.utf8))
        #expect(fast != nil, "\(text)")
        #expect(fast == generic(text).map(BackupRow.init), "\(text)")
    }

    @Test(
        "anything but a flat object of null, numbers and strings is refused",
        arguments: [
            "", "[]", "1", #""a""#, "{", #"{"a"}"#, #"{"a":}"#, #"{"a":1,}"#, #"{"a":true}"#, #"{"a":[1]}"#,
            #"{"a":{"b":1}}"#, #"{"a":01}"#, #"{"a":1.}"#, #"{"a":.5}"#, #"{"a":+1}"#, #"{"a":1e}"#, #"{"a":NaN}"#,
            #"{"a":"\x"}"#, #"{"a":"\ud800"}"#, #"{"a":"\udc00x"}"#, "{\"a\":\"tab\there\"}", #"{"a":1} x"#,
            #"{"a":1}{"b":2}"#, #"{a:1}"#, #"{"a":nul}"#, #"{"a":1e999}"#,
        ])
    func refused(text: String) {
        #expect(RowDecoder.decode(Array(text.utf8)) == nil, "\(text)")
    }

    /// The string scan reads eight bytes at a time and the integers are summed in place: a quote, backslash or
    /// control character at every place of texts around a word's length, and integers at the edges of 64 bits,
    /// read as the generic decoder reads them.
    @Test("every place of a text and the edges of an integer, as the generic decoder reads them")
    func wordEdgesAndIntegerEdges() {
        let specials = [#"\""#, #"\\"#, #"\n"#, #"\u0001"#, "é", "中", "😀", "\u{01}", "\u{1F}", "\u{7F}", "\t"]
        for length in 0..<20 {
            for place in 0...length {
                for special in specials {
                    let plain = String(repeating: "x", count: length)
                    let text = String(plain.prefix(place)) + special + String(plain.dropFirst(place))
                    let line = #"{"a":"\#(text)","b":1}"#
                    #expect(RowDecoder.decode(Array(line.utf8)) == generic(line).map(BackupRow.init), "\(line)")
                }
            }
        }
        for number in [
            "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
            "922337203685477580", "-922337203685477581", "99999999999999999999", "1", "-1", "10", "1000000007",
        ] {
            let line = #"{"n":\#(number)}"#
            #expect(RowDecoder.decode(Array(line.utf8)) == generic(line).map(BackupRow.init), "\(line)")
        }
    }

    @Test("invalid UTF-8 and a key given twice are refused")
    func invalidBytes() {
        #expect(RowDecoder.decode([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D]) == nil)
        #expect(RowDecoder.decode(Array(#"{"a":1,"a":2}"#.utf8)) == nil)
    }

    /// An archive's rows of one table list the same columns: the decoder
    /// gives each row the previous row's array, so rows compare their
    /// columns by reference (`BackupRow`), and checks the rest as before.
    @Test("a row listing the previous row's columns shares them; any other row is read as it stands")
    func template() throws {
        func base(_ columns: [String]) -> UnsafeRawPointer? {
            columns.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
        }
        let first = try #require(RowDecoder.decode(Array(#"{"id":"u1","n":1,"s":null}"#.utf8)))
        #expect(first.columns == ["id", "n", "s"])
        let same = try #require(RowDecoder.decode(Array(#"{"id":"u2","n":2,"s":"x"}"#.utf8), like: first.columns))
        #expect(base(same.columns) == base(first.columns))
        #expect(same == ["id": .text("u2"), "n": .integer(2), "s": .text("x")])

        let reordered = try #require(RowDecoder.decode(Array(#"{"id":"u3","s":null,"n":3}"#.utf8), like: first.columns))
        #expect(reordered.columns == ["id", "s", "n"])
        #expect(reordered["n"] == .integer(3))
        let shorter = try #require(RowDecoder.decode(Array(#"{"id":"u4","n":4}"#.utf8), like: first.columns))
        #expect(shorter.columns == ["id", "n"])
        let longer = try #require(
            RowDecoder.decode(Array(#"{"id":"u5","n":5,"s":null,"t":1}"#.utf8), like: first.columns))
        #expect(longer.columns == ["id", "n", "s", "t"])

        // Names are matched by their bytes only where JSON spells them as they are.
        let escaped = try #require(RowDecoder.decode(Array(#"{"a\b":1,"q\"":2}"#.utf8), like: ["a\\b", "q\""]))
        #expect(escaped.columns == ["a\u{08}", "q\""])
        let unicode = try #require(
            RowDecoder.decode(Array(#"{"\u0069d":"u8","n":8,"s":null}"#.utf8), like: first.columns))
        #expect(base(unicode.columns) == base(first.columns))

        // A repeat is refused whether it repeats a column matched against the template or one of its own.
        for text in [
            #"{"id":"u6","n":6,"id":"u7"}"#, #"{"id":"u6","x":1,"n":6,"x":2}"#, #"{"id":"u6","n":6,"s":1,"n":7}"#,
        ] {
            #expect(RowDecoder.decode(Array(text.utf8), like: first.columns) == nil, "\(text)")
        }
    }

    /// The previous row's columns only spare work: for any line, with any
    /// template, the decoder gives the row (its columns in the same order)
    /// or the refusal it gives without one. Lines are made from tokens a
    /// row is made of, so most are near misses: cut keys, escaped names,
    /// repeats, missing separators.
    @Test("a template never changes what a line decodes to")
    func templatesChangeNothing() {
        let tokens = [
            "{", "}", #""id""#, #""a""#, #""at""#, #""\u0069d""#, #""a\\b""#, #""a\b""#, #""q\"""#, ":", ",", "1",
            "-2.5", #""x""#, "null", " ", #"""#, #"\"#, #""i"#, "d", #""""#,
        ]
        let templates: [[String]] = [
            [], ["id"], ["id", "a"], ["a", "id"], ["id", "a", "at"], ["a\\b", "q\""], ["a\u{08}"], [""],
        ]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
        var lines = [#"{"id":1,"a":"x","at":null}"#, #"{"id":1,"a":"x"}"#, #"{"a":"x","id":1}"#, #"{"id":1,"id":2}"#]
        for _ in 0..<4000 {
            var line = "{"
            for _ in 0..<next(9) { line += tokens[next(tokens.count)] }
            if next(4) > 0 { line += "}" }
            lines.append(line)
        }
        // Well-formed rows of the template's own names, in and out of order, repeated or cut short.
        for _ in 0..<2000 {
            let names = [#""id""#, #""a""#, #""at""#, #""\u0069d""#]
            var line = "{"
            for index in 0..<(1 + next(4)) {
                if index > 0 { line += "," }
                line += names[next(names.count)] + ":" + ["1", #""x""#, "null"][next(3)]
            }
            lines.append(line + "}")
        }
        var accepted = 0
        for line in lines {
            let alone = RowDecoder.decode(Array(line.utf8))
            if alone != nil { accepted += 1 }
            for template in templates {
                let templated = RowDecoder.decode(Array(line.utf8), like: template)
                #expect(templated == alone && templated?.columns == alone?.columns, "\(line) like \(template)")
            }
        }
        #expect(accepted > 500, "the lines exercise accepted rows too")
    }

    @Test("a row of many columns is read, and a repeat among them refused")
    func manyColumns() {
        let columns = (0..<200).map { "column_\($0)" }
        let text = "{" + columns.map { "\"\($0)\":1" }.joined(separator: ",")
        #expect(RowDecoder.decode(Array((text + "}").utf8))?.count == 200)
        #expect(RowDecoder.decode(Array((text + #","column_7":2}"#).utf8)) == nil)
        #expect(RowDecoder.decode(Array((text + #","column_199":2}"#).utf8), like: columns) == nil)
    }

    @Test("rows are equal when their columns hold the same values, in any order")
    func rowEquality() {
        var row: BackupRow = ["a": .integer(1), "b": .text("x")]
        #expect(row == BackupRow(columns: ["b", "a"], values: [.text("x"), .integer(1)]))
        #expect(row != ["a": .integer(1), "b": .text("y")])
        #expect(row != ["a": .integer(1)])
        row["a"] = .null
        #expect(row.columns == ["a", "b"] && row["a"] == .null)
        row["a"] = nil
        row["c"] = .real(0.5)
        #expect(row.columns == ["b", "c"] && row.values == [.text("x"), .real(0.5)])
        #expect(BackupRow(["z": .null, "m": .integer(2), "a": .integer(1)]).columns == ["a", "m", "z"])
    }

    @Test("a column is found from any place the search starts, and a missing one from none")
    func indexFromAnyStart() {
        let row = BackupRow(
            columns: ["id", "user_id", "at", "action", "a", "b"],
            values: [.integer(1), .text("u"), .null, .text("x"), .integer(2), .integer(3)])
        for start in -1...8 {
            for (index, column) in row.columns.enumerated() {
                #expect(row.index(of: column, from: start) == index, "\(column) from \(start)")
            }
            for missing in ["", "i", "ids", "user", "user_id ", "c", "AT"] {
                #expect(row.index(of: missing, from: start) == nil, "\(missing) from \(start)")
            }
        }
        #expect(BackupRow().index(of: "id", from: 0) == nil)
    }

    @Test("what RowEncoder writes, read back")
    func roundTrip() throws {
        for text in ["plain", "quote \" backslash \\ newline \n control \u{01} tab \t", "é中😀", ""] {
            let buffer = RowBuffer(capacity: 8)
            buffer.append(Array("{\"k\":".utf8))
            var bytes = Array(text.utf8)
            bytes.withUnsafeBufferPointer { RowEncoder.appendString($0, to: buffer) }
            buffer.append(Array(",\"i\":".utf8))
            RowEncoder.appendNumber(Int64(-7), to: buffer)
            buffer.append(Array(",\"d\":".utf8))
            RowEncoder.appendNumber(0.1, to: buffer)
            buffer.append(Array("}".utf8))
            bytes = Array(buffer.bytes)
            let row = try #require(RowDecoder.decode(bytes))
            #expect(row == ["k": .text(text), "i": .integer(-7), "d": .real(0.1)])
        }
    }

    /// Rows are written through `RowBuffer`'s pointer, the header through an
    /// array: both spell a string alike (rows keep `\u0008` and `\u000c`),
    /// and integers as `String` spells them, so archives stay byte for byte.
    @Test("the row writer spells strings and integers as before")
    func rowWriterSpelling() {
        let texts = [
            "", "plain", "\"", "\\", "a\"b\\c", "\n\r\t", "\u{08}\u{0C}\u{00}\u{01}\u{1F}", "\u{7F}é中😀",
            String(repeating: "\"x", count: 300), String(repeating: "\u{01}", count: 200) + "é",
        ]
        for text in texts {
            var expected: [UInt8] = []
            RowEncoder.appendString(text, to: &expected)
            let buffer = RowBuffer(capacity: 1)
            Array(text.utf8).withUnsafeBufferPointer { RowEncoder.appendString($0, to: buffer) }
            #expect(Array(buffer.bytes) == expected, "\(text.debugDescription)")
        }
        for number: Int64 in [0, 7, -7, 9, 10, 99, 100, -100, 1_000_000_007, .max, .min, .max - 1, .min + 1] {
            let buffer = RowBuffer(capacity: 1)
            RowEncoder.appendNumber(number, to: buffer)
            #expect(Array(buffer.bytes) == Array(String(number).utf8))
        }
    }
}
