import Foundation
import Testing

/// `backup import` into PostgreSQL writes rows in batches through COPY: these
/// tests cross the batch boundaries and check that a row the server refuses
/// is still reported at its own place in the archive, with nothing imported.
@Suite("PostgreSQL: backup import through COPY")
struct PostgresImportTests {
    @Test("2,500 records and 2,500 events (three batches each) import whole and export the same rows again")
    func batchesRoundTrip() async throws {
        let sandbox = try await Sandbox.withPostgresStore("habits")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let local = ["--store", "local.sqlite"]
        #expect(try await sandbox.run(arguments: ["init", "--profile", "habits"] + local).status == 0)
        let events = (0..<2500).map {
            #"{"user":"bench","action":"habit_completed","at":"2026-10-01T10:00:00.000Z","id":"e\#($0)"}"#
        }.joined(separator: "\n")
        try sandbox.write("events.ndjson", events + "\n")
        let tracked = try await sandbox.run(
            arguments: ["track", "--from", "events.ndjson", "--create-users", "--quiet"] + local)
        #expect(tracked.status == 0, "\(tracked.stderr)")
        let inserted = try await sandbox.shell(
            """
            sqlite3 local.sqlite "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
            INSERT INTO records (owner_id, collection, key, data, created_at, updated_at)
            SELECT 'bench', 'completions', printf('c%05d', i), json_object('note', 'tab' || char(9) || 'and \\\\ ' || i),
                   '2026-10-01T10:00:00.000Z', '2026-10-01T10:00:00.000Z' FROM n"
            """)
        #expect(inserted.status == 0, "\(inserted.stderr)")
        let exported = try await sandbox.run(arguments: ["backup", "export", "bench", "--out", "b.gmbackup"] + local)
        #expect(exported.status == 0, "\(exported.stderr)")

        // Into a store without users the plain indexes and the keys to users are dropped while the rows go in.
        let imported = try await Self.restore("b.gmbackup", in: sandbox, "--json")
        let rows = imported.object["rows"] as? [String: Any] ?? [:]
        #expect(rows["records"] as? Int == 2500, "\(imported.stdout)")
        #expect(rows["events"] as? Int == 2500, "\(imported.stdout)")

        // The same rows, byte for byte, on both sides.
        let query = "SELECT key || ' ' || data FROM %@records ORDER BY key"
        let here = try await sandbox.shell(
            "sqlite3 local.sqlite \"\(query.replacingOccurrences(of: "%@", with: ""))\" | md5sum")
        let there = try await sandbox.shell(
            "psql -X -At -d '\(sandbox.postgresURI)' -c \"\(query.replacingOccurrences(of: "%@", with: sandbox.postgresSchema + "."))\" | md5sum"
        )
        #expect(here.stdout == there.stdout && !here.stdout.isEmpty, "\(here.stdout) \(there.stdout) \(there.stderr)")
        let counts = try await sandbox.shell(
            "psql -X -At -d '\(sandbox.postgresURI)' -c 'SELECT count(*), count(DISTINCT id), max(id) FROM \(sandbox.postgresSchema).events'"
        )
        #expect(counts.stdout == "2500|2500|2500\n", "\(counts.stdout)\(counts.stderr)")
        // New events get ids past the imported ones.
        #expect(try await sandbox.run("track", "bench", "habit_completed").status == 0)
        #expect(try await sandbox.run("db", "check").status == 0)
    }

    /// A restore numbers the rows of a table whose key is down itself: ids past the sequence's end are a
    /// database error (exit 1), as `nextval` would have been, and nothing is imported.
    @Test("a restore whose events would take ids past the end of their sequence is refused and changes nothing")
    func idsPastTheSequenceAreRefused() async throws {
        let sandbox = try await Sandbox.withPostgresStore("habits")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let local = ["--store", "local.sqlite"]
        #expect(try await sandbox.run(arguments: ["init", "--profile", "habits"] + local).status == 0)
        try sandbox.write(
            "events.ndjson",
            (0..<3).map { #"{"user":"u","action":"habit_completed","at":"2026-10-01T10:00:00.000Z","id":"e\#($0)"}"# }
                .joined(separator: "\n") + "\n")
        #expect(
            try await sandbox.run(arguments: ["track", "--from", "events.ndjson", "--create-users", "--quiet"] + local)
                .status == 0)
        #expect(try await sandbox.run(arguments: ["backup", "export", "u", "--out", "u.gmbackup"] + local).status == 0)
        let schema = sandbox.postgresSchema
        let psql = "psql -X -At -d '\(sandbox.postgresURI)'"
        let moved = try await sandbox.shell(
            "\(psql) -c \"SELECT setval(pg_get_serial_sequence('\(schema).events', 'id'), 9223372036854775806)\"")
        #expect(moved.status == 0, "\(moved.stderr)")
        let indexes = try await Self.indexes(of: schema, uri: sandbox.postgresURI, in: sandbox)

        let refused = try await sandbox.run("backup", "import", "u.gmbackup", "--json")
        #expect(refused.status == 1, "\(refused.stdout)\(refused.stderr)")
        #expect(refused.errorJSON["code"] as? String == "database_error")
        let message = refused.errorJSON["message"] as? String ?? ""
        #expect(
            message.contains("the id sequence of events") && message.hasSuffix("nothing was imported"), "\(message)")
        let counts = try await sandbox.shell(
            "\(psql) -c 'SELECT (SELECT count(*) FROM \(schema).users) + (SELECT count(*) FROM \(schema).events)'")
        #expect(counts.stdout == "0\n", "\(counts.stdout)\(counts.stderr)")
        #expect(try await Self.indexes(of: schema, uri: sandbox.postgresURI, in: sandbox) == indexes)
    }

    @Test(
        "a restore loads the usage ledger with its totals' triggers off, then builds the totals exact and turns them on"
    )
    func ledgerTotalsAfterARestore() async throws {
        let sandbox = try await Sandbox.withPostgresStore("voice")
        let local = ["--store", "local.sqlite"]
        #expect(try await sandbox.run(arguments: ["init", "--profile", "voice"] + local).status == 0)
        let users = (0..<3).map { #"{"user":"u\#($0)","action":"app_opened","at":"2026-10-01T10:00:00.000Z"}"# }
        try sandbox.write("users.ndjson", users.joined(separator: "\n") + "\n")
        #expect(
            try await sandbox.run(arguments: ["track", "--from", "users.ndjson", "--create-users", "--quiet"] + local)
                .status == 0)
        // Uses on two days and in two months, so each kind of total has more than one bucket.
        for (user, day, amount) in [
            ("u0", "2026-10-01", "12.5"), ("u0", "2026-10-02", "0.25"), ("u1", "2026-11-01", "3"),
        ] {
            sandbox.environment["GUESTMODE_NOW"] = "\(day)T12:00:00Z"
            let used = try await sandbox.run(arguments: ["meter", "use", user, "api_minutes", amount] + local)
            #expect(used.status == 0, "\(used.stderr)")
        }
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-02T09:00:00Z"
        let exported = try await sandbox.run(arguments: ["backup", "export", "--all", "--out", "all.gmbackup"] + local)
        #expect(exported.status == 0, "\(exported.stderr)")
        // Signed by the SQLite store's deployment key: the ledger is taken only when trusted.
        _ = try await Self.restore("all.gmbackup", in: sandbox, "--trust-unsigned")
        let totals = try await sandbox.shell(
            """
            psql -X -At -d '\(sandbox.postgresURI)' -c "SELECT user_id || ' ' || span || ' ' || bucket || ' ' || millionths
              FROM \(sandbox.postgresSchema).meter_totals ORDER BY 1"
            """)
        #expect(
            totals.stdout.split(separator: "\n") == [
                "u0 day 2026-10-01 12500000", "u0 day 2026-10-02 250000", "u0 month 2026-10 12750000",
                "u1 day 2026-11-01 3000000", "u1 month 2026-11 3000000",
            ], "\(totals.stdout)\(totals.stderr)")
        #expect(try await sandbox.run("db", "check").status == 0)
        // A use after the restore moves the total it belongs to.
        #expect(try await sandbox.run("meter", "use", "u1", "api_minutes", "1.5").status == 0)
        let status = try await sandbox.run("meter", "status", "u1", "api_minutes", "--json")
        #expect(
            ((status.json as? [[String: Any]])?.first?["used"] as? NSNumber)?.doubleValue == 4.5, "\(status.stdout)")
        #expect(try await sandbox.run("db", "check").status == 0)
    }

    @Test(
        "a repeated record, refused by the table's key after both rows were held back, is reported at its line",
        arguments: [
            // Both rows in the first batch.
            ("duplicate-row", 2),
            // In the second batch of 1,000, whose answer is read only once the third has filled.
            ("duplicate-row-far", 1250),
        ])
    func heldBackRowRefusedAtItsLine(kind: String, line: Int) async throws {
        let refused = try await Self.importRefused(kind, code: "duplicate_row", checking: "records")
        let message = refused.imported.errorJSON["message"] as? String ?? ""
        #expect(message.contains("line \(line) of data/records/000001.ndjson"), "\(message)")
    }

    /// Into a store without users the plain indexes are built after the
    /// rows and the keys are held row by row: a repeated key of a history
    /// table is reported at its own row, before what the rows' comparison
    /// finds only at the end (a counter's total, its events' count).
    @Test(
        "a repeated key of a history table is reported at its row, before the comparison at the end, and changes nothing",
        arguments: [
            ("duplicate-counter", "counters"),
            // The total of the repeated counter is wrong too, which only the comparison at the end finds.
            ("duplicate-counter-disagreeing", "counters"),
            // A unique index, not a key: the events' idempotency keys. The counter disagrees too.
            ("duplicate-event-key", "events"),
        ])
    func repeatedKeyRefusedAtItsRow(kind: String, table: String) async throws {
        let refused = try await Self.importRefused(kind, code: "duplicate_row", checking: table)
        let message = refused.imported.errorJSON["message"] as? String ?? ""
        #expect(message.contains("line 2 of data/\(table)/000001.ndjson"), "\(message)")
        // The same store takes the archive it was made from.
        let good = try await refused.sandbox.run(
            arguments: refused.store + ["backup", "import", "attacker.tar.gz", "--json"])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(try await Self.indexes(of: refused.schema, uri: refused.uri, in: refused.sandbox) == refused.indexes)
    }

    /// The indexes and keys dropped for the load are sent to be built once
    /// the last row is in, while the rows are checked against each other: a
    /// disagreement found then still rolls back the rows and the drops.
    @Test("a counter that disagrees with its events, found while the indexes are being built, changes nothing")
    func crossRowRefusalWhileIndexesAreBuilt() async throws {
        let refused = try await Self.importRefused("counters-disagree", code: "inconsistent_rows", checking: "events")
        // The same store takes a good archive afterwards, and builds its indexes and keys again.
        let good = try await refused.sandbox.run(
            arguments: refused.store + ["backup", "import", "attacker.tar.gz", "--json"])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(
            try await Self.indexes(of: refused.schema, uri: refused.uri, in: refused.sandbox) == refused.indexes)
    }

    /// Imports the hostile archive `kind` into a fresh schema and expects it
    /// refused with `code`, no users and no rows of `table` left, and the
    /// schema's indexes and keys as they were.
    static func importRefused(
        _ kind: String, code: String, checking table: String
    ) async throws -> (
        sandbox: Sandbox, uri: String, schema: String, store: [String], indexes: String, imported: Sandbox.Result
    ) {
        let (sandbox, victim, _) = try await HostileArchiveTests.setUp()
        let name = try await HostileArchiveTests.make(kind, victim: victim, in: sandbox)
        let uri = try #require(ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"])
        let schema = "e2e_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let store = ["--store", uri, "--schema", schema]
        #expect(try await sandbox.run(arguments: ["init", "--profile", "voice"] + store).status == 0)
        let indexes = try await Self.indexes(of: schema, uri: uri, in: sandbox)
        let imported = try await sandbox.run(arguments: store + ["backup", "import", name, "--json"])
        #expect(imported.status == 65, "\(imported.stderr)")
        #expect(imported.errorJSON["code"] as? String == code, "\(imported.stderr)")
        let left = try await sandbox.shell(
            "psql -X -At -d '\(uri)' -c 'SELECT (SELECT count(*) FROM \(schema).users) + (SELECT count(*) FROM \(schema).\(table))'"
        )
        #expect(left.stdout == "0\n", "\(left.stdout)\(left.stderr)")
        #expect(try await Self.indexes(of: schema, uri: uri, in: sandbox) == indexes, "the refusal brings them back")
        return (sandbox, uri, schema, store, indexes, imported)
    }

    /// Imports `archive` into the sandbox's PostgreSQL store, which holds no user yet, and checks that the
    /// indexes, keys and triggers the restore dropped or turned off while the rows went in are back.
    static func restore(_ archive: String, in sandbox: Sandbox, _ options: String...) async throws -> Sandbox.Result {
        let indexes = try await indexes(of: sandbox.postgresSchema, uri: sandbox.postgresURI, in: sandbox)
        let imported = try await sandbox.run(arguments: ["backup", "import", archive] + options)
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(try await Self.indexes(of: sandbox.postgresSchema, uri: sandbox.postgresURI, in: sandbox) == indexes)
        return imported
    }

    /// Every index, key and constraint of `schema` with its definition, every column that may not be NULL,
    /// and every trigger with whether it is on.
    static func indexes(of schema: String, uri: String, in sandbox: Sandbox) async throws -> String {
        let listed = try await sandbox.shell(
            """
            psql -X -At -d '\(uri)' -c "SELECT indexname || ' ' || indexdef FROM pg_indexes WHERE schemaname = '\(schema)'
              UNION ALL SELECT c.conrelid::regclass || ' ' || c.conname || ' ' || pg_get_constraintdef(c.oid)
              FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
              WHERE n.nspname = '\(schema)'
              UNION ALL SELECT table_name || '.' || column_name || ' NOT NULL' FROM information_schema.columns
              WHERE table_schema = '\(schema)' AND is_nullable = 'NO'
              UNION ALL SELECT t.tgrelid::regclass || ' trigger ' || t.tgname || ' ' || t.tgenabled::text FROM pg_trigger t
              JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = '\(schema)' AND NOT t.tgisinternal ORDER BY 1"
            """)
        #expect(listed.status == 0, "\(listed.stderr)")
        for expected in [
            "events_user_at", "FOREIGN KEY", "counters_pkey PRIMARY KEY", "events_pkey PRIMARY KEY (id)",
            "events_idempotency",
            "trigger meter_totals_add O",
        ] {
            #expect(listed.stdout.contains(expected), "\(listed.stdout)")
        }
        return listed.stdout
    }
}
