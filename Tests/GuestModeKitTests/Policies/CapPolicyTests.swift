import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

@Suite("Cap policy")
struct CapPolicyTests {
    let profile: Profile

    init() throws {
        profile = try ProfileLoader.parse(try template("subscriptions"), file: "subscriptions.yaml")
    }

    @Test func belowTheCapIsAllowed() {
        let limit = profile.collectionLimit("subscriptions", tier: .guest, used: 4)
        #expect(limit == CollectionLimit(collection: "subscriptions", tier: .guest, used: 4, cap: 5, outcome: .allowed))
        #expect(limit.admits(isReplacement: false))
    }

    @Test func atOrPastTheCapAsksForWhatTheTierSays() {
        #expect(profile.collectionLimit("subscriptions", tier: .guest, used: 5).outcome == .needsAccount)
        #expect(profile.collectionLimit("subscriptions", tier: .guest, used: 9).outcome == .needsAccount)
        #expect(profile.collectionLimit("subscriptions", tier: .account, used: 5).outcome == .needsPremium)
    }

    @Test func uncappedCollectionsAndTiersAreAlwaysAllowed() {
        let settings = profile.collectionLimit("settings", tier: .guest, used: 1_000)
        #expect(settings.cap == nil)
        #expect(settings.outcome == .allowed)
        #expect(profile.collectionLimit("subscriptions", tier: .premium, used: 1_000).outcome == .allowed)
    }

    @Test func replacingAKeyIsAdmittedAtTheCap() {
        let full = profile.collectionLimit("subscriptions", tier: .guest, used: 5)
        #expect(!full.admits(isReplacement: false))
        #expect(full.admits(isReplacement: true))
    }
}
