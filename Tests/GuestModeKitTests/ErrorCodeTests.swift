import Foundation
import Testing

@testable import GuestModeKit

@Suite struct ErrorCodeCatalogueTests {
    @Test func everyCodeHasOneName() {
        let names = GuestModeError.Code.allCases.map(\.rawValue)
        #expect(Set(names).count == names.count, "two codes share a name")
        #expect(names == names.sorted(), "keep the catalogue sorted so guestmode(1) lists it in the same order")
    }

    @Test func codesAreSnakeCase() {
        for code in GuestModeError.Code.allCases {
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
/// never disagree about that; the form `GuestModeError(code, message)` names
/// no kind to disagree with.
@Suite struct ErrorKindTests {
    @Test func theKindIsTheCodes() {
        #expect(GuestModeError(.userNotFound, "no user 'x'").kind == .notFound)
        #expect(GuestModeError.Code.recordCapReached.kind == .needsAccount)
        #expect(GuestModeError.Code.recordCapNeedsPremium.kind == .needsPremium)
        #expect(GuestModeError.Code.poolExhausted.kind == .tryAgainLater)
        for kind in FailureKind.allCases {
            #expect(GuestModeError.Code.allCases.contains { $0.kind == kind }, "no code of kind \(kind)")
        }
    }
}
