import Foundation
import Testing

@testable import GuestModeKit

@Suite struct ErrorCodeCatalogueTests {
    static let source = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/GuestModeKit/Store/GuestModeError.swift")

    @Test func everyDeclaredCodeIsInTheCatalogueOnce() throws {
        let text = try String(contentsOf: Self.source, encoding: .utf8)
        let declared = text.matches(of: /public static let \w+ = Code\("([a-z0-9_]+)", \.\w+\)/).map {
            String($0.output.1)
        }
        let listed = GuestModeError.Code.all.map(\.rawValue)
        #expect(Set(declared) == Set(listed))
        #expect(Set(listed).count == listed.count, "a code is listed twice")
        #expect(listed == listed.sorted(), "keep the catalogue sorted so guestmode(1) lists it in the same order")
    }

    @Test func codesAreSnakeCase() {
        for code in GuestModeError.Code.all {
            #expect(code.rawValue.wholeMatch(of: /[a-z][a-z0-9]*(_[a-z0-9]+)*/) != nil, "\(code) is not snake_case")
        }
    }

    @Test func aCodeEncodesAsItsName() throws {
        let data = try JSONEncoder().encode(["code": GuestModeError.Code.userNotFound])
        #expect(String(decoding: data, as: UTF8.self) == #"{"code":"user_not_found"}"#)
        let decoded = try JSONDecoder().decode([String: GuestModeError.Code].self, from: data)
        #expect(decoded["code"] == .userNotFound && decoded["code"]?.kind == .notFound)
        #expect(GuestModeError.Code(rawValue: "no_such_code") == nil, "a name outside the catalogue has no kind")
    }
}

/// One code, one kind: a code decides how every failure with it is answered
/// (its exit status, its HTTP status), so two places raising one code can
/// never disagree about that.
@Suite struct ErrorKindTests {
    static let sources = ErrorCodeCatalogueTests.source
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    @Test func theKindIsTheCodes() {
        #expect(GuestModeError(.userNotFound, "no user 'x'").kind == .notFound)
        #expect(GuestModeError(.notFound, code: .diskFull, "stated wrongly").kind == .ioError, "the code decides")
        #expect(GuestModeError.Code.recordCapReached.kind == .needsAccount)
        #expect(GuestModeError.Code.recordCapNeedsPremium.kind == .needsPremium)
        #expect(GuestModeError.Code.poolExhausted.kind == .tryAgainLater)
    }

    /// Every construction in the sources that names a kind names its code's
    /// kind: `GuestModeError(.kind, code: .code, …)` and the
    /// `.usage`/`.badData`/`.notFound`/`.conflict(…, code:)` factories.
    @Test func everyErrorIsRaisedWithItsCodesKind() throws {
        let catalogue = try String(contentsOf: ErrorCodeCatalogueTests.source, encoding: .utf8)
        var codes: [String: GuestModeError.Code] = [:]
        for match in catalogue.matches(of: /public static let (\w+) = Code\("([a-z0-9_]+)", \.\w+\)/) {
            codes[String(match.output.1)] = GuestModeError.Code(rawValue: String(match.output.2))
        }
        let kinds = Dictionary(uniqueKeysWithValues: FailureKind.allCases.map { (String(describing: $0), $0) })
        let start = try NSRegularExpression(
            pattern:
                #"GuestModeError(?:\.(usage|notFound|badData|conflict))?\(|(?<![\w.])\.(usage|notFound|badData|conflict)\("#
        )
        var raised: [String: Set<String>] = [:]
        var checked = 0
        let files = FileManager.default.enumerator(at: Self.sources, includingPropertiesForKeys: nil)!
        for case let file as URL in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            let utf16 = Array(text.utf16)
            for match in start.matches(in: text, range: NSRange(location: 0, length: utf16.count)) {
                let arguments = Self.balancedArguments(utf16, from: match.range.upperBound)
                guard let code = arguments.firstMatch(of: /code:\s*\.(\w+)/).map({ String($0.output.1) }) else {
                    continue
                }
                let stated =
                    [1, 2].compactMap { group -> String? in
                        let range = match.range(at: group)
                        return range.location == NSNotFound ? nil : (text as NSString).substring(with: range)
                    }.first ?? arguments.firstMatch(of: /^\s*\.(\w+)\s*,/).map { String($0.output.1) }
                let place =
                    "\(file.lastPathComponent):\(text.utf16.prefix(match.range.location).filter { $0 == 10 }.count + 1)"
                let known = try #require(codes[code], "\(place): .\(code) is not in the catalogue")
                guard let stated else { continue }
                let kind = try #require(kinds[stated], "\(place): .\(stated) is not a FailureKind")
                raised[code, default: []].insert(stated)
                #expect(kind == known.kind, "\(place): .\(code) is a \(known.kind) failure, raised as .\(stated)")
                checked += 1
            }
        }
        #expect(checked > 250, "the scan found \(checked) constructions; did their spelling change?")
        for (code, stated) in raised where stated.count > 1 {
            Issue.record("\(code) is raised with \(stated.count) kinds: \(stated.sorted())")
        }
    }

    /// The text between an opening parenthesis (just before `start`) and the one closing it.
    static func balancedArguments(_ utf16: [UInt16], from start: Int) -> String {
        var depth = 1
        var index = start
        while index < utf16.count, depth > 0 {
            switch utf16[index] {
            case 40, 91, 123: depth += 1
            case 41, 93, 125: depth -= 1
            default: break
            }
            index += 1
        }
        return String(decoding: utf16[start..<max(start, index - 1)], as: UTF16.self)
    }
}
