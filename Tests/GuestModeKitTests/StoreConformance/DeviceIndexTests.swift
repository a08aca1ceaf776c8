import Foundation
import GRDB
import Testing

@testable import GuestModeKit
@testable import GuestModePostgres
@testable import GuestModeSQLite

@Suite("the device index")
struct DeviceIndexTests {
    /// How each backend plans the lookup `createOrFindGuest` makes.
    private func plan(_ backend: StoreBackend, _ store: any GuestStore) throws -> String {
        switch backend {
        case .sqlite, .sqlitePool:
            let sqlite = try #require(store as? SQLiteStore)
            return try sqlite.database.writer.read { db in
                try Row.fetchAll(
                    db,
                    sql:
                        "EXPLAIN QUERY PLAN SELECT id FROM users WHERE device = 'phone' ORDER BY created_at, id LIMIT 1"
                ).map { $0.description }.joined(separator: "\n")
            }
        case .postgres:
            let postgres = try #require(store as? PostgresStore)
            return try postgres.write { connection in
                // A handful of rows: forbid the sequential scan a planner would rightly prefer.
                try connection.execute("SET LOCAL enable_seqscan = off")
                return try connection.execute(
                    "EXPLAIN SELECT * FROM users WHERE device = 'phone' ORDER BY created_at COLLATE \"C\", id COLLATE \"C\" LIMIT 1"
                ).map { try $0.string("QUERY PLAN") }.joined(separator: "\n")
            }
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func aDeviceIsFoundThroughItsIndex(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        let first = try engine.createOrFindGuest(device: "phone", now: day(1))
        _ = try engine.createGuest(device: nil, now: day(2))
        #expect(try engine.createOrFindGuest(device: "phone", now: day(3)).user == first.user)
        let plan = try plan(backend, store)
        #expect(plan.contains("users_device"), "\(plan)")
    }
}
