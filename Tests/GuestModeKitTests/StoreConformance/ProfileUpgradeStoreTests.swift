import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

@Suite("Profile upgrade conformance")
struct ProfileUpgradeStoreTests {
    /// The subscriptions profile at version 2: settings renamed to
    /// preferences, cost renamed to price, a higher guest cap.
    func version2() throws -> ProfileCatalog.Source {
        var text = try template("subscriptions")
        text = text.replacingOccurrences(of: "version: 1", with: "version: 2")
            .replacingOccurrences(of: "  settings:\n", with: "  preferences:\n")
            .replacingOccurrences(of: "subscriptions: 5", with: "subscriptions: 10")
            .replacingOccurrences(of: "collections: [settings]", with: "collections: [preferences]")
        text += """
            upgrade:
              from: 1
              steps:
                - rename_collection: { from: settings, to: preferences }
                - rename_field: { collection: subscriptions, from: cost, to: price }
            """
        return ProfileCatalog.Source(
            profile: try ProfileLoader.parse(text, file: "v2.yaml"), text: text, origin: "v2.yaml")
    }

    func seeded(_ backend: StoreBackend) throws -> (store: any GuestStore, engine: GuestMode, guest: String) {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = try backend.engine(store, profile)
        let guest = try engine.createGuest(device: nil, now: day(1)).id
        _ = try engine.putRecord(
            user: guest, collection: "subscriptions", key: "n", json: #"{"name":"Netflix","cost":15}"#, now: day(1))
        _ = try engine.putRecord(
            user: guest, collection: "subscriptions", key: "s", json: #"{"name":"Spotify"}"#, now: day(1))
        _ = try engine.putRecord(
            user: guest, collection: "settings", key: "theme", json: #"{"dark":true}"#, now: day(1))
        return (store, engine, guest)
    }

    @Test(arguments: StoreBackend.allCases)
    func planCountsTheRecordsEachStepTouchesAndChangesNothing(backend: StoreBackend) throws {
        let (_, engine, _) = try seeded(backend)
        let before = try observableState(engine)
        let plan = try engine.planProfileUpgrade(to: try version2())
        #expect(plan.isApplicable && plan.refusal == nil)
        #expect(plan.fromVersion == 1 && plan.toVersion == 2)
        #expect(
            plan.dataSteps.map(\.description) == [
                "rename collection settings → preferences", "rename field subscriptions.cost → price",
            ])
        #expect(plan.dataSteps.map(\.records) == [1, 1])
        #expect(plan.limitChanges.contains("guest subscriptions: 5 → 10"))
        #expect(try observableState(engine) == before)
    }

    @Test(arguments: StoreBackend.allCases)
    func applyMovesDataAndBindsTheNewProfileTogether(backend: StoreBackend) throws {
        let (store, engine, guest) = try seeded(backend)
        let source = try version2()
        let applied = try engine.applyProfileUpgrade(to: source, now: day(2))
        #expect(applied.isApplicable)
        #expect(try store.boundProfile()?.text == source.text)
        #expect(try store.boundProfile()?.origin == "v2.yaml")
        let upgraded = try backend.engine(store, source.profile)
        #expect(
            try upgraded.record(user: guest, collection: "subscriptions", key: "n").data
                == #"{"name":"Netflix","price":15}"#)
        #expect(try upgraded.record(user: guest, collection: "subscriptions", key: "s").data == #"{"name":"Spotify"}"#)
        #expect(try upgraded.record(user: guest, collection: "preferences", key: "theme").data == #"{"dark":true}"#)
    }

    @Test("a refused upgrade throws its refusal and changes nothing", arguments: StoreBackend.allCases)
    func refusedUpgradeChangesNothing(backend: StoreBackend) throws {
        let (store, engine, guest) = try seeded(backend)
        // A record that already has the field the rename would write.
        _ = try engine.putRecord(
            user: guest, collection: "subscriptions", key: "x", json: #"{"cost":1,"price":2}"#, now: day(1))
        let before = try observableState(engine)
        let boundBefore = try store.boundProfile()?.text
        let plan = try engine.planProfileUpgrade(to: try version2())
        #expect(!plan.isApplicable)
        #expect(plan.refusals.contains { $0.contains("already have a field 'price'") })
        #expect(
            errorCode { _ = try engine.applyProfileUpgrade(to: try version2(), now: day(2)) }
                == .profileUpgradeRefused)
        #expect(try observableState(engine) == before)
        #expect(try store.boundProfile()?.text == boundBefore)
        // Same version again is refused too.
        let same = ProfileCatalog.Source(profile: engine.profile, text: try template("subscriptions"), origin: "s.yaml")
        #expect(
            errorCode { _ = try engine.applyProfileUpgrade(to: same, now: day(2)) }
                == .profileUpgradeRefused)
        #expect(try observableState(engine) == before)
    }
}
