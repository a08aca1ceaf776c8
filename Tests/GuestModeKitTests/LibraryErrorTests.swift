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

    @Test func theAsyncFormRunsOffTheCallersTaskAndThrowsAsTheEngineDoes() async throws {
        let engine = try GuestMode.inMemory(
            profileText: try template("subscriptions"), origin: "subscriptions.yaml", now: day(1))
        let guest = try await engine.perform { engine in try engine.createGuest(device: nil, now: day(1)) }
        let result = try await engine.perform { engine in
            try engine.putRecord(user: guest.id, collection: "subscriptions", key: "netflix", json: "{}", now: day(1))
        }
        #expect(result.outcome == .allowed)
        await #expect(throws: GuestModeError.self) {
            try await engine.perform { engine in try engine.user("nobody") }
        }
        // Many at once: each on a thread of its own, none on the cooperative pool.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<16 {
                group.addTask {
                    _ = try await engine.perform { engine in
                        try engine.putRecord(
                            user: guest.id, collection: "settings", key: "k\(index)", json: "{}", now: day(1))
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try engine.records(user: guest.id, collection: "settings").count == 16)
    }
}
