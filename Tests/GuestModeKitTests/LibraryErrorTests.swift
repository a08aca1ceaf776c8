import Foundation
import GuestModeKit
import GuestModeSQLite
import Testing

/// How an app that embeds the engine tells failures apart: by code, with a
/// plain `catch` pattern, without reading messages. Imported without
/// `@testable`, as an app would.
@Suite struct LibraryErrorTests {
    @Test func aCatchClauseMatchesTheCode() throws {
        let engine = try GuestMode.inMemory(
            profileText: try template("habits"), origin: "habits.yaml", now: day(1))
        var caught: String?
        do {
            _ = try engine.details(user: "nobody", now: day(1))
        } catch let error as GuestModeError where error.code == .storeNotFound {
            caught = "store_not_found"
        } catch let error as GuestModeError where error.code == .userNotFound {
            caught = "user_not_found"
        }
        #expect(caught == "user_not_found")
    }

    @Test func aSwitchMatchesTheCodeAndNothingElse() {
        let failure: any Error = GuestModeError(.userNotFound, "no user 'x'")
        switch (failure as? GuestModeError)?.code {
        case .userExists?: Issue.record("matched another code")
        case .userNotFound?: break
        default: Issue.record("did not match its own code")
        }
        #expect((CocoaError(.fileNoSuchFile) as any Error as? GuestModeError)?.code != .userNotFound)
        if case .notFound = (failure as? GuestModeError)?.kind {} else { Issue.record("kind lost") }
    }
}
