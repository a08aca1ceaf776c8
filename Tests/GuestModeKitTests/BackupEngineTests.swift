import Foundation
import GRDB
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

private let archivesDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().appendingPathComponent("Fixtures/archives")

private let now = Timestamp.parse("2026-11-22T09:00:00Z")!

private func habitsEngine() throws -> GuestMode {
    try GuestMode.inMemory(
        profileText: try backupFixtureProfile(), origin: "habits.yaml", now: now)
}

private func temporaryDirectory() throws -> URL {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("guestmode-unit-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    return directory
}

/// Every row of every per-user table, in a comparable form, read through `BackupRowStore`.
private func contents(_ engine: GuestMode) throws -> [String: [[String: CellValue]]] {
    try BackupRowFixture.export(engine.store, guestOwner: engine.profile.guestOwner)
}

/// The rows of `table` whose `column` is `value`.
private func rows(
    _ engine: GuestMode, _ table: String, where column: String, is value: String
) throws
    -> [[String: CellValue]]
{
    try contents(engine)[table, default: []].filter { $0[column] == .text(value) }
}

@Suite struct BackupEngineTests {
    @Test(
        "v1 fixture archives still import, every format",
        arguments: ["v1-habits.gmbackup", "v1-habits.tar.gz", "v1-habits.zip"])
    func fixtures(name: String) throws {
        let path = archivesDirectory.appendingPathComponent(name).path
        let engine = try habitsEngine()
        let report = try engine.importBackup(
            from: path, onConflict: .fail, dryRun: false, trustUnsigned: true, now: now)
        #expect(report.formatVersion == 1)
        #expect(report.signature == .unsigned)
        #expect(report.added == ["u1", "u2", ""])
        #expect(report.rows.values.reduce(0, +) == 19)
        #expect(try rows(engine, "identities", where: "subject", is: "sub-1").map { $0["user_id"] } == [.text("u1")])
        #expect(
            try rows(engine, "events", where: "idempotency_key", is: "k1").map { $0["properties"] } == [
                .text(#"{"a":"b\n\"c"}"#)
            ])
        #expect(try rows(engine, "records", where: "key", is: "h0").map { $0["data"] } == [.text(#"{"name":"pre"}"#)])
        #expect(
            try rows(engine, "meter_usage", where: "idempotency_key", is: "m1").map { $0["amount"] } == [.real(1.5)])
        let verification = try BackupArchive.verify(path: path, full: true)
        #expect(verification.ok, "\(verification.errors)")
    }

    @Test("export then import into a fresh store reproduces every row")
    func roundTrip() throws {
        let source = try habitsEngine()
        _ = try source.importBackup(
            from: archivesDirectory.appendingPathComponent("v1-habits.gmbackup").path, onConflict: .fail, dryRun: false,
            trustUnsigned: true, now: now)
        let key = BackupKey.generate()
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        for format in ArchiveFormat.allCases {
            let path = directory.appendingPathComponent("all.\(format.fileExtension)").path
            let summary = try source.exportBackup(
                .all, to: path, format: format, level: format.levels.lowerBound, now: now, toolVersion: "test",
                signingKey: key)
            #expect(summary.users == 2)
            let target = try habitsEngine()
            let report = try target.importBackup(
                from: path, onConflict: .fail, dryRun: false, keys: BackupKeys(deployment: key), now: now)
            #expect(report.signature == .thisDeployment && report.skippedTables.isEmpty)
            #expect(try contents(target) == contents(source), "\(format)")
        }
    }

    @Test("a failed import leaves nothing behind, and a dry run writes nothing")
    func allOrNothing() throws {
        let engine = try habitsEngine()
        let path = archivesDirectory.appendingPathComponent("v1-habits.tar.gz").path
        let empty = try contents(engine)
        let dry = try engine.importBackup(from: path, onConflict: .fail, dryRun: true, now: now)
        #expect(dry.rows["users"] == 2)
        #expect(try contents(engine) == empty)
        // An identity of another user makes the import collide midway, after the users rows went in.
        var other = BackupRowFixture.user("other")
        other["created_at"] = .text("2026-01-01T00:00:00.000Z")
        try BackupRowFixture.load(
            [
                (BackupTable.all[0], other),
                (
                    try #require(BackupTable.named("identities")),
                    [
                        "provider": .text("apple"), "subject": .text("sub-1"), "user_id": .text("other"),
                        "email": .null,
                        "linked_at": .text("2026-01-01T00:00:00.000Z"),
                    ]
                ),
            ],
            into: engine.store)
        let before = try contents(engine)
        #expect {
            try engine.importBackup(from: path, onConflict: .fail, dryRun: false, trustUnsigned: true, now: now)
        } throws: { error in
            (error as? GuestModeError)?.code == .identityAlreadyExists
        }
        #expect(try contents(engine) == before)
    }

    @Test("a user id in the store that belongs to a different user is never overwritten")
    func differentUserSameID() throws {
        let engine = try habitsEngine()
        var u1 = BackupRowFixture.user("u1")
        u1["created_at"] = .text("2030-01-01T00:00:00.000Z")
        try BackupRowFixture.load([(BackupTable.all[0], u1)], into: engine.store)
        #expect {
            try engine.importBackup(
                from: archivesDirectory.appendingPathComponent("v1-habits.zip").path, onConflict: .replace,
                dryRun: false, now: now)
        } throws: { error in
            (error as? GuestModeError)?.code == .differentUser
        }
    }

    @Test("older archive formats are upgraded through the migration chain; newer ones are refused naming both versions")
    func migrationChain() throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // A made-up format 0: the profile as two header fields and a record's document in "payload".
        let header =
            #"{"format":"guestmode-backup","format_version":0,"tool_version":"0.0.1","profile_name":"habits","profile_version":1,"users":["old"],"created":"2025-01-01T00:00:00.000Z"}"#
        let users =
            #"{"id":"old","created_at":"2025-01-01T00:00:00.000Z","last_seen_at":"2025-01-01T00:00:00.000Z"}"# + "\n"
        let records =
            #"{"owner_id":"old","collection":"habits","key":"h1","payload":"{}","created_at":"2025-01-01T00:00:00.000Z","updated_at":"2025-01-01T00:00:00.000Z"}"#
            + "\n"
        let entries = [
            ("header.json", header, nil as String?, nil as Int?), ("data/users/000001.ndjson", users, "users", 1),
            ("data/records/000001.ndjson", records, "records", 1),
        ]
        let manifest = BackupManifest(
            formatVersion: 0,
            entries: entries.map {
                .init(
                    name: $0.0, size: Int64($0.1.utf8.count), sha256: StreamingSHA256.hex(of: Array($0.1.utf8)),
                    table: $0.2, rows: $0.3)
            },
            tables: ["users": 1, "records": 1])
        let path = directory.appendingPathComponent("old.gmbackup").path
        try AtomicFile.write(path: path) { descriptor in
            try ArchiveWriter.write(to: descriptor, path: path, format: .tarZstd, level: nil) { writer in
                for (name, text, _, _) in entries {
                    try Array(text.utf8).withUnsafeBytes {
                        try writer.addEntry(name: name, contents: $0, modified: now)
                    }
                }
                try Array(try BackupFormat.encoder().encode(manifest)).withUnsafeBytes {
                    try writer.addEntry(name: "manifest.json", contents: $0, modified: now)
                }
            }
        }
        let chain = ArchiveMigrationChain(
            current: 1,
            steps: [
                ArchiveMigration(
                    from: 0,
                    upgradeHeader: { header in
                        header["profile"] = [
                            "name": header.removeValue(forKey: "profile_name") as Any,
                            "version": header.removeValue(forKey: "profile_version") as Any,
                        ]
                    },
                    upgradeRow: { table, row in
                        if table == "records", let payload = row["payload"] {
                            row["payload"] = nil
                            row["data"] = payload
                        }
                    })
            ])
        let engine = try habitsEngine()
        #expect { try engine.importBackup(from: path, onConflict: .fail, dryRun: false, now: now) } throws: { error in
            (error as? GuestModeError)?.code == .archiveTooOld
        }
        let report = try engine.importBackup(
            from: path, onConflict: .fail, dryRun: false, limits: .standard, chain: chain, now: now)
        #expect(report.formatVersion == 0)
        #expect(try rows(engine, "records", where: "owner_id", is: "old").map { $0["data"] } == [.text("{}")])

        let newer = ArchiveMigrationChain(current: 1, steps: [])
        #expect { try newer.steps(from: 2, archive: "x.gmbackup") } throws: { error in
            let message = (error as? GuestModeError)?.message ?? ""
            return message.contains("version 2") && message.contains("up to 1")
        }
    }

    @Test(
        "names that are not plain relative paths are refused",
        arguments: [
            "/etc/passwd", "../x", "data/../x", "data//x", "./header.json", "data/x/", "", "data/\u{0}x", "dätä",
        ])
    func refusedNames(name: String) {
        #expect(ArchiveReader.nameProblem(name) != nil)
    }

    @Test func acceptedNames() {
        #expect(ArchiveReader.nameProblem("header.json") == nil)
        #expect(ArchiveReader.nameProblem("data/records/000001.ndjson") == nil)
    }

    @Test("enqueueing coalesces to one entry per user, keeps retry state, and moves queued_at forward")
    func enqueueCoalesces() throws {
        let engine = try habitsEngine()
        let user = try engine.createGuest(device: nil, now: now).id
        _ = try engine.putRecord(user: user, collection: "habits", key: "read", json: "{}", now: now)
        try engine.store.write { transaction in
            try transaction.setRetryState(
                of: user, attempts: 3, lastError: "offline", nextAttemptAt: now.addingTimeInterval(3600))
        }
        _ = try engine.putRecord(user: user, collection: "habits", key: "run", json: "{}", now: now)
        let entries = try engine.backupQueue()
        #expect(entries.count == 1)
        #expect(entries.first?.attempts == 3)
        #expect(entries.first?.nextAttemptAt == Timestamp.parse("2026-11-22T10:00:00.000Z"))
        #expect(entries.first?.queuedAt == Timestamp.parse("2026-11-22T09:00:00.001Z"))
    }

    @Test func retryDelayDoublesUpToAnHour() {
        #expect([1, 2, 3, 7, 20].map(GuestMode.retryDelay(afterAttempts:)) == [60, 120, 240, 3600, 3600])
    }

    @Test func userIDsBecomeSafeFileNames() {
        #expect(GuestMode.fileName(for: "u-1_A") == "u-1_A")
        #expect(GuestMode.fileName(for: "../etc") == "%2E%2E%2Fetc")
        #expect(GuestMode.fileName(for: "") == "%")
    }
}

/// The habits profile extended with what the backup fixtures hold rows of (Tests/Fixtures/profiles).
func backupFixtureProfile() throws -> String {
    let tests = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    return try String(
        contentsOf: tests.appendingPathComponent("Fixtures/profiles/habits-backup.yaml"), encoding: .utf8)
}
