import Foundation
import GRDB
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModePostgres
@testable import GuestModeSQLite

/// A value planted by hand in one column of one table, and the store call
/// that reads it. Both backends must refuse it as a corrupt store, never
/// read it as a default.
struct PlantedValue: CustomStringConvertible, Sendable {
    let table: String
    let column: String
    /// The SQL literal planted in SQLite, whose columns hold any type.
    let sqlite: String
    /// The SQL literal planted in PostgreSQL, whose typed columns refuse
    /// text where a number belongs: there the bad value is a NULL where the
    /// schema (relaxed for the test) forbids one.
    let postgres: String
    let read: @Sendable (any GuestStore, Profile) throws -> Void

    var description: String { "\(table).\(column) = \(sqlite) / \(postgres)" }

    init(
        _ table: String, _ column: String, _ sqlite: String, postgres: String? = nil,
        read: @escaping @Sendable (any GuestStore, Profile) throws -> Void
    ) {
        self.table = table
        self.column = column
        self.sqlite = sqlite
        self.postgres = postgres ?? sqlite
        self.read = read
    }
}

private let user: @Sendable (any GuestStore, Profile) throws -> Void = { store, profile in
    _ = try GuestMode(profile: profile, store: store).user("u")
}
private let users: @Sendable (any GuestStore, Profile) throws -> Void = { store, profile in
    _ = try GuestMode(profile: profile, store: store).users(matching: UserFilter(), now: day(3))
}
private let facts: @Sendable (any GuestStore, Profile) throws -> Void = { store, profile in
    _ = try GuestMode(profile: profile, store: store).promptHistory(user: "u")
}
private let meter: @Sendable (any GuestStore, Profile) throws -> Void = { store, profile in
    _ = try GuestMode(profile: profile, store: store).meterStatus(
        user: "u", meter: profile.meters[0].name, now: day(2, hour: 18))
}
/// A retried use reads the ledger row its key recorded (the status reads kept totals, which
/// `db check` compares with the ledger).
private let retriedUse: @Sendable (any GuestStore, Profile) throws -> Void = { store, profile in
    _ = try GuestMode(profile: profile, store: store).useMeter(
        user: "u", meter: profile.meters[0].name, amount: MeterAmount(units: 1), key: "use-1", now: day(2, hour: 18))
}
private let plans: @Sendable (any GuestStore, Profile) throws -> Void = { store, profile in
    _ = try GuestMode(profile: profile, store: store).plans(user: "u", now: day(2))
}
/// The tier reads only the grants that may be in force: one whose end or revocation is not in the store's
/// form is read, whatever it compares to.
private let tier: @Sendable (any GuestStore, Profile) throws -> Void = { store, profile in
    _ = try GuestMode(profile: profile, store: store).tier(user: "u", now: day(2, hour: 18))
}
/// The key the fixture holds, read as a served request reads it: by its secret's hash.
private let serverKey: @Sendable (any GuestStore, Profile) throws -> Void = { store, profile in
    _ = try GuestMode(profile: profile, store: store).serverKey(authenticating: plantedKeySecret)
}
private let meterGrants: @Sendable (any GuestStore, Profile) throws -> Void = { store, profile in
    _ = try GuestMode(profile: profile, store: store).meterGrants(user: "u", meter: nil, now: day(2))
}
let plantedKeySecret = GuestMode.serverKeyPrefix + "planted"
private let journal: @Sendable (any GuestStore, Profile) throws -> Void = { store, profile in
    _ = try GuestMode(profile: profile, store: store).journal(1)
}

/// Every column a store call decodes into a time, an enumeration or a
/// number, with the call that decodes it.
let plantedValues: [PlantedValue] = [
    PlantedValue("users", "state", "'banned'", read: user),
    PlantedValue("users", "state", "'banned'", read: users),
    PlantedValue("users", "created_at", "'yesterday'", read: user),
    PlantedValue("users", "created_at", "'yesterday'", read: users),
    PlantedValue("users", "last_seen_at", "'yesterday'", read: users),
    PlantedValue("users", "last_seen_at", "'yesterday'", read: user),
    PlantedValue("users", "last_seen_at", "'2026-13-45T99:00:00.000Z'", read: user),
    PlantedValue("users", "linked_at", "'soon'", read: user),
    PlantedValue("users", "prompt_state", "'confused'", read: facts),
    PlantedValue("users", "prompt_state", "'confused'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).resetPrompts(user: "u", now: day(3))
    },
    PlantedValue("users", "created_at", "'yesterday'", read: facts),
    PlantedValue("identities", "linked_at", "'yesterday'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).details(user: "u", now: day(3))
    },
    PlantedValue("credentials", "created_at", "'yesterday'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).verifyAnonymousCredentials(
            username: "anon", secret: "hunter2", now: day(3))
    },
    PlantedValue("credentials", "created_at", "'yesterday'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).details(user: "u", now: day(3))
    },
    PlantedValue("upgrade_locks", "started_at", "'yesterday'") { store, profile in
        do {
            // A minute after the seeded lock was taken, so it still holds.
            _ = try GuestMode(profile: profile, store: store).beginLink(
                LinkRequest(user: "u", provider: "google", subject: "s2", email: nil),
                now: day(2).addingTimeInterval(60))
        } catch let error as GuestModeError where error.code == .upgradeInProgress {}
    },
    PlantedValue("events", "at", "'yesterday'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).events(user: "u", matching: EventQuery())
    },
    PlantedValue("events", "count", "'many'", postgres: "NULL") { store, profile in
        _ = try GuestMode(profile: profile, store: store).events(user: "u", matching: EventQuery())
    },
    PlantedValue("counters", "total", "'lots'", postgres: "NULL") { store, profile in
        _ = try GuestMode(profile: profile, store: store).counters(user: "u")
    },
    PlantedValue("counters", "total", "'lots'", postgres: "NULL") { store, profile in
        _ = try GuestMode(profile: profile, store: store).track(
            TrackedEvent(user: "u", action: profile.actions[0], at: day(3)), now: day(3))
    },
    PlantedValue("users", "created_at", "'yesterday'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).funnelReport(ReportPeriod())
    },
    PlantedValue("users", "linked_at", "'soon'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).funnelReport(ReportPeriod())
    },
    PlantedValue("users", "state", "'banned'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).experimentsReport(ReportPeriod())
    },
    PlantedValue("prompt_outcomes", "outcome", "'shrugged'") { store, _ in
        _ = try store.read { try $0.promptFacts(of: "u") }
    },
    // A decision reads only some outcomes, the latest of each context among them, as SQLite holds them.
    PlantedValue("prompt_outcomes", "outcome", "'shrugged'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).explainPrompt(user: "u", trigger: nil, now: day(3))
    },
    PlantedValue("prompt_outcomes", "at", "'yesterday'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).explainPrompt(user: "u", trigger: nil, now: day(3))
    },
    PlantedValue("users", "prompt_state", "'confused'") { store, _ in
        _ = try store.read { try $0.promptFacts(of: "u") }
    },
    PlantedValue("counters", "total", "'lots'", postgres: "NULL", read: facts),
    PlantedValue("records", "created_at", "'yesterday'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).record(user: "u", collection: "recipes", key: "r1")
    },
    PlantedValue("records", "updated_at", "'yesterday'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).records(user: "u", collection: "recipes")
    },
    PlantedValue("meter_usage", "amount", "'lots'", postgres: "NULL", read: retriedUse),
    PlantedValue("plans", "granted_at", "'yesterday'", read: plans),
    PlantedValue("plans", "ends_at", "'later'", read: plans),
    PlantedValue("plans", "ends_at", "'later'", read: meter),
    PlantedValue("plans", "ends_at", "'1999'", read: tier),
    PlantedValue("plans", "trial_ends_at", "'1999'", read: tier),
    PlantedValue("plans", "revoked_at", "'1999'", read: tier),
    PlantedValue("prompt_outcomes", "outcome", "'shrugged'", read: facts),
    PlantedValue("prompt_outcomes", "at", "'yesterday'", read: facts),
    PlantedValue("prompt_outcomes", "outcome", "'shrugged'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).unlink(user: "u", provider: "apple", now: day(3))
    },
    PlantedValue("experiment_assignments", "assigned_at", "'yesterday'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).assignExperiments(
            user: "u", named: "auth_prompts", now: day(3))
    },
    PlantedValue("outbox", "attempts", "'many'", postgres: "NULL") { store, profile in
        _ = try GuestMode(profile: profile, store: store).backupQueue()
    },
    PlantedValue("outbox", "queued_at", "'yesterday'") { store, profile in
        var queuing = profile
        queuing.backup.queuesOnChange = true
        _ = try GuestMode(profile: queuing, store: store).recordPrompt(
            .shown, context: "first_recipe_success", user: "u", now: day(3))
    },
    PlantedValue("user_flags", "set_at", "'yesterday'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).explainPrompt(user: "u", trigger: nil, now: day(3))
    },
    // The time of a prompt rule's last event, read by SQLite's C API (bench/results.md, "Serving, round 8").
    PlantedValue("events", "at", "'yesterday'") { store, _ in
        _ = try store.read { try $0.lastEventTime(of: "u", action: "app_opened") }
    },
    PlantedValue("server_keys", "created_at", "'yesterday'", read: serverKey),
    PlantedValue("server_keys", "revoked_at", "'soon'", read: serverKey),
    PlantedValue("meter_grants", "granted_at", "'yesterday'", read: meterGrants),
    PlantedValue("meter_grants", "expires_at", "'later'", read: meterGrants),
    PlantedValue("meter_grants", "granted_at", "'yesterday'", read: meter),
    PlantedValue("migration_journals", "started_at", "'yesterday'", read: journal),
    PlantedValue("migration_journals", "finished_at", "'yesterday'", read: journal),
    PlantedValue("migration_steps", "finished_at", "'yesterday'", read: journal),
    PlantedValue("migration_steps", "rows", "'some'", postgres: "NULL", read: journal),
    PlantedValue("migration_journals", "kind", "'teleport'", read: journal),
    PlantedValue("migration_journals", "status", "'paused'", read: journal),
    PlantedValue("migration_steps", "status", "'halfway'", read: journal),
    PlantedValue("conflict_archive", "updated_at", "'yesterday'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).archivedConflicts(user: "u")
    },
    PlantedValue("conflict_archive", "archived_at", "'yesterday'") { store, profile in
        _ = try GuestMode(profile: profile, store: store).archivedConflicts(user: nil)
    },
]

extension StoreBackend {
    /// Runs `sql` on the store's own database, outside guestmode, as a
    /// person with sqlite3 or psql would.
    func executeRaw(_ sql: String, on store: any GuestStore) throws {
        switch self {
        case .sqlite, .sqlitePool:
            guard let sqlite = store as? SQLiteStore else { throw FixtureError.unsupported(self) }
            try sqlite.database.writer.writeWithoutTransaction { db in try db.execute(sql: sql) }
        case .postgres:
            guard let postgres = store as? PostgresStore else { throw FixtureError.unsupported(self) }
            _ = try postgres.write { connection in try connection.execute(sql) }
        }
    }

    /// Plants `value` with the store's own checks lifted: SQLite's CHECK
    /// constraints are ignored and PostgreSQL's column is made to take it.
    func plant(_ value: PlantedValue, on store: any GuestStore) throws {
        switch self {
        case .sqlite, .sqlitePool:
            try executeRaw(
                """
                PRAGMA ignore_check_constraints = ON;
                UPDATE \(value.table) SET \(value.column) = \(value.sqlite);
                PRAGMA ignore_check_constraints = OFF;
                """, on: store)
        case .postgres:
            var sql = ""
            if value.table == "users" && value.column == "state" {
                sql += "ALTER TABLE users DROP CONSTRAINT users_state_check;"
            }
            if value.postgres == "NULL" {
                sql += "ALTER TABLE \(value.table) ALTER COLUMN \(value.column) DROP NOT NULL;"
            }
            try executeRaw(sql + "UPDATE \(value.table) SET \(value.column) = \(value.postgres);", on: store)
        }
    }
}

@Suite("Strict decoding: a value planted by hand is a corrupt store, never a default")
struct StrictDecodingTests {
    /// One user with a row in every table guestmode decodes, all valid;
    /// every generated id is 1.
    static func seededStore(_ backend: StoreBackend) throws -> (store: any GuestStore, profile: Profile) {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        let (t1, t2, t3) = (Timestamp.format(day(1)), Timestamp.format(day(2)), Timestamp.format(day(30)))
        try backend.executeRaw(
            """
            INSERT INTO users (id, device, state, prompt_state, created_at, last_seen_at, linked_at)
                VALUES ('u', NULL, 'linked', 'authenticated', '\(t1)', '\(t2)', '\(t2)');
            INSERT INTO identities (provider, subject, user_id, email, linked_at) VALUES ('apple', 's1', 'u', NULL, '\(t2)');
            INSERT INTO credentials (user_id, username, secret_hash, created_at)
                VALUES ('u', 'anon', 'pbkdf2-sha256$1$00$00', '\(t1)');
            INSERT INTO upgrade_locks (user_id, provider, started_at) VALUES ('u', 'google', '\(t2)');
            INSERT INTO events (user_id, action, at, count) VALUES ('u', 'app_opened', '\(t2)', 1);
            INSERT INTO counters (user_id, action, total) VALUES ('u', 'app_opened', 1);
            INSERT INTO records (owner_id, collection, key, data, created_at, updated_at)
                VALUES ('u', 'recipes', 'r1', '{}', '\(t1)', '\(t2)');
            INSERT INTO meter_usage (user_id, meter, amount, at, idempotency_key)
                VALUES ('u', 'video_generations', 1, '\(t2)', 'use-1');
            INSERT INTO plans (user_id, plan, granted_at, ends_at) VALUES ('u', 'premium', '\(t1)', '\(t3)');
            INSERT INTO prompt_outcomes (user_id, context, outcome, at)
                VALUES ('u', 'first_recipe_success', 'shown', '\(t2)');
            INSERT INTO experiment_assignments (user_id, experiment, variant, assigned_at)
                VALUES ('u', 'auth_prompts', 'control', '\(t1)');
            INSERT INTO outbox (user_id, queued_at, attempts) VALUES ('u', '\(t2)', 0);
            INSERT INTO user_flags (user_id, flag, set_at) VALUES ('u', '\(PromptTrigger.flagPrefix)daily_limit_reached', '\(t2)');
            INSERT INTO server_keys (name, scope, secret_hash, created_at)
                VALUES ('planted', 'user-data', '\(ServerSecret.hash(plantedKeySecret))', '\(t1)');
            INSERT INTO meter_grants (user_id, meter, amount, granted_at, expires_at)
                VALUES ('u', 'video_generations', 5, '\(t1)', '\(t3)');
            INSERT INTO migration_journals (kind, source_id, target_id, status, started_at, finished_at)
                VALUES ('merge', 'g', 'u', 'done', '\(t2)', '\(t2)');
            INSERT INTO migration_steps (journal_id, position, name, status, rows, finished_at)
                VALUES (1, 1, 'recipes', 'done', 0, '\(t2)');
            INSERT INTO conflict_archive (journal_id, owner_id, collection, key, data, updated_at, reason, archived_at)
                VALUES (1, 'u', 'recipes', 'r1', '{}', '\(t1)', 'lost', '\(t2)');
            """, on: store)
        return (store, profile)
    }

    @Test("every read of the table-driven cases succeeds on the valid fixture", arguments: StoreBackend.allCases)
    func theFixtureReadsCleanly(backend: StoreBackend) throws {
        let (store, profile) = try Self.seededStore(backend)
        for value in plantedValues {
            do {
                try value.read(store, profile)
            } catch {
                Issue.record("\(value): \(error)")
            }
        }
    }

    @Test(
        "a planted bad value is corrupt_store", arguments: StoreBackend.allCases, plantedValues.indices.map { $0 })
    func aPlantedValueIsACorruptStore(backend: StoreBackend, index: Int) throws {
        let value = plantedValues[index]
        let (store, profile) = try Self.seededStore(backend)
        try backend.plant(value, on: store)
        do {
            try value.read(store, profile)
            Issue.record("\(value) was read as if valid")
        } catch let error as GuestModeError {
            #expect(error.code == .corruptStore, "\(value): \(error.message)")
            #expect(error.kind == .badData, "\(value)")
            #expect(!error.message.contains("pbkdf2"), "the message shows other columns of the row")
        }
    }

    /// The engine adds usage up: amounts planted past what one can hold, and
    /// a total past it, read as the largest amount (an exhausted meter), on
    /// every backend alike; a negative one as nothing.
    @Test(arguments: StoreBackend.allCases)
    func usagePastTheLargestAmountReadsAsTheLargest(backend: StoreBackend) throws {
        let (store, profile) = try Self.seededStore(backend)
        let engine = GuestMode(profile: profile, store: store)
        let meter = profile.meters[0].name
        let at = Timestamp.format(day(2))
        try backend.executeRaw(
            """
            INSERT INTO meter_usage (user_id, meter, amount, at) VALUES ('u', '\(meter)', -5, '\(at)');
            """, on: store)
        #expect(
            try engine.meterStatus(user: "u", meter: meter, now: day(2, hour: 18)).used
                == MeterAmount(millionths: 1_000_000))
        try backend.executeRaw(
            """
            INSERT INTO meter_usage (user_id, meter, amount, at) VALUES ('u', '\(meter)', 9000000000000, '\(at)');
            INSERT INTO meter_usage (user_id, meter, amount, at) VALUES ('u', '\(meter)', 1e300, '\(at)');
            """, on: store)
        #expect(try engine.meterStatus(user: "u", meter: meter, now: day(2, hour: 18)).used == .largest)
    }
}
