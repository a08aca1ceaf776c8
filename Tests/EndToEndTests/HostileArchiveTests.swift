import Foundation
import Testing

/// Hostile archives, each made from a real export by
/// Tests/Fuzz/hostile_archive.py with a recomputed manifest, so only row
/// validation and header trust stand between them and the store.
@Suite("Hostile archives")
struct HostileArchiveTests {
    static let script = Sandbox.packageRoot.appendingPathComponent("Tests/Fuzz/hostile_archive.py").path

    /// (case, the entry its message must name, the line, or nil when the header is at fault)
    static let cases: [(String, String, Int?)] = [
        ("cross-user", "header.json", nil),
        ("foreign-row", "data/records/000001.ndjson", 2),
        ("negative-usage", "data/meter_usage/000001.ndjson", 1),
        ("negative-count", "data/events/000001.ndjson", 1),
        ("counters-disagree", "data/counters/000001.ndjson", 1),
        ("undeclared-collection", "data/records/000001.ndjson", 1),
        ("undeclared-action", "data/events/000001.ndjson", 1),
        ("undeclared-meter", "data/meter_usage/000001.ndjson", 1),
        ("undeclared-plan", "data/plans/000001.ndjson", 1),
        ("undeclared-provider", "data/upgrade_locks/000001.ndjson", 1),
        ("record-not-json", "data/records/000001.ndjson", 1),
        ("record-not-object", "data/records/000001.ndjson", 1),
        ("linked-without-identity", "data/users/000001.ndjson", 1),
        ("garbage-timestamp", "data/users/000001.ndjson", 1),
        ("lenient-timestamp", "data/events/000001.ndjson", 1),
        ("lock-9999", "data/upgrade_locks/000001.ndjson", 1),
        ("total-lots", "data/counters/000001.ndjson", 1),
        ("total-1e300", "data/counters/000001.ndjson", 1),
        ("non-integer-id", "data/events/000001.ndjson", 1),
        ("fractional-id", "data/events/000001.ndjson", 1),
        ("duplicate-row", "data/records/000001.ndjson", 2),
        ("duplicate-event", "data/events/000001.ndjson", 2),
        // What the command line could not have written.
        ("events-id-max", "data/events/000001.ndjson", 1),
        ("usage-id-max", "data/meter_usage/000001.ndjson", 1),
        ("count-max", "data/events/000001.ndjson", 1),
        ("count-over-cli", "data/events/000001.ndjson", 1),
        ("total-max", "data/counters/000001.ndjson", 1),
        ("outbox-attempts-max", "data/outbox/000001.ndjson", 1),
        ("record-duplicate-member", "data/records/000001.ndjson", 1),
        ("record-deep", "data/records/000001.ndjson", 1),
        ("conflict-undeclared-collection", "data/conflict_archive/000001.ndjson", 1),
        ("nul-user", "header.json", nil),
        ("nul-key", "data/records/000001.ndjson", 1),
        ("invalid-utf8-key", "data/records/000001.ndjson", 1),
    ]

    /// Cases refused while the archive is parsed, so `verify --full` refuses them too.
    static let refusedByVerify: Set<String> = ["nul-user", "invalid-utf8-key"]

    /// The error code each text case must carry.
    static let codes: [String: String] = [
        "nul-user": "nul_in_text", "nul-key": "nul_in_text", "invalid-utf8-key": "invalid_utf8",
    ]

    /// A voice store with a linked victim and an attacker who holds their own
    /// export (`attacker.tar.gz`); both have events, usage, a record and a plan.
    static func setUp() async throws -> (Sandbox, victim: String, attacker: String) {
        let sandbox = try await Sandbox.withStore("voice")
        let victim = try await sandbox.run("guest", "new", "--quiet").stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        let attacker = try await sandbox.run("guest", "new", "--quiet").stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        for user in [victim, attacker] {
            #expect(try await sandbox.run("track", user, "command_spoken").status == 0)
            #expect(try await sandbox.run("meter", "use", user, "api_minutes", "2").status == 0)
            #expect(try await sandbox.run("record", "put", user, "commands", "k1", "--data", #"{"a":1}"#).status == 0)
            #expect(try await sandbox.run("plan", "grant", user, "premium").status == 0)
        }
        #expect(try await sandbox.run("link", victim, "--provider", "apple", "--subject", "victim-sub").status == 0)
        let exported = try await sandbox.run(
            "backup", "export", attacker, "--out", "attacker.tar.gz", "--format", "tar.gz")
        #expect(exported.status == 0, "\(exported.stderr)")
        return (sandbox, victim, attacker)
    }

    static func make(_ kind: String, victim: String, in sandbox: Sandbox) async throws -> String {
        let name = "hostile-\(kind).tar.gz"
        let made = try await sandbox.shell("python3 '\(script)' attacker.tar.gz \(kind) \(name) \(victim)")
        #expect(made.status == 0, "\(kind): \(made.stderr)")
        return name
    }

    @Test(
        "each hostile archive exits 65 naming the entry and line, under every conflict policy, and changes nothing",
        arguments: cases.map(\.0))
    func refused(kind: String) async throws {
        let (sandbox, victim, attacker) = try await Self.setUp()
        let (_, entry, line) = try #require(Self.cases.first { $0.0 == kind })
        let name = try await Self.make(kind, victim: victim, in: sandbox)
        // The manifest matches: nothing but the rows themselves is wrong.
        let verified = try await sandbox.run("backup", "verify", "--full", name)
        #expect(verified.status == (Self.refusedByVerify.contains(kind) ? 65 : 0), "\(kind): \(verified.stdout)")
        let before = try sandbox.snapshot()
        // `fail` would stop at the attacker already being there; a fresh store and `replace` reach the rows.
        // Under `skip` the store's constraints never see a skipped user's rows, so a repeated natural key
        // (records, counters, …) is caught only when it would be written; every per-row check still runs.
        for policy in kind == "duplicate-row" ? ["replace"] : ["replace", "skip"] {
            // Skipped users' rows are still checked: a hostile archive is refused whatever the policy.
            let imported = try await sandbox.run("backup", "import", name, "--on-conflict", policy, "--json")
            #expect(imported.status == 65, "\(kind)/\(policy): \(imported.stderr)")
            #expect(!imported.signalled)
            if let code = Self.codes[kind] { #expect(imported.errorJSON["code"] as? String == code, "\(kind)") }
            let message = imported.errorJSON["message"] as? String ?? ""
            #expect(!message.isEmpty && !message.contains("\n"), "\(kind): \(message)")
            #expect(message.contains(entry), "\(kind): \(message)")
            if let line { #expect(message.contains("line \(line) of \(entry)"), "\(kind): \(message)") }
            #expect(try sandbox.snapshot() == before, "\(kind) changed the store")
        }
        #expect(try sandbox.snapshot() == before, "\(kind) changed the store")
        try await Self.stillWorks(sandbox, victim: victim, attacker: attacker)
    }

    @Test("the same archives refused when imported into a fresh store")
    func refusedIntoAFreshStore() async throws {
        let (sandbox, victim, _) = try await Self.setUp()
        #expect(try await sandbox.run("init", "--profile", "voice", "--store", "fresh.sqlite").status == 0)
        // An import into a store without users drops its plain indexes until the rows are in: a refusal brings them back.
        let schema = "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"
        let before = try await sqlite(sandbox, schema, store: "fresh.sqlite")
        for (kind, entry, _) in Self.cases {
            let name = try await Self.make(kind, victim: victim, in: sandbox)
            let imported = try await sandbox.run("--store", "fresh.sqlite", "backup", "import", name, "--json")
            #expect(imported.status == 65, "\(kind): \(imported.stderr)")
            #expect((imported.errorJSON["message"] as? String ?? "").contains(entry), "\(kind): \(imported.stderr)")
        }
        let users = try await sandbox.shell(
            "sqlite3 fresh.sqlite 'SELECT COUNT(*) FROM users; SELECT COUNT(*) FROM records'")
        #expect(users.stdout == "0\n0\n")
        #expect(try await sqlite(sandbox, schema, store: "fresh.sqlite") == before)
    }

    @Test("cross-user takeover: the victim's user, identity, events, usage and records survive a replace")
    func takeover() async throws {
        let (sandbox, victim, attacker) = try await Self.setUp()
        let name = try await Self.make("cross-user", victim: victim, in: sandbox)
        let dump =
            "SELECT * FROM users WHERE id = '\(victim)'; SELECT * FROM identities; SELECT COUNT(*) FROM events WHERE user_id = '\(victim)'; SELECT COUNT(*) FROM meter_usage WHERE user_id = '\(victim)'; SELECT * FROM records WHERE owner_id = '\(victim)'"
        let before = try await sandbox.shell("sqlite3 guestmode.sqlite \"\(dump)\"")
        for policy in ["fail", "replace", "skip"] {
            let imported = try await sandbox.run("backup", "import", name, "--on-conflict", policy, "--json")
            #expect(imported.status == 65, "\(policy): \(imported.stderr)")
            #expect(imported.errorJSON["code"] as? String == "guest_owner_mismatch")
        }
        #expect(try await sandbox.shell("sqlite3 guestmode.sqlite \"\(dump)\"").stdout == before.stdout)
        #expect(!before.stdout.contains("planted"))
        try await Self.stillWorks(sandbox, victim: victim, attacker: attacker)
    }

    @Test(
        "surrogate ids are renumbered by the store: an events or meter_usage id at the bound (2^53-1) cannot exhaust the sequence",
        arguments: ["events-id-bound", "usage-id-bound"])
    func surrogateIDs(kind: String) async throws {
        let (sandbox, victim, attacker) = try await Self.setUp()
        let name = try await Self.make(kind, victim: victim, in: sandbox)
        let imported = try await sandbox.run("backup", "import", name, "--on-conflict", "replace")
        #expect(imported.status == 0, "\(kind): \(imported.stderr)")
        let largest = try await sandbox.shell(
            "sqlite3 guestmode.sqlite 'SELECT MAX(id) FROM events; SELECT MAX(id) FROM meter_usage'")
        #expect(!largest.stdout.contains("9007199254740991"), "\(largest.stdout)")
        try await Self.stillWorks(sandbox, victim: victim, attacker: attacker)
        #expect(try await sandbox.run("meter", "use", victim, "api_minutes", "1").status == 0)
    }

    @Test("record data is stored in the canonical text record put stores, never verbatim")
    func canonicalRecordData() async throws {
        let (sandbox, victim, attacker) = try await Self.setUp()
        // Each archive replaces the attacker's content, so each is checked right after its import.
        for (kind, table) in [("record-not-canonical", "records"), ("conflict-not-canonical", "conflict_archive")] {
            let name = try await Self.make(kind, victim: victim, in: sandbox)
            let imported = try await sandbox.run("backup", "import", name, "--on-conflict", "replace")
            #expect(imported.status == 0, "\(kind): \(imported.stderr)")
            let stored = try await sandbox.shell(
                "sqlite3 guestmode.sqlite \"SELECT data FROM \(table) WHERE owner_id = '\(attacker)' AND data LIKE '%b%'\""
            )
            #expect(stored.stdout == "{\"a\":2,\"b\":1}\n", "\(kind): \(stored.stdout)")
        }
        try await Self.stillWorks(sandbox, victim: victim, attacker: attacker)
    }

    @Test("an archived conflict whose merge journal is not in this store is imported without one")
    func danglingJournal() async throws {
        let (sandbox, victim, attacker) = try await Self.setUp()
        let name = try await Self.make("conflict-dangling-journal", victim: victim, in: sandbox)
        let imported = try await sandbox.run("backup", "import", name, "--on-conflict", "replace")
        #expect(imported.status == 0, "\(imported.stderr)")
        let stored = try await sandbox.shell(
            "sqlite3 guestmode.sqlite \"SELECT key, quote(journal_id) FROM conflict_archive WHERE owner_id = '\(attacker)'\""
        )
        #expect(stored.stdout == "lost|NULL\n", "\(stored.stdout)")
        try await Self.stillWorks(sandbox, victim: victim, attacker: attacker)
    }

    @Test("a store poisoned outside guestmode is reported as corrupt (65), never a crash")
    func poisonedStore() async throws {
        let (sandbox, victim, _) = try await Self.setUp()
        for value in ["'lots'", "1e300", "NULL", "x'00ff'"] {
            let poisoned = try await sandbox.shell(
                "sqlite3 guestmode.sqlite \"PRAGMA ignore_check_constraints = ON; UPDATE counters SET total = \(value) WHERE user_id = '\(victim)'\""
            )
            #expect(poisoned.status == 0 || value == "NULL", "\(poisoned.stderr)")
            if poisoned.status != 0 { continue }
            for command in [["counters", victim], ["user", "show", victim], ["--json", "user", "show", victim]] {
                let result = try await sandbox.run(arguments: command)
                #expect(result.status == 65, "\(value) \(command): \(result.status) \(result.stderr)")
                #expect(result.stderr.contains("corrupt") || result.stderr.contains("cannot read"), "\(result.stderr)")
            }
        }
    }

    /// After a refusal the store still takes ordinary writes.
    static func stillWorks(_ sandbox: Sandbox, victim: String, attacker: String) async throws {
        #expect(try await sandbox.run("track", victim, "command_spoken").status == 0)
        #expect(try await sandbox.run("track", attacker, "command_spoken").status == 0)
        let linked = try await sandbox.run("link", attacker, "--provider", "google", "--subject", "attacker-sub")
        #expect(linked.status == 0, "\(linked.stderr)")
        #expect(try await sandbox.run("db", "check").status == 0)
    }
}

/// Bytes outside the listed entries, and compression inside
/// compression, in archives this deployment signed. Each is refused by
/// `verify`, `inspect` and `import` with 65 and one line, and the store is
/// unchanged.
@Suite("Hostile archive layouts")
struct HostileLayoutTests {
    /// Rewrites a signed export's bytes: `layout.py SOURCE CASE OUT`.
    static let script = """
        import gzip, io, struct, subprocess, sys, tarfile
        source, case, out = sys.argv[1:4]
        data = open(source, 'rb').read()
        zstd = source.endswith('.gmbackup')
        def unpack(data):
            return subprocess.run(['zstd', '-dcq'], input=data, capture_output=True, check=True).stdout if zstd else gzip.decompress(data)
        def pack(raw):
            return subprocess.run(['zstd', '-cq'], input=raw, capture_output=True, check=True).stdout if zstd else gzip.compress(raw)
        def ends(raw):
            with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
                return [m.offset_data + (m.size + 511) // 512 * 512 for m in tar.getmembers()]
        def block(kind, payload):
            info = tarfile.TarInfo('extra')
            info.type = kind
            info.size = len(payload)
            return info.tobuf(tarfile.USTAR_FORMAT, 'utf-8', 'surrogateescape') + payload + bytes(-len(payload) % 512)
        def insert(kind, where):
            raw = unpack(data)
            at = ends(raw)[0 if where == 'between' else -1]
            return pack(raw[:at] + block(kind, b'comment=planted by nobody\\n') + raw[at:])
        cases = {
            'pax-global-between': lambda: insert(tarfile.XGLTYPE, 'between'),
            'pax-global-after-signature': lambda: insert(tarfile.XGLTYPE, 'after'),
            'volume-label-between': lambda: insert(b'V', 'between'),
            'volume-label-after-signature': lambda: insert(b'V', 'after'),
            'pax-comment-between': lambda: insert(tarfile.XHDTYPE, 'between'),
            'garbage-after-stream': lambda: data + b'garbage\\n',
            'second-stream': lambda: data + pack(b'\\0' * 1024),
            'zstd-skippable-frame': lambda: data + struct.pack('<II', 0x184D2A50, 4) + b'abcd',
            'data-after-end-marker': lambda: pack(unpack(data) + b'x' * 512),
        }
        open(out, 'wb').write(cases[case]())
        """

    static let tarCases = [
        "pax-global-between", "pax-global-after-signature", "volume-label-between", "volume-label-after-signature",
        "pax-comment-between", "garbage-after-stream", "second-stream", "data-after-end-marker",
    ]

    @Test(
        "bytes outside the entries are refused, in .tar.gz and .tar.zst",
        arguments: tarCases.flatMap { [($0, "tar.gz"), ($0, "gmbackup")] } + [("zstd-skippable-frame", "gmbackup")])
    func outsideTheEntries(kind: String, format: String) async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let user = try await sandbox.run("guest", "new", "--quiet").stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(try await sandbox.run("track", user, "command_spoken").status == 0)
        #expect(try await sandbox.run("backup", "export", user, "--out", "signed.\(format)").status == 0)
        try sandbox.write("layout.py", Self.script)
        let made = try await sandbox.shell("python3 layout.py signed.\(format) \(kind) hostile.\(format)")
        #expect(made.status == 0, "\(made.stderr)")
        let before = try sandbox.snapshot()
        for command in [
            ["backup", "verify", "hostile.\(format)"], ["backup", "verify", "--full", "hostile.\(format)"],
            ["backup", "inspect", "hostile.\(format)"],
            ["backup", "import", "hostile.\(format)", "--on-conflict", "replace"],
        ] {
            let result = try await sandbox.run(arguments: command)
            #expect(result.status == 65, "\(kind) \(format) \(command): \(result.stdout) \(result.stderr)")
            #expect(!result.signalled)
            let message = result.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(!message.isEmpty && !message.contains("\n") || command[1] == "verify", "\(message)")
            #expect(
                (result.stdout + result.stderr).contains("hostile.\(format)")
                    && !(result.stdout + result.stderr).contains("signed by this deployment"),
                "\(kind): \(result.stdout)")
            #expect(try sandbox.snapshot() == before, "\(kind) \(command) changed the store")
        }
    }

    /// Rewrites a signed zip export: bytes hidden between entries (an entry
    /// left out of the central directory), a comment on an entry, an unknown
    /// extra field. libarchive reads zip entries through the central
    /// directory, so none of these reached it.
    static let zipScript = """
        import struct, sys, zipfile
        source, case, out = sys.argv[1:4]
        with zipfile.ZipFile(source) as archive:
            entries = [(info.filename, archive.read(info.filename)) for info in archive.infolist()]
        with zipfile.ZipFile(out, 'w') as archive:
            for index, (name, data) in enumerate(entries):
                info = zipfile.ZipInfo(name)
                if case == 'zip-entry-comment' and name == 'manifest.json':
                    info.comment = b'planted'
                if case == 'zip-unknown-extra' and index == 1:
                    info.extra = struct.pack('<HH', 0x6666, 7) + b'planted'
                archive.writestr(info, data)
                if case == 'zip-hidden-entry' and index == 0:
                    archive.writestr('data/records/000009.ndjson', b'planted\\n')
            if case == 'zip-hidden-entry':
                archive.filelist = [i for i in archive.filelist if i.filename != 'data/records/000009.ndjson']
        """

    @Test(
        "bytes outside the entries of a zip archive are refused",
        arguments: ["zip-hidden-entry", "zip-entry-comment", "zip-unknown-extra"])
    func outsideTheZipEntries(kind: String) async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let user = try await sandbox.run("guest", "new", "--quiet").stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(try await sandbox.run("track", user, "command_spoken").status == 0)
        #expect(try await sandbox.run("backup", "export", user, "--out", "signed.zip").status == 0)
        try sandbox.write("zip.py", Self.zipScript)
        let rewritten = try await sandbox.shell("python3 zip.py signed.zip none same.zip")
        #expect(rewritten.status == 0, "\(rewritten.stderr)")
        // Rewritten without a change, the archive is still this deployment's: only the planted bytes are refused.
        #expect(
            try await sandbox.run("backup", "verify", "--full", "same.zip").stdout.contains("signed by this deployment")
        )
        let made = try await sandbox.shell("python3 zip.py signed.zip \(kind) hostile.zip")
        #expect(made.status == 0, "\(made.stderr)")
        let before = try sandbox.snapshot()
        for command in [
            ["backup", "verify", "hostile.zip"], ["backup", "inspect", "hostile.zip"],
            ["backup", "import", "hostile.zip", "--on-conflict", "replace"],
        ] {
            let result = try await sandbox.run(arguments: command)
            #expect(result.status == 65, "\(kind) \(command): \(result.stdout) \(result.stderr)")
            #expect(!result.signalled)
            #expect((result.stdout + result.stderr).contains("refusing the archive 'hostile.zip'"), "\(result.stdout)")
            #expect(try sandbox.snapshot() == before, "\(kind) \(command) changed the store")
        }
    }

    /// A gzip whose content is another gzip with an oversized FEXTRA and an
    /// unterminated FNAME (the shape of libarchive's
    /// test_read_filter_gzip_recursive, built here), and a zstd inside a zstd.
    static let nested = """
        import gzip, struct, subprocess
        inner = b'\\x1f\\x8b\\x08' + bytes([0x04 | 0x08]) + bytes(4) + b'\\x00\\xff' + struct.pack('<H', 0xFFFF) + b'A' * 4000
        open('nested.tar.gz', 'wb').write(gzip.compress(gzip.compress(inner)))
        once = subprocess.run(['zstd', '-cq', 'signed.gmbackup'], capture_output=True, check=True).stdout
        open('nested.gmbackup', 'wb').write(once)
        """

    @Test("compression inside compression is refused at once from a file and from '-', in bounded time and memory")
    func nestedCompression() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let user = try await sandbox.run("guest", "new", "--quiet").stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(try await sandbox.run("backup", "export", user, "--out", "signed.gmbackup").status == 0)
        try sandbox.write("nested.py", Self.nested)
        let made = try await sandbox.shell("python3 nested.py")
        #expect(made.status == 0, "\(made.stderr)")
        let before = try sandbox.snapshot()
        let binary = Sandbox.binary.path
        for name in ["nested.tar.gz", "nested.gmbackup"] {
            for command in ["backup verify \(name)", "backup inspect \(name)", "backup import \(name)"] {
                // A hang detector, not a timing assertion: libarchive 3.6.2's own bidding never ended here.
                for (label, script) in [
                    ("file", "ulimit -v 4000000; exec timeout -s KILL 30 '\(binary)' \(command)"),
                    (
                        "stdin",
                        "ulimit -v 4000000; cat \(name) | timeout -s KILL 30 '\(binary)' \(command.replacingOccurrences(of: name, with: "-"))"
                    ),
                ] {
                    let result = try await sandbox.shell(script)
                    #expect(result.status == 65, "\(command) (\(label)): \(result.status) \(result.stderr)")
                    let lines = result.stderr.split(separator: "\n")
                    #expect(
                        command.hasPrefix("backup verify") ? lines.count <= 2 : lines.count == 1, "\(result.stderr)")
                    let said = result.stdout + result.stderr
                    #expect(
                        said.contains("compressed twice") || said.contains("compressed 2 times"), "\(command): \(said)")
                }
            }
        }
        #expect(try sandbox.snapshot() == before)
    }
}

@Suite("Hostile archives on PostgreSQL")
struct HostileArchivePostgresTests {
    @Test("rows the command line could not have written are refused on PostgreSQL too, tables unchanged")
    func refused() async throws {
        let sandbox = try await Sandbox.withPostgresStore("voice")
        let user = try await sandbox.run("guest", "new", "--quiet").stdout.trimmingCharacters(
            in: .whitespacesAndNewlines)
        #expect(try await sandbox.run("track", user, "command_spoken").status == 0)
        #expect(try await sandbox.run("record", "put", user, "commands", "k1", "--data", #"{"a":1}"#).status == 0)
        #expect(
            try await sandbox.run("backup", "export", user, "--out", "attacker.tar.gz", "--format", "tar.gz").status
                == 0)
        let schema = sandbox.postgresSchema
        let dump =
            "psql -tA -d '\(sandbox.postgresURI)' -c 'SELECT * FROM \(schema).users ORDER BY id' -c 'SELECT user_id, action, count FROM \(schema).events ORDER BY id' -c 'SELECT * FROM \(schema).counters' -c 'SELECT * FROM \(schema).records' -c 'SELECT owner_id, key, journal_id FROM \(schema).conflict_archive'"
        let before = try await sandbox.shell(dump)
        #expect(before.status == 0, "\(before.stderr)")
        for (kind, code) in [("count-max", "bad_row"), ("nul-user", "nul_in_text"), ("record-deep", "bad_row")] {
            let made = try await sandbox.shell(
                "python3 '\(HostileArchiveTests.script)' attacker.tar.gz \(kind) \(kind).tar.gz victim")
            #expect(made.status == 0, "\(made.stderr)")
            let imported = try await sandbox.run(
                "backup", "import", "\(kind).tar.gz", "--on-conflict", "replace", "--json")
            #expect(imported.status == 65, "\(kind): \(imported.stderr)")
            #expect(imported.errorJSON["code"] as? String == code, "\(kind): \(imported.stderr)")
            #expect(try await sandbox.shell(dump).stdout == before.stdout, "\(kind) changed the tables")
        }
        // A merge journal that is not in this store is not carried over as a number that means nothing here.
        let made = try await sandbox.shell(
            "python3 '\(HostileArchiveTests.script)' attacker.tar.gz conflict-dangling-journal dangling.tar.gz victim")
        #expect(made.status == 0, "\(made.stderr)")
        let imported = try await sandbox.run("backup", "import", "dangling.tar.gz", "--on-conflict", "replace")
        #expect(imported.status == 0, "\(imported.stderr)")
        let stored = try await sandbox.shell(
            "psql -tA -d '\(sandbox.postgresURI)' -c \"SELECT key, coalesce(journal_id::text, 'none') FROM \(schema).conflict_archive\""
        )
        #expect(stored.stdout == "lost|none\n", "\(stored.stdout)\(stored.stderr)")
    }
}

@Suite("Archives from standard input are named '-' in every message")
struct StandardInputArchiveNameTests {
    @Test("verify, inspect and import of a damaged archive on standard input name '-', not the spool file")
    func namedDash() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        // A gzip header followed by bytes that are not deflate data.
        let damaged = Data([0x1F, 0x8B, 0x08, 0x00, 0, 0, 0, 0, 0, 0x03]) + Data(repeating: 0xFF, count: 64)
        for command in [["backup", "verify", "-"], ["backup", "inspect", "-"], ["backup", "import", "-"]] {
            let result = try await sandbox.run(arguments: command, input: damaged)
            #expect(result.status == 65, "\(command): \(result.stderr)")
            #expect(result.stderr.contains("'-'"), "\(command): \(result.stderr)")
            #expect(!result.stderr.contains("guestmode-stream-"), "\(command): \(result.stderr)")
        }
    }
}
