import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// Rows for the backup conformance tests, written and read only through
/// `BackupRowStore`, so they hold for every backend.
enum BackupRowFixture {
    typealias Row = [String: CellValue]

    static func text(_ value: String) -> CellValue { .text(value) }
    static func time(_ day: Int, hour: Int = 12) -> CellValue {
        .text(Timestamp.format(GuestModeKitTests.day(day, hour: hour)))
    }

    static func user(_ id: String, created: Int = 1, state: String = "anonymous", linkedAt: CellValue = .null) -> Row {
        [
            "id": .text(id), "device": .null, "state": .text(state), "prompt_state": .text("anonymous"),
            "created_at": time(created), "last_seen_at": time(created), "linked_at": linkedAt,
        ]
    }

    /// Rows of `id` in every backup table, with surrogate ids from `base`.
    static func rows(of id: String, base: Int64) -> [(BackupTable, Row)] {
        func table(_ name: String) -> BackupTable {
            BackupTable.named(name) ?? BackupTable(name: name, ownerColumn: "user_id")
        }
        let owner = CellValue.text(id)
        return [
            (table("users"), user(id)),
            (
                table("identities"),
                [
                    "provider": .text("apple"), "subject": .text("sub-\(id)"), "user_id": owner, "email": .null,
                    "linked_at": time(2),
                ]
            ),
            (
                table("credentials"),
                [
                    "user_id": owner, "username": .text("name-\(id)"), "secret_hash": .text("sha256i2000$00$00"),
                    "created_at": time(1),
                ]
            ),
            (table("upgrade_locks"), ["user_id": owner, "provider": .text("google"), "started_at": time(2)]),
            (
                table("events"),
                [
                    "id": .integer(base), "user_id": owner, "action": .text("app_opened"), "at": time(1),
                    "count": .integer(2), "idempotency_key": .text("k-\(id)"), "properties": .text(#"{"a":"b\n\"c"}"#),
                ]
            ),
            (table("counters"), ["user_id": owner, "action": .text("app_opened"), "total": .integer(2)]),
            (
                table("records"),
                [
                    "owner_id": owner, "collection": .text("subscriptions"), "key": .text("netflix"),
                    "data": .text(#"{"price":9.99}"#), "created_at": time(1), "updated_at": time(2),
                ]
            ),
            (
                table("meter_usage"),
                [
                    "id": .integer(base), "user_id": owner, "meter": .text("minutes"), "amount": .real(1.5),
                    "at": time(1),
                    "idempotency_key": .null,
                ]
            ),
            (
                table("meter_warnings"),
                [
                    "user_id": owner, "meter": .text("minutes"), "period_start": time(1), "percent": .real(80),
                    "level": .text("warning"), "fired_at": time(1),
                ]
            ),
            (
                table("meter_grants"),
                [
                    "id": .integer(base), "user_id": owner, "meter": .text("minutes"), "amount": .real(30),
                    "granted_at": time(1), "expires_at": time(30), "revoked_at": .null,
                    "reason": .text("referral"), "idempotency_key": .text("referral-1"),
                ]
            ),
            (
                table("plans"),
                [
                    "id": .integer(base), "user_id": owner, "plan": .text("premium"), "granted_at": time(2),
                    "trial_ends_at": .null, "ends_at": time(30), "revoked_at": .null,
                ]
            ),
            (
                table("prompt_outcomes"),
                [
                    "id": .integer(base), "user_id": owner, "context": .text("guest_cap_reached"),
                    "outcome": .text("shown"),
                    "at": time(2),
                ]
            ),
            (
                table("experiment_assignments"),
                [
                    "user_id": owner, "experiment": .text("paywall"), "variant": .text("b"), "assigned_at": time(1),
                ]
            ),
            (
                table("outbox"),
                [
                    "user_id": owner, "queued_at": time(2), "attempts": .integer(1), "last_error": .text("offline"),
                    "next_attempt_at": time(3),
                ]
            ),
            (table("user_flags"), ["user_id": owner, "flag": .text("beta"), "set_at": time(1)]),
            (
                table("conflict_archive"),
                [
                    "id": .integer(base), "journal_id": .integer(7), "owner_id": owner,
                    "collection": .text("subscriptions"),
                    "key": .text("netflix"), "data": .text("{}"), "updated_at": time(1), "reason": .text("merge"),
                    "archived_at": time(2),
                ]
            ),
        ]
    }

    /// A record of the profile's guest owner, written before any user existed.
    static func guestOwnerRecord(_ owner: String) -> (BackupTable, Row) {
        (
            BackupTable.named("records") ?? BackupTable(name: "records", ownerColumn: "owner_id"),
            [
                "owner_id": .text(owner), "collection": .text("settings"), "key": .text("theme"), "data": .text("{}"),
                "created_at": time(1), "updated_at": time(1),
            ]
        )
    }

    /// Two users with a row in every table, and a guest-owner record.
    static func dataset(guestOwner: String) -> [(BackupTable, Row)] {
        rows(of: "u1", base: 1) + rows(of: "u2", base: 2) + [guestOwnerRecord(guestOwner)]
    }

    /// Writes `rows` in one committed import.
    static func load(_ rows: [(BackupTable, Row)], into store: any GuestStore) throws {
        try store.importBackupRows(dryRun: false) { writes throws in
            for (table, row) in rows { _ = try writes.insert(row, into: table) }
        }
    }

    /// Every row the selection exports, per table, as column → value.
    static func export(
        _ store: any GuestStore, _ selection: BackupSelection = .all, guestOwner: String = ""
    )
        throws -> [String: [Row]]
    {
        try store.readBackupRows(selection, guestOwner: guestOwner) { snapshot throws in
            var tables: [String: [Row]] = [:]
            for table in BackupTable.all {
                var rows: [Row] = []
                try snapshot.forEachRow(in: table) { columns, values in
                    rows.append(Dictionary(uniqueKeysWithValues: zip(columns, values)))
                }
                tables[table.name] = rows
            }
            return tables
        }
    }

    /// `rows` grouped per table, in order, for comparison with an export.
    static func grouped(_ rows: [(BackupTable, Row)]) -> [String: [Row]] {
        var tables = Dictionary(uniqueKeysWithValues: BackupTable.all.map { ($0.name, [Row]()) })
        for (table, row) in rows { tables[table.name, default: []].append(row) }
        return tables
    }
}

extension BackupRowImport {
    /// The fixtures' rows are dictionaries; a store takes each as a `BackupRow` of its columns in byte order.
    func insert(
        _ row: [String: CellValue], into table: BackupTable, ownerHasUsersRow: Bool = false
    ) throws -> BackupRowInsertion {
        try insert(BackupRow(row), into: table, ownerHasUsersRow: ownerHasUsersRow)
    }
}
