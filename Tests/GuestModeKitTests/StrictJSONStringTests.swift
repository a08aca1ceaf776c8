import Foundation
import Testing

@testable import GuestModeKit

/// Plain ASCII strings take a fast path; everything else the scalar path.
/// Both must read the same text and refuse the same bad input.
@Suite struct StrictJSONStringTests {
    @Test func plainEscapedAndNonASCIIStringsReadTheSame() throws {
        let text =
            #"{"plain":"app_opened","escaped":"a\"b\\c\nd\u00e9","utf8":"café ユーザー","#
            + #""empty":"","mixed":"ok then é"}"#
        let value = try StrictJSON.parse(text)
        #expect(
            value
                == .object([
                    "plain": .string("app_opened"), "escaped": .string("a\"b\\c\nd\u{e9}"),
                    "utf8": .string("café ユーザー"), "empty": .string(""), "mixed": .string("ok then é"),
                ]))
    }

    @Test(arguments: [
        ("{\"a\":\"tab\there\"}", "a control character must be escaped in a string at byte 10"),
        ("{\"a\":\"never closed", "unterminated string at byte 6"),
        ("{\"a\":\"bad \\q\"}", "invalid escape '\\'q'' at byte 11"),
    ])
    func badStringsAreRefusedWhereTheyGoWrong(text: String, message: String) {
        #expect(throws: StrictJSON.Failure.self) { try StrictJSON.parse(text) }
        do {
            _ = try StrictJSON.parse(text)
        } catch {
            #expect(error.description == message)
        }
    }

    @Test func invalidUTF8IsRefused() {
        let bytes: [UInt8] = Array(#"{"a":"x"#.utf8) + [0xFF] + Array(#""}"#.utf8)
        #expect(throws: StrictJSON.Failure.self) { try StrictJSON.parse(Data(bytes)) }
    }
}
