import Foundation
import Testing

@testable import GuestModeKit

@Suite struct ErrorCodeCatalogueTests {
    static let source = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/GuestModeKit/Store/GuestModeError.swift")

    @Test func everyDeclaredCodeIsInTheCatalogueOnce() throws {
        let text = try String(contentsOf: Self.source, encoding: .utf8)
        let declared = text.matches(of: /public static let \w+ = Code\("([a-z0-9_]+)"\)/).map { String($0.output.1) }
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
    }
}
