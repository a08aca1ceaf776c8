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
        #expect(fast == generic(text), "\(text)")
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

    @Test("invalid UTF-8 and a key given twice are refused")
    func invalidBytes() {
        #expect(RowDecoder.decode([0x7B, 0x22, 0x61, 0x22, 0x3A, 0x22, 0xFF, 0x22, 0x7D]) == nil)
        #expect(RowDecoder.decode(Array(#"{"a":1,"a":2}"#.utf8)) == nil)
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
