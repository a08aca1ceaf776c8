import Foundation
import GRDB
import Testing

@testable import GuestModeKit
@testable import GuestModePostgres
@testable import GuestModeSQLite

/// `user find`: a user found by an identity, an email or a device, on every backend alike, each
/// lookup answered from an index.
@Suite("finding a user")
struct UserLookupTests {
    private func engine(_ backend: StoreBackend) throws -> (GuestMode, any GuestStore) {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        return (GuestMode(profile: profile, store: store), store)
    }

    @Test(arguments: StoreBackend.allCases)
    func aPersonIsFoundByIdentityEmailOrDevice(backend: StoreBackend) throws {
        let (engine, store) = try engine(backend)
        let ana = try engine.createGuest(device: "family-ipad", now: day(1))
        let ben = try engine.createGuest(device: "family-ipad", now: day(2))
        let cleo = try engine.createGuest(device: nil, now: day(3))
        let dan = try engine.createGuest(device: "dan-phone", now: day(4))
        _ = try engine.link(
            user: ana.id, provider: "apple", subject: "001234.abcd", email: "Ana@Example.com", now: day(5))
        _ = try engine.link(user: cleo.id, provider: "email", subject: "ana@example.com", email: nil, now: day(5))
        _ = try engine.link(user: dan.id, provider: "google", subject: "g-1", email: "dan@example.com", now: day(5))
        // A second identity of Ana's carrying the same address: she is listed once.
        _ = try store.write { transaction in
            try transaction.insertIdentity(
                Identity(provider: "google", subject: "g-ana", email: "ANA@example.com", linkedAt: day(6)), of: ana.id)
        }

        let byIdentity = try engine.findUsers(.identity(provider: "apple", subject: "001234.abcd"))
        #expect(byIdentity.map(\.id) == [ana.id])
        #expect(byIdentity.first?.identities == 2 && byIdentity.first?.state == .linked)
        #expect(try engine.findUsers(.identity(provider: "apple", subject: "001234.ABCD")).isEmpty, "subjects exact")
        #expect(
            try engine.findUsers(.email("ana@EXAMPLE.com")).map(\.id) == [ana.id, cleo.id],
            "the address any identity reported, ASCII case folded, and an email identity's subject, oldest first")
        #expect(try engine.findUsers(.email("dan@example.com")).map(\.id) == [dan.id])
        #expect(try engine.findUsers(.email("nobody@example.com")).isEmpty)
        #expect(try engine.findUsers(.device("family-ipad")).map(\.id) == [ana.id, ben.id], "a shared device")
        #expect(try engine.findUsers(.device("Family-iPad")).isEmpty, "devices exact")

        expectFailure(.usage, code: .usage) { _ = try engine.findUsers(.email("")) }
        expectFailure(.usage, code: .usage) { _ = try engine.findUsers(.device("")) }
        expectFailure(.badData, code: .nulInText) { _ = try engine.findUsers(.device("a\u{0}b")) }
        #expect(try UserLookup.identity(parsing: "email:a:b") == .identity(provider: "email", subject: "a:b"))
        expectFailure(.usage, code: .usage) { _ = try UserLookup.identity(parsing: "apple") }
        expectFailure(.usage, code: .usage) { _ = try UserLookup.identity(parsing: ":x") }
        let none = UserLookup.device("x").nobody
        #expect(none.code == .userNotFound && none.kind == .notFound)
    }

    /// How each backend plans the lookup's query, with the statement the backend runs.
    private func plan(_ lookup: UserLookup, _ backend: StoreBackend, _ store: any GuestStore) throws -> String {
        switch backend {
        case .sqlite, .sqlitePool:
            let sqlite = try #require(store as? SQLiteStore)
            let (condition, arguments) = SQLiteTransaction.condition(of: lookup)
            return try sqlite.database.writer.read { db in
                try Row.fetchAll(
                    db, sql: "EXPLAIN QUERY PLAN " + SQLiteTransaction.summaries(where: condition),
                    arguments: StatementArguments(arguments)
                ).map { $0["detail"] as String? ?? "" }.joined(separator: "\n")
            }
        case .postgres:
            let postgres = try #require(store as? PostgresStore)
            let (condition, arguments) = PostgresTransaction.condition(of: lookup)
            return try postgres.write { connection in
                // A handful of rows: forbid the sequential scan a planner would rightly prefer.
                try connection.execute("SET LOCAL enable_seqscan = off")
                return try connection.execute(
                    "EXPLAIN " + PostgresTransaction.summaries(where: condition),
                    arguments.map { PostgresValue($0) as PostgresValue? }
                ).map { try $0.string("QUERY PLAN") }.joined(separator: "\n")
            }
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func everyLookupIsAnsweredFromAnIndex(backend: StoreBackend) throws {
        let (engine, store) = try engine(backend)
        let guest = try engine.createGuest(device: "phone", now: day(1))
        _ = try engine.link(user: guest.id, provider: "apple", subject: "s-1", email: "a@example.com", now: day(2))
        let expected: [(UserLookup, String)] = [
            (
                .identity(provider: "apple", subject: "s-1"),
                backend == .postgres ? "identities_pkey" : "sqlite_autoindex_identities_1"
            ),
            (.email("A@example.com"), "identities_email"),
            (.device("phone"), "users_device"),
        ]
        for (lookup, index) in expected {
            let plan = try plan(lookup, backend, store)
            #expect(plan.contains(index), "\(lookup): \(plan)")
            // Neither the users nor the identities are read whole (the counts' subqueries seek by user).
            #expect(
                !plan.contains("Seq Scan") && !plan.contains("SCAN u") && !plan.contains("SCAN identities"),
                "\(lookup): \(plan)")
        }
    }
}
