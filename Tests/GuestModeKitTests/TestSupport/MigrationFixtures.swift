import Foundation
import GRDB
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModePostgres
@testable import GuestModeSQLite

/// Fixtures for the migration, transfer, outbox and profile-upgrade
/// conformance tests. Data is seeded through the engine's public use cases
/// where one exists, and through the backend directly only for states no
/// use case creates (records of the guest owner, an outbox entry whose user
/// is gone).
extension StoreBackend {
    /// An engine over `store`, used only to seed fixtures and to read state
    /// back through public use cases.
    func engine(_ store: any GuestStore, _ profile: Profile) throws -> GuestMode {
        GuestMode(profile: profile, store: store)
    }

    /// Records written before any user existed, owned by `owner`.
    func seedOwnerlessRecords(
        _ store: any GuestStore, owner: String, _ records: [(collection: String, key: String, data: String)],
        at time: Date
    ) throws {
        switch self {
        case .sqlite, .sqlitePool:
            guard let sqlite = store as? SQLiteStore else { throw FixtureError.unsupported(self) }
            try sqlite.write { db in
                for record in records {
                    try db.execute(
                        sql: "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?)",
                        arguments: [
                            owner, record.collection, record.key, record.data, Timestamp.format(time),
                            Timestamp.format(time),
                        ])
                }
            }
        case .postgres:
            guard let postgres = store as? PostgresStore else { throw FixtureError.unsupported(self) }
            try postgres.write { connection in
                for record in records {
                    try connection.execute(
                        "INSERT INTO records VALUES ($1, $2, $3, $4, $5, $6)",
                        [
                            PostgresValue(owner), PostgresValue(record.collection), PostgresValue(record.key),
                            PostgresValue(record.data), PostgresValue(time), PostgresValue(time),
                        ])
                }
            }
        }
    }

    /// An outbox entry for a user id the store does not hold (deleted
    /// behind the outbox's back, e.g. by an import that replaced users).
    func seedOrphanOutboxEntry(_ store: any GuestStore, userID: String, queuedAt: Date) throws {
        switch self {
        case .sqlite, .sqlitePool:
            guard let sqlite = store as? SQLiteStore else { throw FixtureError.unsupported(self) }
            try sqlite.write { db in
                try db.execute(
                    sql: "INSERT INTO outbox (user_id, queued_at, attempts) VALUES (?, ?, 0)",
                    arguments: [userID, Timestamp.format(queuedAt)])
            }
        case .postgres:
            guard let postgres = store as? PostgresStore else { throw FixtureError.unsupported(self) }
            _ = try postgres.write { connection in
                try connection.execute(
                    "INSERT INTO outbox (user_id, queued_at, attempts) VALUES ($1, $2, 0)",
                    [PostgresValue(userID), PostgresValue(queuedAt)])
            }
        }
    }
}

enum FixtureError: Error {
    case unsupported(StoreBackend)
}

/// Everything a test can observe of a store through its public API, to
/// show that a refused or failed call changed nothing.
func observableState(_ engine: GuestMode) throws -> String {
    var lines: [String] = []
    lines += try engine.store.tableCounts().sorted { $0.key < $1.key }.map { "table \($0.key) \($0.value)" }
    for summary in try engine.users(matching: UserFilter(), now: day(30)) {
        let user = try engine.user(summary.id)
        lines.append(
            "user \(user.id) \(user.state.rawValue) \(Timestamp.format(user.createdAt)) \(Timestamp.format(user.lastSeenAt))"
        )
        for collection in engine.profile.collections {
            for record in try engine.records(user: user.id, collection: collection.name) {
                lines.append("  record \(record.collection)/\(record.key)=\(record.data)")
            }
        }
        for (action, total) in try engine.counters(user: user.id).sorted(by: { $0.key < $1.key }) {
            lines.append("  counter \(action)=\(total)")
        }
    }
    for journal in try engine.journals(involving: nil) {
        lines.append(
            "journal \(journal.id) \(journal.status) \(journal.error ?? "-") \(journal.steps.map { "\($0.name):\($0.status):\($0.rows)" })"
        )
    }
    for entry in try engine.store.outboxEntries() {
        lines.append(
            "outbox \(entry.userID) \(Timestamp.format(entry.queuedAt)) \(entry.attempts) \(entry.lastError ?? "-") \(entry.nextAttemptAt.map(Timestamp.format) ?? "-")"
        )
    }
    return lines.joined(separator: "\n")
}

/// A recipes store with an account and a guest sharing the keys
/// `recipes/pasta` (keep-both) and `preferences/diet` (newest wins, the
/// guest's is newer), and activity on both.
func seededTransfer(
    _ backend: StoreBackend
) throws -> (store: any GuestStore, engine: GuestMode, guest: String, account: String) {
    let (store, profile) = try backend.makeStore(profile: "recipes")
    let engine = try backend.engine(store, profile)
    let account = try engine.createGuest(device: nil, now: day(1)).id
    _ = try engine.link(user: account, provider: "google", subject: "g-1", email: nil, now: day(1))
    _ = try engine.putRecord(
        user: account, collection: "recipes", key: "pasta", json: #"{"by":"account"}"#, now: day(1))
    _ = try engine.putRecord(
        user: account, collection: "preferences", key: "diet", json: #"{"diet":"omnivore"}"#, now: day(1))
    _ = try engine.track(TrackedEvent(user: account, action: "app_opened", at: day(1), count: 3), now: day(1))
    let guest = try engine.createGuest(device: nil, now: day(2)).id
    for (collection, key, data) in [
        ("profile", "me", #"{"name":"Ana"}"#), ("recipes", "pasta", #"{"by":"guest"}"#),
        ("recipes", "soup", #"{"by":"guest"}"#),
        ("photos", "p1", #"{"url":"p1"}"#), ("preferences", "diet", #"{"diet":"vegan"}"#),
    ] {
        _ = try engine.putRecord(user: guest, collection: collection, key: key, json: data, now: day(2))
    }
    _ = try engine.track(
        TrackedEvent(user: guest, action: "app_opened", at: day(2), count: 2, idempotencyKey: "launch-1"), now: day(2))
    _ = try engine.track(TrackedEvent(user: guest, action: "recipe_created", at: day(2), count: 2), now: day(2))
    return (store, engine, guest, account)
}

/// The records of `user` in every collection, as `collection/key=data`.
func recordLines(_ engine: GuestMode, _ user: String) throws -> [String] {
    try engine.profile.collections.flatMap { collection in
        try engine.records(user: user, collection: collection.name).map { "\($0.collection)/\($0.key)=\($0.data)" }
    }
}

/// The code `body` failed with; nil when it did not fail or failed with another error type.
func errorCode(_ body: () throws -> Void) -> GuestModeError.Code? {
    do {
        try body()
        return nil
    } catch {
        return (error as? GuestModeError)?.code
    }
}
