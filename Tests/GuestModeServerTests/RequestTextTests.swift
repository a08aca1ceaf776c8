import Foundation
import Testing

@testable import GuestModeServer

/// The request text the server reads in Swift (percent-decoding, the bearer
/// credential, the access log's route) answers as the Foundation calls it
/// replaced did, on the inputs an attacker would pick as on ordinary ones.
@Suite struct RequestTextTests {
    /// Inputs near every edge: escapes cut short or not hex, bytes that are
    /// not UTF-8, overlong forms, NUL, `+`, non-ASCII text sent unescaped.
    static let encoded: [String] = [
        "", "plain", "a%2Fb", "%2f", "%", "%2", "%zz", "%ZZ", "%g0", "a%", "%%", "%25", "%2525", "%00", "c1%00",
        "%C3%A9", "%c3%a9", "%C3", "%C3%28", "%FF", "%C0%AF", "%E2%82%AC", "%F0%9F%98%80", "%ED%A0%80", "%F4%90%80%80",
        "a+b", "a%2Bb", "%20", "é", "日本%E8%AA%9E", "%41%42%43", "%4", "x%4g", "+", "++%2B",
    ]

    /// Foundation's answer, except where it turned a byte that is not UTF-8 into U+FFFD (a lone
    /// continuation byte such as `%A9`), which the server refuses: none of these texts holds U+FFFD itself.
    static func strictlyDecoded(_ text: String) -> String? {
        guard let decoded = text.removingPercentEncoding, !decoded.unicodeScalars.contains("\u{FFFD}") else {
            return nil
        }
        return decoded
    }

    @Test func percentDecodingAnswersAsFoundationDoes() {
        for text in Self.encoded {
            #expect(RequestInput.percentDecoded(text) == Self.strictlyDecoded(text), "\(text)")
            #expect(RequestInput.percentDecoded(text[...]) == Self.strictlyDecoded(text), "\(text)")
        }
    }

    @Test func aByteThatIsNotUTF8IsRefusedNotReplaced() {
        #expect("%A9".removingPercentEncoding == "\u{FFFD}", "Foundation's lossy answer, which the server took")
        #expect(RequestInput.percentDecoded("%A9") == nil)
        #expect(RequestInput.percentDecoded("s%a9") == nil)
        #expect(RequestInput.percentDecoded("%EF%BF%BD") == "\u{FFFD}", "U+FFFD itself, sent as UTF-8, is text")
    }

    @Test func aQueryValueTakesPlusAsSpaceBeforeDecoding() {
        for text in Self.encoded {
            let foundation = Self.strictlyDecoded(text.replacingOccurrences(of: "+", with: " "))
            #expect(RequestInput.percentDecoded(text, plusIsSpace: true) == foundation, "\(text)")
        }
    }

    @Test func percentDecodingAnswersAsFoundationDoesOnEveryShortText() {
        // Every text of up to four scalars over the alphabet the edges are made of.
        let alphabet = Array("%2Fa0zCé+9".unicodeScalars)
        var texts = [""]
        var longest = [""]
        for _ in 0..<4 {
            longest = longest.flatMap { text in alphabet.map { text + String($0) } }
            texts += longest
        }
        #expect(texts.count == 1 + 10 + 100 + 1_000 + 10_000)
        for text in texts {
            #expect(RequestInput.percentDecoded(text) == Self.strictlyDecoded(text), "\(text)")
        }
    }

    /// A query splits at each `&` byte and an item at its first `=`, as
    /// URLComponents splits a query's items, and a `&` followed by a
    /// combining mark still separates (a split by grapheme did not).
    @Test func aQuerySplitsByteByByte() {
        func items(_ query: String) -> [String] {
            RequestInput.items(of: query).map { name, value in value.map { "\(name)=\($0)" } ?? "\(name)" }
        }
        for query in [
            "", "a=1", "a=1&b=2", "&&a=1&&", "a", "a=", "=1", "a=1=2", "a=%26&b", "x=+", "amount=1&amount=2",
            "a&=&b=", "%61mount=1",
        ] {
            let reference = URLComponents(string: "?" + query)?.percentEncodedQueryItems?
                .filter { !$0.name.isEmpty || $0.value != nil }
                .map { item in item.value.map { "\(item.name)=\($0)" } ?? item.name }
            #expect(items(query) == (reference ?? items(query)), "\(query)")
        }
        // Text sent unescaped, which URLComponents would escape first.
        #expect(items("a=1&\u{301}b=2") == ["a=1", "\u{301}b=2"])
        #expect(items("é=日&x") == ["é=日", "x"])
        #expect(items("&&a=1&&b") == ["a=1", "b"])
        #expect(items("a=1=2&=x&y") == ["a=1=2", "=x", "y"])
    }

    /// A query item is found by name as the first of `items(of:)` whose decoded name has the name's bytes:
    /// a `%`-escaped name too, an empty item never, a later item of the same name never.
    @Test func anItemIsFoundAsTheFirstOfItsNameInTheList() {
        let queries = [
            "", "a=1", "a=1&b=2", "&&a=1&&", "a", "a=", "=1", "a=1=2", "a=%26&b", "x=+", "amount=1&amount=2",
            "a&=&b=", "%61mount=1", "amount&amount=2", "b=1&%61=2&a=3", "%zz=1&a=2", "é=日&x", "e\u{301}=1&é=2",
            "%C3%A9=1", "amount=1&&", "Amount=1&amount=2", "amount%3D1=2",
        ]
        for query in queries {
            for name in ["a", "b", "x", "amount", "", "é", "e\u{301}", "amount=1"] {
                let expected = RequestInput.items(of: query).first { item in
                    RequestInput.percentDecoded(item.name).map { Array($0.utf8) == Array(name.utf8) } ?? false
                }
                let found = RequestInput.firstItem(named: name, in: query)
                #expect(
                    found.map { "\($0.name)|\($0.value ?? "nil")" }
                        == expected.map { "\($0.name)|\($0.value ?? "nil")" },
                    "\(name) in \(query)")
            }
        }
    }

    @Test func theBearerCredentialIsWhatFollowsTheSchemeWithoutSpaces() {
        let headers: [String] = [
            "Bearer gmk_abc", "bearer gmk_abc", "BEARER gmk_abc", "BeArEr  gmk_abc \t",
            "Bearer \u{00A0}gmk_abc\u{3000}",
            "Bearer", "Bearer ", "Bearer  ", "Basic gmk_abc", "Bearergmk_abc", "Bearer\tgmk_abc", "xBearer gmk",
            "Bearer a.b.c", "Bearer gmk_\u{00A0}x", "Bearer \u{2028}gmk", "Bearer é", "",
        ]
        for header in headers {
            let foundation =
                header.lowercased().hasPrefix("bearer ")
                ? header.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces) : nil
            #expect(Services.bearerCredential(in: header) == foundation, "\(header.debugDescription)")
        }
    }
}

extension RequestTextTests {
    @Test func theAccessLogsRouteTemplateNamesParametersInBraces() {
        let paths = [
            "/v1/users/:user/records/:collection/:key", "/v1/users/:user", "/v1/guests", "", "/", ":user",
            "/a/:/b", "/a:b/c", "/v1/users/:user/", "//:x//", "/:a/:b",
        ]
        for path in paths {
            let split = path.split(separator: "/", omittingEmptySubsequences: false).map { segment in
                segment.hasPrefix(":") ? "{\(segment.dropFirst())}" : String(segment)
            }.joined(separator: "/")
            #expect(ObservabilityMiddleware.template(of: path) == split, "\(path)")
        }
    }
}
