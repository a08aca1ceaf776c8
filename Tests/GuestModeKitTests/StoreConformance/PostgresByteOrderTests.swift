import Foundation
import Testing

@testable import GuestModeKit
@testable import GuestModePostgres

/// Every text column of a PostgreSQL store compares byte by byte, as SQLite's do, whatever collation the
/// database was made with (pg15), so the reads that must give byte order (exports, lists) walk an index.
@Suite("PostgreSQL text in byte order")
struct PostgresByteOrderTests {
    /// The store's text columns that do not compare byte by byte, as `table.column`.
    private func columnsNotInByteOrder(_ store: PostgresStore) throws -> [String] {
        try store.read { connection in
            try connection.execute(
                """
                SELECT c.relname || '.' || a.attname AS name FROM pg_class c
                JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                WHERE c.relnamespace = (SELECT oid FROM pg_namespace WHERE nspname = current_schema())
                    AND c.relkind = 'r' AND a.atttypid = 'text'::regtype
                    AND a.attcollation <> (SELECT oid FROM pg_collation
                        WHERE collname = 'C' AND collnamespace = 'pg_catalog'::regnamespace)
                ORDER BY 1
                """
            ).map { try $0.string("name") }
        }
    }

    /// The plan PostgreSQL makes for `query`, one node a line, the sequential scan a planner would rightly prefer
    /// for a handful of rows forbidden.
    private func plan(_ store: PostgresStore, _ query: String) throws -> String {
        try store.write { connection in
            try connection.execute("SET LOCAL enable_seqscan = off")
            return try connection.execute("EXPLAIN \(query)").map { try $0.string("QUERY PLAN") }
                .joined(separator: "\n")
        }
    }

    private static let byteOrderReads = [
        #"SELECT id FROM users ORDER BY id COLLATE "C""#,
        #"SELECT * FROM users ORDER BY id COLLATE "C""#,
        #"SELECT * FROM counters ORDER BY user_id COLLATE "C", action COLLATE "C""#,
        #"SELECT * FROM records ORDER BY owner_id COLLATE "C", collection COLLATE "C", key COLLATE "C""#,
    ]

    @Test func aNewStoreComparesEveryTextColumnByteByByte() throws {
        let store = try StoreBackend.makePostgresStore()
        #expect(try columnsNotInByteOrder(store) == [])
        for query in Self.byteOrderReads {
            #expect(try !plan(store, query).contains("Sort"), "\(query) walks the key's index")
        }
    }

    /// A store an earlier guestmode made on a database whose collation is not byte order (ICU's root
    /// collation puts `a` before `B`), in a schema an application's table shares: pg15 gives guestmode's columns
    /// byte order, and the same reads then give byte order from the key's index.
    @Test func anEarlierStoreOnALinguisticCollationIsMigratedToByteOrder() throws {
        let (engineStore, profile) = try StoreBackend.postgres.makeStore(profile: "subscriptions")
        let running = try #require(engineStore as? PostgresStore)
        let engine = GuestMode(profile: profile, store: running)
        try running.write { connection in
            _ = try connection.execute(
                """
                INSERT INTO users (id, created_at, last_seen_at)
                SELECT id, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'
                FROM unnest(ARRAY['b', 'B', 'a', 'A', 'é', 'z']) AS ids (id);
                INSERT INTO counters (user_id, action, total) VALUES ('B', 'opened', 2);
                ALTER TABLE users ALTER COLUMN id TYPE text COLLATE "und-x-icu",
                    ALTER COLUMN state TYPE text COLLATE "und-x-icu";
                ALTER TABLE counters ALTER COLUMN user_id TYPE text COLLATE "und-x-icu";
                DELETE FROM schema_migrations WHERE identifier = 'pg15-byte-order-text';
                CREATE TABLE app_notes (body text);
                """)
        }
        #expect(
            try columnsNotInByteOrder(running) == [
                "app_notes.body", "counters.user_id", "users.id", "users.state",
            ])
        #expect(try running.schemaStatus().pending == ["pg15-byte-order-text"])
        let linguistic = try running.read {
            try $0.execute("SELECT id FROM users ORDER BY id").map { try $0.string("id") }
        }
        #expect(linguistic == ["a", "A", "b", "B", "é", "z"], "the earlier store sorts as its collation does")
        // A server that keeps running on the earlier store: its connection has these reads prepared.
        #expect(try engine.user("B").id == "B")
        #expect(try engine.counters(user: "B") == ["opened": 2])

        // The upgrade opens the store from another process (its own connections), which migrates it.
        let uri = try #require(ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"])
        let store = try PostgresStore.open(uri: uri, schema: running.schema)
        #expect(try store.schemaStatus().pending == [])
        #expect(try GuestMode.migrate(store: store, location: "test").applied == [])
        #expect(
            try columnsNotInByteOrder(store) == ["app_notes.body"],
            "an application's own table in the same schema is not guestmode's to change")
        let ids = try store.read { try $0.execute("SELECT id FROM users ORDER BY id").map { try $0.string("id") } }
        #expect(ids == ["A", "B", "a", "b", "z", "é"], "byte order, as SQLite's")
        #expect(try !plan(store, Self.byteOrderReads[0]).contains("Sort"))
        // The running server's prepared reads now return text of another collation: PostgreSQL refuses them
        // ("cached plan must not change result type") and the store prepares them again.
        #expect(try engine.user("B").id == "B", "the users are all there and found by their keys")
        #expect(try engine.counters(user: "B") == ["opened": 2])
        #expect(try engine.user("B").id == "B")
    }
}
