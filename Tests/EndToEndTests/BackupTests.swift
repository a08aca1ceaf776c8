import Foundation
import Testing

/// Rows in every per-user table for two users, plus records still owned by
/// the habits profile's guest owner "", and 200 records so data entries span
/// many compressed blocks.
let backupFixtureSQL = """
    INSERT INTO users (id, device, state, prompt_state, created_at, last_seen_at, linked_at) VALUES
      ('u1', 'dev\t1', 'linked', 'anonymous', '2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z', '2026-01-01T10:00:00.000Z'),
      ('u2', NULL, 'anonymous', 'anonymous', '2026-01-03T00:00:00.000Z', '2026-01-03T00:00:00.000Z', NULL);
    INSERT INTO identities VALUES ('apple', 'sub-1', 'u1', 'a@example.com', '2026-01-01T10:00:00.000Z');
    INSERT INTO credentials VALUES ('u1', 'user-one', 'hash$abc', '2026-01-01T00:00:00.000Z');
    INSERT INTO upgrade_locks VALUES ('u2', 'google', '2026-01-03T00:00:00.000Z');
    INSERT INTO events (user_id, action, at, count, idempotency_key, properties) VALUES
      ('u1', 'habit_completed', '2026-01-01T00:00:00.000Z', 1, 'k1', '{"a":"b\\n\\"c"}'),
      ('u2', 'app_opened', '2026-01-03T00:00:00.000Z', 2, NULL, NULL);
    INSERT INTO counters VALUES ('u1', 'habit_completed', 1), ('u2', 'app_opened', 2);
    INSERT INTO records VALUES
      ('u1', 'habits', 'h1', '{"name":"Run ☃","tabs":"a\\tb"}', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z'),
      ('', 'habits', 'h0', '{"name":"before any user"}', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
      INSERT INTO records SELECT 'u2', 'completions', 'c' || i, json_object('day', i, 'habit', 'h' || (i % 7), 'note', hex(randomblob(16))),
        '2026-01-05T00:00:00.000Z', '2026-01-05T00:00:00.000Z' FROM n;
    INSERT INTO meter_usage (user_id, meter, amount, at, idempotency_key) VALUES
      ('u1', 'api_minutes', 1.5, '2026-01-01T00:00:00.000Z', 'm1'), ('u1', 'api_minutes', 0.1, '2026-01-01T00:00:00.000Z', NULL);
    INSERT INTO meter_warnings VALUES ('u1', 'api_minutes', '2026-01-01T00:00:00.000Z', 75, 'warning', '2026-01-01T00:00:00.000Z');
    INSERT INTO plans (user_id, plan, granted_at, trial_ends_at, ends_at, revoked_at) VALUES
      ('u1', 'premium', '2026-01-01T00:00:00.000Z', NULL, '2026-02-01T00:00:00.000Z', NULL);
    INSERT INTO prompt_outcomes (user_id, context, outcome, at) VALUES ('u2', 'backup_value', 'shown', '2026-01-03T00:00:00.000Z');
    INSERT INTO experiment_assignments VALUES ('u2', 'auth_prompts', 'control', '2026-01-03T00:00:00.000Z');
    INSERT INTO outbox VALUES ('u1', '2026-01-01T00:00:00.000Z', 0, NULL, NULL), ('u2', '2026-01-03T00:00:00.000Z', 0, NULL, NULL);
    INSERT INTO user_flags VALUES ('u1', 'adopted', '2026-01-01T00:00:00.000Z');
    INSERT INTO migration_journals (id, kind, source_id, target_id, status, started_at, finished_at) VALUES
      (7, 'merge', 'g1', 'u1', 'done', '2026-01-02T00:00:00.000Z', '2026-01-02T00:00:00.000Z');
    INSERT INTO conflict_archive (journal_id, owner_id, collection, key, data, updated_at, reason, archived_at) VALUES
      (7, 'u1', 'habits', 'h1', '{"name":"lost in a merge"}', '2026-01-01T00:00:00.000Z', 'lost to the account''s record', '2026-01-02T00:00:00.000Z');
    """

let perUserTables = [
    "users", "identities", "credentials", "upgrade_locks", "events", "counters", "records", "meter_usage",
    "meter_warnings", "plans", "prompt_outcomes", "experiment_assignments", "outbox", "user_flags", "conflict_archive",
]

extension Sandbox {
    /// A habits store at ./guestmode.sqlite with data in every per-user table.
    static func withBackupData() async throws -> Sandbox {
        let sandbox = try Sandbox()
        try sandbox.write(
            "habits.yaml",
            try backupFixtureProfile())
        let initialised = try await sandbox.run("init", "--profile", "habits.yaml")
        #expect(initialised.status == 0, "init failed: \(initialised.stderr)")
        try sandbox.write("fill.sql", backupFixtureSQL)
        let filled = try await sandbox.shell("sqlite3 guestmode.sqlite < fill.sql")
        #expect(filled.status == 0, "\(filled.stderr)")
        return sandbox
    }

    /// Every table's rows in rowid order, as sqlite3 prints them.
    func dump(_ store: String, _ table: String) async throws -> String {
        let result = try await shell("sqlite3 -json \(store) 'SELECT * FROM \(table) ORDER BY rowid'")
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout
    }

    /// Runs a Python script with the sandbox as its working directory.
    func python(_ script: String) async throws {
        try write("make.py", script)
        let result = try await shell("python3 make.py")
        #expect(result.status == 0, "python failed: \(result.stderr)")
    }
}

@Suite("Backup archives")
struct BackupTests {
    @Test("export every user, import into a fresh store: every row identical", arguments: ["tar.zst", "tar.gz", "zip"])
    func roundTrip(format: String) async throws {
        let sandbox = try await Sandbox.withBackupData()
        let archive = format == "tar.zst" ? "all.gmbackup" : "all.\(format)"
        let exported = try await sandbox.run(
            "backup", "export", "--all", "--out", archive, "--format", format, "--json")
        #expect(exported.status == 0, "\(exported.stderr)")
        #expect((exported.object["users"] as? Int) == 2)
        let mode =
            try FileManager.default.attributesOfItem(atPath: sandbox.path(archive))[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        #expect(try await sandbox.run("backup", "verify", "--full", archive).status == 0)

        #expect(try await sandbox.run("init", "--profile", "habits.yaml", "--store", "fresh.sqlite").status == 0)
        // The same deployment: the second store takes the first one's key, so it trusts the archive.
        let key = try await sandbox.run("backup", "key", "export", "--out", "-")
        #expect(key.status == 0 && key.stdout.count == 65)
        let installed = try await sandbox.run(
            arguments: ["--store", "fresh.sqlite", "backup", "key", "import", "-", "--force"],
            input: Data(key.stdout.utf8))
        #expect(installed.status == 0, "\(installed.stderr)")
        let imported = try await sandbox.run("--store", "fresh.sqlite", "backup", "import", archive, "--json")
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.object["signature"] as? String == "this-deployment")
        #expect(imported.object["skipped_tables"] as? [String] == [])
        for table in perUserTables {
            var original = try await sandbox.dump("guestmode.sqlite", table)
            #expect(!original.isEmpty, "fixture has no rows in \(table)")
            if table == "conflict_archive" {
                // Merge journal 7 stayed in the first store: in this one the row names no journal.
                #expect(original.contains(#""journal_id":7"#))
                original = original.replacingOccurrences(of: #""journal_id":7"#, with: #""journal_id":null"#)
            }
            #expect(
                try await sandbox.dump("fresh.sqlite", table) == original, "table \(table) differs after the round trip"
            )
        }
        let check = try await sandbox.run("--store", "fresh.sqlite", "db", "check")
        #expect(check.status == 0, "\(check.stdout)")
    }

    @Test("a second import fails on existing users unless told to skip or replace, and a dry run changes nothing")
    func conflicts() async throws {
        let sandbox = try await Sandbox.withBackupData()
        #expect(try await sandbox.run("backup", "export", "u1", "--out", "u1.gmbackup").status == 0)
        // Compared row by row: opening a store for writing rewrites its file header even when nothing changes.
        let before = try await perUserTables.asyncMap { try await sandbox.dump("guestmode.sqlite", $0) }
        let refused = try await sandbox.run("backup", "import", "u1.gmbackup", "--json")
        #expect(refused.status == 14)
        #expect(refused.errorJSON["code"] as? String == "user_exists")
        #expect(try await perUserTables.asyncMap { try await sandbox.dump("guestmode.sqlite", $0) } == before)
        let dry = try await sandbox.run(
            "backup", "import", "u1.gmbackup", "--on-conflict", "replace", "--dry-run", "--json")
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.object["replaced"] as? [String] == ["u1"])
        #expect(try await perUserTables.asyncMap { try await sandbox.dump("guestmode.sqlite", $0) } == before)
        let skipped = try await sandbox.run("backup", "import", "u1.gmbackup", "--on-conflict", "skip", "--json")
        #expect(skipped.status == 0)
        #expect(skipped.object["skipped"] as? [String] == ["u1"])
        let replaced = try await sandbox.run("backup", "import", "u1.gmbackup", "--on-conflict", "replace")
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try await sandbox.dump("guestmode.sqlite", "identities").contains("sub-1"))
    }

    @Test(
        "hostile and broken archives exit 65 and leave the store unchanged",
        arguments: [
            "absolute", "dotdot", "symlink", "hardlink", "device", "directory", "duplicate", "unknown", "zip-dotdot",
            "zip-symlink", "bomb", "garbage", "empty", "truncated", "renamed", "no-manifest", "newer-version",
        ])
    func hostile(kind: String) async throws {
        let sandbox = try await Sandbox.withBackupData()
        let name = try await makeHostileArchive(kind, in: sandbox)
        let before = try sandbox.snapshot()
        let imported = try await sandbox.run("backup", "import", name, "--json")
        #expect(imported.status == 65, "\(kind): \(imported.stderr)")
        let message = imported.errorJSON["message"] as? String ?? ""
        #expect(message.contains(name), "\(kind): \(message)")
        if kind == "newer-version" {
            #expect(message.contains("version 3") && message.contains("up to 2"), "\(message)")
        }
        #expect(try sandbox.snapshot() == before, "\(kind) changed the store")
        #expect(try await sandbox.run("backup", "verify", "--full", name).status == 65)
    }

    @Test(
        "limits on entry count, entry size and total size are enforced while reading (the bomb case covers the ratio)",
        arguments: [["--max-entries", "5"], ["--max-entry-size", "100"], ["--max-total-size", "2000"]])
    func limits(limit: [String]) async throws {
        let sandbox = try await Sandbox.withBackupData()
        #expect(try await sandbox.run("backup", "export", "--all", "--out", "all.gmbackup").status == 0)
        let before = try sandbox.snapshot()
        let imported = try await sandbox.run(
            arguments: ["backup", "import", "all.gmbackup", "--on-conflict", "replace"] + limit)
        #expect(imported.status == 65, "\(limit): \(imported.stderr)")
        #expect(imported.stderr.contains("refusing"))
        #expect(try sandbox.snapshot() == before)
    }

    @Test(
        "one flipped byte in an archive's data makes verify --full and import fail",
        arguments: ["tar.zst", "tar.gz", "zip"])
    func flippedByte(format: String) async throws {
        let sandbox = try await Sandbox.withBackupData()
        let archive = format == "tar.zst" ? "u2.gmbackup" : "u2.\(format)"
        #expect(try await sandbox.run("backup", "export", "u2", "--out", archive).status == 0)
        #expect(try await sandbox.run("init", "--profile", "habits.yaml", "--store", "fresh.sqlite").status == 0)
        // Offsets inside the compressed data of the records entry (zip) or of the whole stream (tar), each
        // moved on to the first byte whose flip changes what the data decompresses to (some bits of a
        // compressed stream are redundant: flipping them changes nothing, and nothing is to be refused).
        // For tar.zst a fourth flip lands in signature.json's MAC, which only zstd's content checksum covers
        // when the archive is signed by another deployment, as it is for fresh.sqlite (a key of its own);
        // gzip's CRC-32 always covers it, and no single flip of a Huffman-coded stream changes only the MAC.
        try await sandbox.python(
            """
            import zipfile, zlib, subprocess
            name = '\(archive)'
            data = open(name, 'rb').read()
            def decoded(blob):
                try:
                    if name.endswith('.zip'):
                        return zlib.decompressobj(-15).decompress(blob[span[0]:span[1]])
                    if name.endswith('.gz'):
                        return zlib.decompressobj(-15).decompress(blob[10:])
                    run = subprocess.run(['zstd', '-dcq', '--no-check'], input=blob, capture_output=True)
                    return run.stdout if run.returncode == 0 else None
                except zlib.error:
                    return None
            if name.endswith('.zip'):
                info = zipfile.ZipFile(name).getinfo('data/records/000001.ndjson')
                local = data[info.header_offset:info.header_offset + 30]
                start = info.header_offset + 30 + int.from_bytes(local[26:28], 'little') + int.from_bytes(local[28:30], 'little')
                span = (start, start + info.compress_size)
            else:
                span = (64, len(data) - 64)
            original = decoded(data)
            def flipped(offset):
                copy = bytearray(data)
                copy[offset] ^= 0x01
                return bytes(copy)
            offsets = []
            for fraction in (0.25, 0.5, 0.75):
                offset = span[0] + int((span[1] - span[0]) * fraction)
                while decoded(flipped(offset)) == original:
                    offset += 1
                offsets.append(offset)
            if name.endswith('.gmbackup'):
                mac = original.index(b'"mac"')
                offset = span[1]
                while True:
                    offset -= 1
                    assert offset > span[0], 'no byte of the stream changes only the MAC'
                    changed = decoded(flipped(offset))
                    if changed is not None and len(changed) == len(original):
                        differing = [i for i in range(len(original)) if changed[i] != original[i]]
                        # Still hex digits: a MAC that reads as a MAC, only a wrong one.
                        if differing and all(mac < i < mac + 80 and chr(changed[i]) in '0123456789abcdef' for i in differing):
                            break
                offsets.append(offset)
            for index, offset in enumerate(offsets):
                open('flipped%d-' % index + name, 'wb').write(flipped(offset))
            """)
        let flips = format == "tar.zst" ? 4 : 3
        let before = try sandbox.snapshot("fresh.sqlite")
        for index in 0..<flips {
            let flipped = "flipped\(index)-\(archive)"
            let verified = try await sandbox.run("backup", "verify", "--full", flipped)
            #expect(verified.status == 65, "\(flipped) verified: \(verified.stdout)")
            let imported = try await sandbox.run("--store", "fresh.sqlite", "backup", "import", flipped)
            #expect(imported.status == 65, "\(flipped) imported: \(imported.stderr)")
            #expect(try sandbox.snapshot("fresh.sqlite") == before)
        }
    }

    @Test("push to an unwritable destination exits 75 and keeps the queue; the next push drains it")
    func pushKeepsQueueUntilWritten() async throws {
        let sandbox = try await Sandbox.withBackupData()
        sandbox.environment["GUESTMODE_NOW"] = "2026-06-01T12:00:00Z"
        try sandbox.write("plain-file", "not a directory")
        for destination in ["missing-dir", "plain-file/sub"] {
            let pushed = try await sandbox.run("backup", "push", "--to", destination, "--retry-now", "--json")
            #expect(pushed.status == 75, "\(destination): \(pushed.stderr)")
        }
        let queue = try await sandbox.run("backup", "queue", "--json")
        let entries = queue.json as? [[String: Any]] ?? []
        #expect(entries.compactMap { $0["user_id"] as? String }.sorted() == ["u1", "u2"])
        for entry in entries {
            #expect(entry["attempts"] as? Int == 2)
            #expect(entry["next_attempt_at"] as? String == "2026-06-01T12:02:00.000Z")
            #expect((entry["last_error"] as? String)?.contains("plain-file/sub") == true)
        }
        // Not yet due: nothing is tried and nothing fails.
        try FileManager.default.createDirectory(atPath: sandbox.path("backups"), withIntermediateDirectories: false)
        let early = try await sandbox.run("backup", "push", "--to", "backups", "--json")
        #expect(early.status == 0)
        #expect((early.object["waiting"] as? [Any])?.count == 2)

        let pushed = try await sandbox.run(
            "--now", "2026-06-01T12:05:00Z", "backup", "push", "--to", "backups", "--json")
        #expect(pushed.status == 0, "\(pushed.stderr)")
        #expect((pushed.object["pushed"] as? [Any])?.count == 2)
        #expect((try await sandbox.run("backup", "queue", "--json").json as? [Any])?.isEmpty == true)
        for user in ["u1", "u2"] {
            let verified = try await sandbox.run("backup", "verify", "--full", "backups/\(user).gmbackup")
            #expect(verified.status == 0, "\(verified.stdout)")
        }
    }

    @Test("entries that failed --max-attempts times are held, kept, and reported with exit 75")
    func pushHoldsAfterMaxAttempts() async throws {
        let sandbox = try await Sandbox.withBackupData()
        #expect(try await sandbox.run("backup", "push", "--to", "missing", "--retry-now").status == 75)
        let held = try await sandbox.run("backup", "push", "--to", "missing", "--max-attempts", "1", "--json")
        #expect(held.status == 75)
        #expect((held.object["held"] as? [Any])?.count == 2)
        #expect((try await sandbox.run("backup", "queue", "--json").json as? [Any])?.count == 2)
    }

    @Test("inspect shows the header and manifest; export refuses unknown users and mismatched names")
    func inspectAndUsage() async throws {
        let sandbox = try await Sandbox.withBackupData()
        #expect(try await sandbox.run("backup", "export", "u1", "u2", "--out", "two.tar.gz").status == 0)
        let inspected = try await sandbox.run("backup", "inspect", "two.tar.gz", "--json")
        #expect(inspected.status == 0)
        let header = inspected.object["header"] as? [String: Any]
        #expect(header?["format_version"] as? Int == 2)
        #expect(inspected.object["signature"] as? String == "this-deployment")
        #expect(header?["users"] as? [String] == ["u1", "u2"])
        #expect(((inspected.object["manifest"] as? [String: Any])?["tables"] as? [String: Int])?["records"] == 201)
        #expect(try await sandbox.run("backup", "export", "nobody", "--out", "x.gmbackup").status == 66)
        #expect(try await sandbox.run("backup", "export", "u1", "--out", "x.zip", "--format", "tar.gz").status == 64)
        #expect(try await sandbox.run("backup", "export", "u1", "--out", "x.gmbackup", "--level", "99").status == 64)
        #expect(try await sandbox.run("backup", "export", "u1", "--out", "no-such-dir/x.gmbackup").status == 73)
        #expect(try await sandbox.run("backup", "inspect", "absent.gmbackup").status == 66)
    }

    @Test(
        "a backup carries no server key, session, kept answer or webhook delivery: never a secret's hash (db copy carries them)"
    )
    func noServerSecrets() async throws {
        let sandbox = try await Sandbox.withBackupData()
        let token = String(repeating: "ab", count: 32)
        try sandbox.write(
            "server.sql",
            """
            INSERT INTO session_families VALUES ('family-1', 'u1', '2026-11-03T10:00:00.000Z', NULL);
            INSERT INTO refresh_tokens VALUES ('\(token)', 'family-1', '2026-11-03T10:00:00.000Z', NULL);
            INSERT INTO kept_responses VALUES ('user:u1', 'k-1', '\(token)', 201, '{}', '2026-11-03T10:00:00.000Z');
            INSERT INTO webhook_outbox VALUES (1, 'evt_1', 'crm', 'user.deleted', 'u1', '2026-11-03T10:00:00.000Z', '', '{"id":"evt_1"}', 'pending', 0, NULL, NULL, NULL);
            INSERT INTO sign_in_buckets VALUES ('192.0.2.1', 12.5, '2026-11-03T10:00:00.000Z');
            """)
        #expect(try await sandbox.shell("sqlite3 guestmode.sqlite < server.sql").status == 0)
        #expect(try await sandbox.run("serve", "key", "create", "backend", "--scope", "admin").status == 0)
        #expect(try await sandbox.run("serve", "signing-key", "rotate").status == 0)
        let sealed = try await sandbox.shell("sqlite3 guestmode.sqlite 'SELECT sealed_private_key FROM signing_keys'")
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(sealed.count > 64)
        let keyHash = try await sandbox.shell("sqlite3 guestmode.sqlite 'SELECT secret_hash FROM server_keys'")
            .stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(keyHash.count == 64)
        for (index, selection) in [["u1"], ["--all"]].enumerated() {
            let archive = "b\(index).tar.gz"
            #expect(
                try await sandbox.run(arguments: ["backup", "export"] + selection + ["--out", archive]).status == 0)
            let inspected = try await sandbox.run("backup", "inspect", archive, "--json")
            let tables = ((inspected.object["manifest"] as? [String: Any])?["tables"] as? [String: Int]) ?? [:]
            #expect(!tables.isEmpty)
            for table in [
                "server_keys", "session_families", "refresh_tokens", "kept_responses", "webhook_outbox",
                "sign_in_buckets", "signing_keys", "store_events", "meter_grant_draws",
            ] {
                #expect(tables[table] == nil, "\(selection) carries \(table)")
            }
            let unpacked = try await sandbox.shell(
                "mkdir -p x\(index) && tar -xzf \(archive) -C x\(index) && grep -rlE '\(token)|\(keyHash)|\(sealed)|family-1' x\(index)"
            )
            #expect(
                unpacked.stdout.isEmpty && unpacked.status == 1, "\(selection): \(unpacked.stdout)\(unpacked.stderr)")
        }
    }

    @Test("the man page documents every backup subcommand and option and lints clean")
    func manPage() async throws {
        let sandbox = try Sandbox()
        let page = try String(
            contentsOf: Sandbox.packageRoot.appendingPathComponent("man/guestmode-backup.1"), encoding: .utf8)
        for subcommand in ["export", "import", "verify", "inspect", "queue", "push"] {
            #expect(
                page.contains(".It Cm \(subcommand)") || page.contains("Nm guestmode backup \(subcommand)"),
                "\(subcommand)")
            let help = try await sandbox.run("backup", subcommand, "--help")
            let options = Set(help.stdout.matches(of: /--[a-z][a-z-]+/).map { String($0.output) })
                .subtracting(["--help", "--version", "--store", "--schema", "--now", "--json", "--quiet", "--verbose"])
            for option in options {
                #expect(
                    page.contains("Fl \(option.dropFirst())"),
                    "guestmode-backup(1) does not document \(option) of backup \(subcommand)")
            }
        }
        let lint = try await sandbox.shell(
            "mandoc -Tlint -Wwarning '\(Sandbox.packageRoot.path)/man/guestmode-backup.1'")
        #expect(lint.status == 0, "\(lint.stdout)\(lint.stderr)")
    }

    /// Writes a broken or hostile archive into the sandbox and returns its name.
    private func makeHostileArchive(_ kind: String, in sandbox: Sandbox) async throws -> String {
        let header =
            #"{"format":"guestmode-backup","format_version":1,"tool_version":"0.1.0","profile":{"name":"habits","version":1},"users":["u9"],"created":"2026-01-01T00:00:00.000Z"}"#
        let prelude = """
            import io, tarfile, zipfile, stat
            header = b'\(header)'
            def regular(tar, name, data):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            def special(tar, name, kind, target=''):
                info = tarfile.TarInfo(name)
                info.type = kind
                info.linkname = target
                tar.addfile(info)

            """
        func tarGz(_ body: String) async throws -> String {
            try await sandbox.python(
                prelude
                    + "with tarfile.open('hostile.tar.gz', 'w:gz') as tar:\n    regular(tar, 'header.json', header)\n"
                    + body)
            return "hostile.tar.gz"
        }
        switch kind {
        case "absolute": return try await tarGz("    regular(tar, '/etc/guestmode-owned', b'x')\n")
        case "dotdot": return try await tarGz("    regular(tar, 'data/../../escape.ndjson', b'x')\n")
        case "symlink":
            return try await tarGz("    special(tar, 'data/users/000001.ndjson', tarfile.SYMTYPE, '/etc/passwd')\n")
        case "hardlink":
            return try await tarGz("    special(tar, 'data/users/000001.ndjson', tarfile.LNKTYPE, 'header.json')\n")
        case "device": return try await tarGz("    special(tar, 'data/users/000001.ndjson', tarfile.CHRTYPE)\n")
        case "directory": return try await tarGz("    special(tar, 'data/users', tarfile.DIRTYPE)\n")
        case "duplicate": return try await tarGz("    regular(tar, 'header.json', header)\n")
        case "unknown": return try await tarGz("    regular(tar, 'run-me.sh', b'#!/bin/sh\\n')\n")
        case "no-manifest":
            return try await tarGz("    regular(tar, 'data/users/000001.ndjson', b'{\"id\":\"u9\"}\\n')\n")
        case "zip-dotdot", "zip-symlink":
            try await sandbox.python(
                prelude + """
                    with zipfile.ZipFile('hostile.zip', 'w') as archive:
                        archive.writestr('header.json', header)
                        if '\(kind)' == 'zip-dotdot':
                            archive.writestr('../../escape.ndjson', b'x')
                        else:
                            info = zipfile.ZipInfo('data/users/000001.ndjson')
                            info.create_system = 3
                            info.external_attr = (stat.S_IFLNK | 0o777) << 16
                            archive.writestr(info, '/etc/passwd')
                    """)
            return "hostile.zip"
        case "bomb":
            try await sandbox.python(
                prelude + """
                    with tarfile.open('bomb.tar', 'w') as tar:
                        regular(tar, 'header.json', header)
                        regular(tar, 'data/records/000001.ndjson', bytes(64 << 20))
                    """)
            let compressed = try await sandbox.shell("zstd -q -19 --rm bomb.tar -o bomb.gmbackup")
            #expect(compressed.status == 0, "\(compressed.stderr)")
            return "bomb.gmbackup"
        case "garbage":
            try await sandbox.shell("head -c 4096 /dev/urandom > garbage.gmbackup")
            return "garbage.gmbackup"
        case "empty":
            try sandbox.write("empty.gmbackup", "")
            return "empty.gmbackup"
        case "truncated":
            #expect(try await sandbox.run("backup", "export", "--all", "--out", "full.gmbackup").status == 0)
            try await sandbox.shell("head -c $(( $(stat -c %s full.gmbackup) / 2 )) full.gmbackup > truncated.gmbackup")
            return "truncated.gmbackup"
        case "renamed":
            #expect(try await sandbox.run("backup", "export", "u1", "--out", "real.tar.gz").status == 0)
            try await sandbox.shell("cp real.tar.gz renamed.zip")
            return "renamed.zip"
        case "newer-version":
            let newer = header.replacingOccurrences(of: #""format_version":1"#, with: #""format_version":3"#)
            try await sandbox.python(
                prelude + """
                    with tarfile.open('newer.tar.gz', 'w:gz') as tar:
                        regular(tar, 'header.json', b'\(newer)')
                    """)
            return "newer.tar.gz"
        default:
            Issue.record("unknown hostile case \(kind)")
            return ""
        }
    }
}

/// The habits profile extended with what the backup fixtures hold rows of (Tests/Fixtures/profiles).
func backupFixtureProfile() throws -> String {
    try String(
        contentsOf: Sandbox.packageRoot.appendingPathComponent("Tests/Fixtures/profiles/habits-backup.yaml"),
        encoding: .utf8)
}
