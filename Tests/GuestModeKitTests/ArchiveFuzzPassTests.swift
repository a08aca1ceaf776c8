import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// The short deterministic pass `make test` runs over what `make fuzz`
/// explores at length (Sources/ArchiveFuzzer): fixed seeds, a few hundred
/// mutations, each imported into a fresh store. An import either succeeds
/// or fails as bad data (exit 65); nothing traps, and an accepted archive
/// leaves a store every read still decodes.
@Suite struct ArchiveFuzzPassTests {
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz/corpus")
    static let now = Timestamp.parse("2030-01-01T00:00:00Z") ?? Date()

    static func engine() throws -> GuestMode {
        let root = corpus.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("Templates/voice.yaml"), encoding: .utf8)
        return try GuestMode.inMemory(profileText: text, now: now)
    }

    /// Imports `path` and checks the outcome is one the command line documents.
    static func importChecked(_ path: String, _ label: String) throws {
        let engine = try engine()
        do {
            let report = try engine.importBackup(from: path, onConflict: .replace, dryRun: false, now: now)
            // Accepted: every imported user still reads back without trapping.
            for user in report.added + report.replaced where !user.isEmpty {
                _ = try engine.counters(user: user)
                _ = try engine.user(user)
            }
            #expect(try (engine.store as? SQLiteStore)?.integrityProblems() ?? [] == [], "\(label)")
        } catch let error as GuestModeError {
            #expect(error.kind == .badData, "\(label): \(error.kind) \(error.message)")
        }
    }

    static func directory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "guestmode-fuzzpass-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    @Test("every committed seed imports or is refused as bad data")
    func seeds() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).sorted()
        #expect(names.count >= 25)
        for name in names {
            try Self.importChecked(Self.corpus.appendingPathComponent(name).path, name)
        }
    }

    @Test("300 byte-level mutations of the seeds (flips, cuts, splices) never trap")
    func byteMutations() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let seeds = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).sorted()
            .compactMap { name in
                FileManager.default.contents(atPath: Self.corpus.appendingPathComponent(name).path).map { (name, $0) }
            }
        var random = SplitMix64(state: 14)
        for round in 0..<300 {
            guard let (name, seed) = seeds.randomElement(using: &random), !seed.isEmpty else { continue }
            var bytes = [UInt8](seed)
            switch random.next() % 4 {
            case 0:
                for _ in 0..<(1 + random.next() % 4) {
                    let index = Int(random.next() % UInt64(bytes.count))
                    bytes[index] ^= UInt8(truncatingIfNeeded: 1 << (random.next() % 8))
                }
            case 1: bytes = Array(bytes.prefix(Int(random.next() % UInt64(bytes.count))))
            case 2:
                let from = Int(random.next() % UInt64(bytes.count))
                bytes.insert(
                    contentsOf: bytes[from..<min(bytes.count, from + 64)], at: Int(random.next() % UInt64(bytes.count)))
            default: bytes += bytes.prefix(Int(random.next() % 512))
            }
            let path = directory.appendingPathComponent("\(round)-\(name)").path
            #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
            try Self.importChecked(path, "round \(round) from \(name)")
        }
    }

    /// Rows of one voice user, as an export writes them.
    static let rows: [(String, [String: CellValue])] = [
        (
            "users",
            [
                "id": .text("u"), "device": .null, "state": .text("anonymous"), "prompt_state": .text("anonymous"),
                "created_at": .text("2026-01-01T00:00:00.000Z"), "last_seen_at": .text("2026-01-01T00:00:00.000Z"),
                "linked_at": .null,
            ]
        ),
        (
            "events",
            [
                "id": .integer(1), "user_id": .text("u"), "action": .text("command_spoken"),
                "at": .text("2026-01-01T00:00:00.000Z"), "count": .integer(2), "idempotency_key": .text("k"),
                "properties": .null,
            ]
        ),
        ("counters", ["user_id": .text("u"), "action": .text("command_spoken"), "total": .integer(2)]),
        (
            "records",
            [
                "owner_id": .text("u"), "collection": .text("commands"), "key": .text("k1"), "data": .text(#"{"a":1}"#),
                "created_at": .text("2026-01-01T00:00:00.000Z"), "updated_at": .text("2026-01-01T00:00:00.000Z"),
            ]
        ),
        (
            "meter_usage",
            [
                "id": .integer(1), "user_id": .text("u"), "meter": .text("api_minutes"), "amount": .real(1.5),
                "at": .text("2026-01-01T00:00:00.000Z"), "idempotency_key": .null,
            ]
        ),
        (
            "plans",
            [
                "id": .integer(1), "user_id": .text("u"), "plan": .text("premium"),
                "granted_at": .text("2026-01-01T00:00:00.000Z"), "trial_ends_at": .null, "ends_at": .null,
                "revoked_at": .null,
            ]
        ),
        (
            "upgrade_locks",
            ["user_id": .text("u"), "provider": .text("apple"), "started_at": .text("2026-01-01T00:00:00.000Z")]
        ),
    ]

    static let hostileValues: [CellValue] = [
        .null, .text(""), .text("lots"), .real(1e300), .real(-0.5), .integer(-1), .integer(0), .integer(.max),
        .integer(.min),
        .text("9999-12-31T00:00:00.000Z"), .text("2026-02-30T00:00:00.000Z"), .text("2026-01-01"), .text("[1,2]"),
        .text("{}"), .text("not json"), .text("victim"), .text("linked"), .text("u"), .text("\u{0}"), .real(0.1),
    ]

    static func write(
        _ rows: [(String, [String: CellValue])], users: [String], guestOwner: String?, to path: String
    ) throws {
        var header: [String: Any] = [
            "format": "guestmode-backup", "format_version": 1, "tool_version": "fuzz",
            "profile": ["name": "voice", "version": 1],
            "users": users, "created": "2026-01-02T00:00:00.000Z",
        ]
        if let guestOwner { header["guest_owner"] = guestOwner }
        var entries: [(String, [UInt8], String?, Int?)] = [
            ("header.json", Array(try JSONSerialization.data(withJSONObject: header)), nil, nil)
        ]
        var order: [String] = []
        var grouped: [String: [UInt8]] = [:]
        var counts: [String: Int] = [:]
        for (table, row) in rows {
            if grouped[table] == nil { order.append(table) }
            var line: [UInt8] = [UInt8(ascii: "{")]
            for (index, (key, value)) in row.sorted(by: { $0.key < $1.key }).enumerated() {
                if index > 0 { line.append(UInt8(ascii: ",")) }
                RowEncoder.appendString(key, to: &line)
                line.append(UInt8(ascii: ":"))
                switch value {
                case .null: line += Array("null".utf8)
                case .integer(let number): line += Array(String(number).utf8)
                case .real(let number): line += Array(number.description.utf8)
                case .text(let text): RowEncoder.appendString(text, to: &line)
                }
            }
            line += Array("}\n".utf8)
            grouped[table, default: []] += line
            counts[table, default: 0] += 1
        }
        for table in order {
            entries.append(("data/\(table)/000001.ndjson", grouped[table] ?? [], table, counts[table]))
        }
        let manifest = BackupManifest(
            formatVersion: 1,
            entries: entries.map {
                .init(
                    name: $0.0, size: Int64($0.1.count), sha256: StreamingSHA256.hex(of: $0.1), table: $0.2, rows: $0.3)
            },
            tables: counts)
        try AtomicFile.write(path: path) { descriptor in
            try ArchiveWriter.write(to: descriptor, path: path, format: .tarGzip, level: nil) { writer in
                for (name, bytes, _, _) in entries {
                    try bytes.withUnsafeBytes { try writer.addEntry(name: name, contents: $0, modified: now) }
                }
                try Array(try BackupFormat.encoder().encode(manifest)).withUnsafeBytes {
                    try writer.addEntry(name: "manifest.json", contents: $0, modified: now)
                }
            }
        }
    }

    @Test("the unmutated row set imports: the mutations below start from a valid archive")
    func baseline() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("base.tar.gz").path
        try Self.write(Self.rows, users: ["u"], guestOwner: nil, to: path)
        let engine = try Self.engine()
        let report = try engine.importBackup(from: path, onConflict: .fail, dryRun: false, now: Self.now)
        #expect(report.added == ["u"])
        #expect(try engine.counters(user: "u") == ["command_spoken": 2])
    }

    @Test(
        "300 row-level mutations with a recomputed manifest: one field set to a hostile value, a row repeated or moved to another owner"
    )
    func rowMutations() throws {
        let directory = try Self.directory()
        defer { try? FileManager.default.removeItem(at: directory) }
        var random = SplitMix64(state: 65)
        for round in 0..<300 {
            var rows = Self.rows
            var users = ["u"]
            var guestOwner: String?
            for _ in 0..<(1 + random.next() % 2) {
                let index = Int(random.next() % UInt64(rows.count))
                switch random.next() % 8 {
                case 0: rows.append(rows[index])
                case 1: users.append(["u", "victim", ""].randomElement(using: &random) ?? "u")
                case 2: guestOwner = ["", "victim", "u"].randomElement(using: &random)
                default:
                    let keys = rows[index].1.keys.sorted()
                    guard let key = keys.randomElement(using: &random),
                        let value = Self.hostileValues.randomElement(using: &random)
                    else { continue }
                    rows[index].1[key] = value
                }
            }
            let path = directory.appendingPathComponent("\(round).tar.gz").path
            try Self.write(rows, users: users, guestOwner: guestOwner, to: path)
            try Self.importChecked(path, "row round \(round)")
        }
    }
}
