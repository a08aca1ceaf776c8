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

    /// The engine renames over pages of records: with pages of two, every
    /// owner's records are still visited once, each value comes back as
    /// it was (nesting, numbers as written, escapes), the member takes its
    /// place in the canonical text, and the record keeps its times.
    @Test(arguments: StoreBackend.allCases)
    func renameFieldPagesThroughEveryOwnersRecordsKeepingValuesAndTimes(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = try backend.engine(store, profile)
        let documents = [
            #"{"cost":15,"name":"Netflix"}"#,
            #"{"a":1,"cost":{"x":[1, 2,{"y":"z"}]},"z":null}"#,
            #"{ "cost" : "a \"quoted\" , value" , "b" : [ ] }"#,
            #"{"b":true,"cost":1.50,"c":"é/ü\u00e9\n"}"#,
            #"{"only":1}"#,
            #"{"c\u006fst":3,"d":4}"#,
            #"{"cost":-0.0e+5,"zz":"last"}"#,
        ]
        var owners: [String] = []
        for (index, document) in documents.enumerated() {
            if index % 3 == 0 { owners.append(try engine.createGuest(device: nil, now: day(1)).id) }
            _ = try engine.putRecord(
                user: owners[owners.count - 1], collection: "subscriptions", key: "k\(index)", json: document,
                now: day(1, hour: index))
        }
        func stored() throws -> [StoredRecord] {
            try owners.flatMap { owner in try engine.records(user: owner, collection: "subscriptions") }
        }
        let before = try stored()
        let rename = FieldRename(collection: "subscriptions", field: "cost", to: "price")
        let census = try store.read { try rename.census($0, pageSize: 2) }
        #expect(census.having == 6 && census.clashing == 0)
        let renamed = try store.write { try rename.apply($0, pageSize: 2) }
        #expect(renamed == 6)
        let after = try stored()
        #expect(after.count == before.count)
        for (old, new) in zip(before, after) {
            guard case .object(var members) = try StrictJSON.parse(old.data) else {
                Issue.record("\(old.data) is not an object")
                continue
            }
            if let value = members.removeValue(forKey: "cost") { members["price"] = value }
            #expect(new.data == JSONValue.object(members).canonicalText)
            #expect(new.createdAt == old.createdAt && new.updatedAt == old.updatedAt)
        }
        #expect(after.map(\.data).contains(#"{"b":true,"c":"é/üé\n","price":1.50}"#))
        #expect(after.map(\.data).contains(#"{"a":1,"price":{"x":[1,2,{"y":"z"}]},"z":null}"#))
        #expect(try store.read { try rename.census($0, pageSize: 2) } == (0, 0))
    }

    /// A page holds no more records than fit in its bytes (always one), so a
    /// collection of large records is rewritten in bounded memory.
    @Test(arguments: StoreBackend.allCases)
    func aPageOfRecordsIsBoundedByItsBytes(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = try backend.engine(store, profile)
        let guest = try engine.createGuest(device: nil, now: day(1)).id
        let note = String(repeating: "n", count: 990)
        for index in 0..<5 {
            _ = try engine.putRecord(
                user: guest, collection: "subscriptions", key: "k\(index)",
                json: #"{"cost":\#(index),"note":"\#(note)"}"#,
                now: day(1))
        }
        func page(after position: RecordPosition?, limit: Int, bytes: Int) throws -> [StoredRecord] {
            try store.read {
                try $0.recordPage(in: "subscriptions", after: position, limit: limit, maximumBytes: bytes)
            }
        }
        func keys(after position: RecordPosition?, limit: Int, bytes: Int) throws -> [String] {
            try page(after: position, limit: limit, bytes: bytes).map(\.key)
        }
        let all = try page(after: nil, limit: 10, bytes: 1 << 20)
        #expect(all.map(\.key) == ["k0", "k1", "k2", "k3", "k4"] && all.allSatisfy { $0.data.utf8.count == 1_010 })
        #expect(try keys(after: nil, limit: 10, bytes: 2_500) == ["k0", "k1"])
        #expect(try keys(after: nil, limit: 10, bytes: 2_020) == ["k0", "k1"])
        #expect(try keys(after: nil, limit: 10, bytes: 2_019) == ["k0"])
        #expect(try keys(after: nil, limit: 10, bytes: 10) == ["k0"], "the first whatever its size")
        #expect(try keys(after: nil, limit: 3, bytes: 1 << 20) == ["k0", "k1", "k2"])
        #expect(try keys(after: RecordPosition(after: all[3]), limit: 10, bytes: 1 << 20) == ["k4"])
        #expect(try keys(after: RecordPosition(after: all[4]), limit: 10, bytes: 1 << 20).isEmpty)

        // Pages cut by their bytes, not their number, still reach every record.
        let rename = FieldRename(collection: "subscriptions", field: "cost", to: "price")
        #expect(try store.read { try rename.census($0, pageSize: 10, pageBytes: 1_500) } == (5, 0))
        #expect(try store.write { try rename.apply($0, pageSize: 10, pageBytes: 1_500) } == 5)
        #expect(try store.read { try rename.census($0) } == (0, 0))
    }

    /// A field is a top-level member of exactly that name: no backend's
    /// path syntax reads `a.b` as a nested member or `$` as the root.
    @Test(arguments: StoreBackend.allCases)
    func aFieldNameIsAMemberNameNotAPath(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = try backend.engine(store, profile)
        let guest = try engine.createGuest(device: nil, now: day(1)).id
        _ = try engine.putRecord(
            user: guest, collection: "subscriptions", key: "nested", json: #"{"a":{"b":1}}"#, now: day(1))
        _ = try engine.putRecord(
            user: guest, collection: "subscriptions", key: "dotted", json: #"{"a.b":2,"$":3}"#, now: day(1))
        let dotted = FieldRename(collection: "subscriptions", field: "a.b", to: "$")
        #expect(try store.read { try dotted.census($0) } == (1, 1))
        let root = FieldRename(collection: "subscriptions", field: "$", to: "root")
        #expect(try store.read { try root.census($0) } == (1, 0))
        #expect(try store.write { try FieldRename(collection: "subscriptions", field: "a.b", to: "ab").apply($0) } == 1)
        #expect(try engine.record(user: guest, collection: "subscriptions", key: "nested").data == #"{"a":{"b":1}}"#)
        #expect(try engine.record(user: guest, collection: "subscriptions", key: "dotted").data == #"{"$":3,"ab":2}"#)
    }
}
