import Foundation
import GuestModeKit
import GuestModePostgres
import GuestModeSQLite
import Testing

/// The public way an app makes an engine, the same on both store libraries:
/// `GuestMode(store:profileText:origin:now:)` binds an empty store, and
/// `GuestMode(store:)` opens it again later with the profile it keeps.
@Suite struct EngineInitialiserTests {
    @Test func anSQLiteStoreBoundOnceOpensWithItsProfile() throws {
        let path = NSTemporaryDirectory() + "guestmode-initialiser-\(UUID().uuidString).sqlite"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let text = try template("subscriptions")
        try SQLiteStore.create(path: path, replacing: false) { store in
            _ = try GuestMode(store: store, profileText: text, origin: "subscriptions.yaml", now: day(1))
        }
        let store = try SQLiteStore.open(path: path)
        defer { try? store.close() }
        let engine = try GuestMode(store: store)
        #expect(engine.profile.name == "subscriptions")
        let guest = try engine.createGuest(device: nil, now: day(1))
        #expect(try engine.user(guest.id).id == guest.id)
    }

    @Test func anSQLiteStoreNeverBoundIsRefused() throws {
        do {
            _ = try GuestMode(store: SQLiteStore.inMemory())
            Issue.record("an unbound store opened")
        } catch let error as GuestModeError where error.code == .storeWithoutProfile {}
    }

    @Test func aPostgresStoreBoundOnceOpensWithItsProfile() throws {
        let store = try StoreBackend.makePostgresStore()
        let text = try template("voice")
        _ = try GuestMode(store: store, profileText: text, origin: "voice.yaml", now: day(1))
        let uri = ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"] ?? ""
        let engine = try GuestMode(store: PostgresStore.open(uri: uri, schema: store.schema))
        #expect(engine.profile.name == "voice")
        let guest = try engine.createGuest(device: nil, now: day(1))
        #expect(try engine.meterStatus(user: guest.id, meter: "api_minutes", now: day(1)).used == .zero)
    }

    @Test func aPostgresStoreNeverBoundIsRefused() throws {
        let store = try StoreBackend.makePostgresStore()
        do {
            _ = try GuestMode(store: store)
            Issue.record("an unbound store opened")
        } catch let error as GuestModeError where error.code == .storeWithoutProfile {}
    }
}
