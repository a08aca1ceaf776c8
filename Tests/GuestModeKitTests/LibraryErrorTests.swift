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
        } catch GuestModeError.Code.storeNotFound {
            caught = "store_not_found"
        } catch GuestModeError.Code.userNotFound {
            caught = "user_not_found"
        }
        #expect(caught == "user_not_found")
    }

    @Test func aSwitchMatchesTheCodeAndNothingElse() {
        let failure: any Error = GuestModeError(.userNotFound, "no user 'x'")
        switch failure {
        case GuestModeError.Code.userExists: Issue.record("matched another code")
        case GuestModeError.Code.userNotFound: break
        default: Issue.record("did not match its own code")
        }
        #expect(!(GuestModeError.Code.userNotFound ~= CocoaError(.fileNoSuchFile)))
        if case .notFound = (failure as? GuestModeError)?.kind {} else { Issue.record("kind lost") }
    }
}

/// A profile decoded from JSON (a cache, an app's own copy) may lack a tier;
/// looking one up must not trap.
@Suite struct ProfileTierLookupTests {
    @Test func aMissingTierInheritsFromTheTierBelowAsTheLoaderDoes() throws {
        let loaded = try ProfileLoader.parse(try template("subscriptions"), file: "subscriptions.yaml")
        var object = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(loaded)) as! [String: Any]
        object["tiers"] = (object["tiers"] as! [[String: Any]]).filter { $0["level"] as? String == "guest" }
        let partial = try JSONDecoder().decode(Profile.self, from: try JSONSerialization.data(withJSONObject: object))
        #expect(partial.tiers.count == 1)

        let guest = partial.tier(.guest)
        #expect(guest == loaded.tier(.guest))
        for level in [TierLevel.account, .premium] {
            let tier = partial.tier(level)
            #expect(tier.level == level)
            #expect(tier.caps == guest.caps && tier.allowances == guest.allowances)
            #expect(tier.whenCapped == .needsPremium)
        }
    }

    @Test func noTiersAtAllIsUnlimited() throws {
        let loaded = try ProfileLoader.parse(try template("subscriptions"), file: "subscriptions.yaml")
        var object = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(loaded)) as! [String: Any]
        object["tiers"] = [[String: Any]]()
        let empty = try JSONDecoder().decode(Profile.self, from: try JSONSerialization.data(withJSONObject: object))
        let guest = empty.tier(.guest)
        #expect(guest.level == .guest && guest.caps.isEmpty && guest.allowances.isEmpty)
        #expect(guest.whenCapped == .needsAccount)
    }
}
