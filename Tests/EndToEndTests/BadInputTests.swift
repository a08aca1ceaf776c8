import Foundation
import Testing

/// One bad command line: what
/// is run, the exit status it must end with and a fragment its message must
/// hold. `{G}` in the arguments and the setup script is a guest of the store.
struct BadInput: Sendable, CustomTestStringConvertible {
    var arguments: [String]
    var input: String?
    var status: Int32
    var fragment: String
    var profile = "voice"
    /// A shell script run in the sandbox first (to write the files the case reads).
    var setup: String?

    init(
        _ arguments: [String], input: String? = nil, _ status: Int32, _ fragment: String, profile: String = "voice",
        setup: String? = nil
    ) {
        self.arguments = arguments
        self.input = input
        self.status = status
        self.fragment = fragment
        self.profile = profile
        self.setup = setup
    }

    var testDescription: String { "\(arguments.joined(separator: " ")) → \(status)" }

    static let all: [BadInput] = [
        // Numeric options are range-checked: no overflow trap.
        BadInput(["user", "list", "--inactive-days", "9223372036854775807"], 64, "--inactive-days"),
        BadInput(["user", "purge", "--inactive-days", "9223372036854775807", "--yes"], 64, "--inactive-days"),
        BadInput(["user", "list", "--inactive-days", "-1"], 64, "--inactive-days"),
        BadInput(["plan", "grant", "{G}", "premium", "--trial", "99999999999 years"], 64, "--trial"),
        BadInput(["plan", "grant", "{G}", "premium", "--until", "99999-01-01T00:00:00Z"], 64, "--until"),
        BadInput(["track", "{G}", "app_opened", "--count", "0"], 64, "--count"),
        BadInput(["track", "{G}", "app_opened", "--count", "9223372036854775808"], 64, "--count"),
        // Amounts are validated in one place, the gate as strictly as the ledger.
        BadInput(["meter", "check", "{G}", "api_minutes", "nan"], 64, "'nan'"),
        BadInput(["meter", "check", "{G}", "api_minutes", "0"], 64, "'0'"),
        BadInput(["meter", "check", "{G}", "api_minutes", "-1e9"], 64, "-1e9"),
        BadInput(["meter", "check", "{G}", "api_minutes", "--", "-5"], 64, "'-5'"),
        BadInput(["--json", "meter", "check", "{G}", "api_minutes", "nan"], 64, "invalid_amount"),
        BadInput(["meter", "use", "{G}", "api_minutes", "1e308"], 64, "'1e308'"),
        BadInput(["meter", "use", "{G}", "api_minutes", "inf"], 64, "'inf'"),
        // Strict ISO 8601 times.
        BadInput(["--now", "2026-02-30", "user", "list"], 64, "'2026-02-30'"),
        BadInput(["--now", "2026-11-01T00:00:00+99:00", "user", "list"], 64, "+99:00"),
        BadInput(["--now", "yesterday", "user", "list"], 64, "'yesterday'"),
        // Records: valid UTF-8, strict JSON, an object.
        BadInput(
            ["record", "put", "{G}", "recipes", "k", "--file", "latin1.json"], 65, "not valid UTF-8",
            profile: "recipes",
            setup: #"printf '{"name":"cr\351pe"}' > latin1.json"#),
        BadInput(
            ["record", "put", "{G}", "recipes", "k", "--data", "[1,2,]"], 65, "trailing comma", profile: "recipes"),
        BadInput(
            ["record", "put", "{G}", "recipes", "k", "--data", #"{"a":1,}"#], 65, "trailing comma", profile: "recipes"),
        BadInput(
            ["record", "put", "{G}", "recipes", "k", "--data", "[1,2]"], 65, "not a JSON object", profile: "recipes"),
        BadInput(
            ["record", "put", "{G}", "recipes", "k", "--data", #""x""#], 65, "not a JSON object", profile: "recipes"),
        BadInput(
            ["record", "put", "{G}", "recipes", "k", "--data", "42"], 65, "not a JSON object", profile: "recipes"),
        BadInput(
            ["record", "put", "{G}", "recipes", "k", "--data", #"{"a":NaN}"#], 65, "not valid JSON", profile: "recipes"),
        BadInput(
            ["record", "put", "{G}", "recipes", "k", "--data", #"{"a":1e999}"#], 65, "out of range", profile: "recipes"),
        BadInput(
            ["record", "put", "{G}", "recipes", "k", "--data", #"{"a":1,"a":2}"#], 65, "duplicate", profile: "recipes"),
        BadInput(
            ["record", "put", "{G}", "recipes", "k", "--data", #"{"a":1} {"#], 65, "after the JSON value",
            profile: "recipes"),
        BadInput(
            ["record", "put", "{G}", "recipes", "k", "--data", #"{'a':1}"#], 65, "not valid JSON", profile: "recipes"),
        BadInput(
            [
                "record", "put", "{G}", "recipes", "k", "--data",
                #"{"a":"# + String(repeating: "[", count: 100_000) + "}",
            ], 65,
            "nesting", profile: "recipes"),
        BadInput(["record", "put", "{G}", "recipes", "k", "--data", ""], 65, "not valid JSON", profile: "recipes"),
        BadInput(
            ["record", "put", "{G}", "recipes", "k", "--file", "missing.json"], 66, "missing.json", profile: "recipes"),
        // Unknown names from the profile, and missing users and records.
        BadInput(
            ["record", "put", "{G}", "nope", "k", "--data", "{}"], 64, "unknown collection 'nope'", profile: "recipes"),
        BadInput(["meter", "use", "{G}", "nope", "1"], 64, "unknown meter 'nope'"),
        BadInput(["plan", "grant", "{G}", "gold"], 64, "no plan 'gold'"),
        BadInput(["link", "{G}", "--provider", "myspace", "--subject", "s"], 64, "unknown provider 'myspace'"),
        BadInput(["track", "{G}", "danced"], 64, "unknown action 'danced'"),
        BadInput(["prompt", "record", "{G}", "nope", "shown"], 64, "no prompt context 'nope'"),
        BadInput(["counters", "nobody"], 66, "no user 'nobody'"),
        BadInput(["user", "show", "nobody"], 66, "no user 'nobody'"),
        BadInput(["meter", "use", "nobody", "api_minutes", "1"], 66, "no user 'nobody'"),
        BadInput(["record", "get", "{G}", "recipes", "absent"], 66, "no record 'absent'", profile: "recipes"),
        BadInput(["merge", "{G}", "--into", "nobody", "--policy", "union"], 66, "no user 'nobody'"),
        BadInput(["migrate", "{G}", "--to", "{G}"], 64, "into itself"),
        BadInput(["init", "--profile", "nope", "--store", "other.sqlite"], 66, "no profile named 'nope'"),
        // Users: no empty or blank legacy usernames.
        BadInput(["guest", "new", "--username", "", "--secret-stdin"], input: "secret\n", 64, "username"),
        BadInput(["guest", "new", "--username", " padded ", "--secret-stdin"], input: "secret\n", 64, "username"),
        BadInput(["guest", "new", "--device", ""], 64, "device"),
        // Stores that are not store files.
        BadInput(["--store", "folder", "user", "list"], 73, "is a directory", setup: "mkdir folder"),
        BadInput(["--store", "missing.sqlite", "user", "list"], 66, "no store at 'missing.sqlite'"),
        BadInput(["--store", "ftp://host/store", "user", "list"], 64, "is not a store guestmode can open"),
        BadInput(["--schema", "other", "user", "list"], 64, "--schema goes with a postgres:// store"),
        BadInput(
            ["--store", "postgres://u@127.0.0.1:1/x", "--schema", "Bad-Name", "user", "list"], 64, "not a schema name"),
        BadInput(
            ["--store", "garbage.sqlite", "user", "list"], 65, "garbage.sqlite",
            setup: "head -c 8192 /dev/urandom > garbage.sqlite"),
        // Event logs: each line checked, numbered in the message, nothing applied.
        BadInput(["track", "--from", "missing.ndjson"], 66, "missing.ndjson"),
        BadInput(
            ["track", "--from", "log.ndjson"], 65, "log.ndjson:2: not a JSON object",
            setup:
                #"printf '{"user":"{G}","action":"app_opened"}\n{"user":"{G}","action":"app_opened",}\n' > log.ndjson"#),
        BadInput(
            ["track", "--from", "log.ndjson"], 65, "log.ndjson:1: 'count' must be a whole number",
            setup: #"printf '{"user":"{G}","action":"app_opened","count":true}\n' > log.ndjson"#),
        BadInput(
            ["track", "--from", "log.ndjson"], 65, "log.ndjson:1: 'count' must be from 1 to 1000000000",
            setup: #"printf '{"user":"{G}","action":"app_opened","count":1e12}\n' > log.ndjson"#),
        BadInput(
            ["track", "--from", "log.ndjson"], 65, "log.ndjson:1: 'count' must be from 1 to 1000000000",
            setup: #"printf '{"user":"{G}","action":"app_opened","count":0}\n' > log.ndjson"#),
        BadInput(
            ["track", "--from", "log.ndjson"], 65, "log.ndjson:1: 'user' must be a string",
            setup: #"printf '{"user":7,"action":"app_opened"}\n' > log.ndjson"#),
        BadInput(
            ["track", "--from", "log.ndjson"], 65, "log.ndjson:1: no user 'ghost'",
            setup: #"printf '{"user":"ghost","action":"app_opened"}\n' > log.ndjson"#),
        BadInput(
            ["track", "--from", "log.ndjson"], 65, "log.ndjson:1: property 'p' must be a string or a number",
            setup: #"printf '{"user":"{G}","action":"app_opened","props":{"p":[1]}}\n' > log.ndjson"#),
        BadInput(
            ["track", "--from", "-"], input: "{\"user\":\"{G}\",\"action\":\"app_opened\"}\n\u{1}\n", 65,
            "<stdin>:2: not a JSON object"),
        BadInput(["track", "--from", "/dev/zero"], 65, "/dev/zero:1: the line is longer than 1048576 bytes"),
        BadInput(["replay", "/dev/zero"], 65, "/dev/zero:1: the line is longer than 1048576 bytes"),
        BadInput(
            ["replay", "log.ndjson"], 65, "log.ndjson:1:",
            setup: #"printf '{"user":"u","action":"app_opened","at":"2026-02-30T00:00:00Z"}\n' > log.ndjson"#),
    ]
}

@Suite("Bad input: refused with the documented exit status, never a signal, store unchanged")
struct BadInputTests {
    @Test("bad command line", arguments: BadInput.all)
    func refused(_ bad: BadInput) async throws {
        let sandbox = try await Sandbox.withStore(bad.profile)
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let guest = try await sandbox.newGuest()
        if let setup = bad.setup {
            let prepared = try await sandbox.shell(setup.replacingOccurrences(of: "{G}", with: guest))
            #expect(prepared.status == 0, "setup: \(prepared.stderr)")
        }
        let before = try storeBytes(sandbox)
        let arguments = bad.arguments.map { $0.replacingOccurrences(of: "{G}", with: guest) }
        let input = bad.input.map { Data($0.replacingOccurrences(of: "{G}", with: guest).utf8) }
        let result = try await sandbox.run(arguments: arguments, input: input)
        #expect(!result.signalled, "died by signal \(result.status): \(result.stderr)")
        #expect(result.status == bad.status, "exit \(result.status), stderr: \(result.stderr.prefix(400))")
        #expect(result.stderr.contains(bad.fragment), "stderr: \(result.stderr.prefix(400))")
        // A usage error is one line; a bad log lists each bad line (file:line), one per line.
        if bad.status == 64 && !arguments.contains("--json") {
            #expect(result.stderr.split(separator: "\n").count == 1, "not one line: \(result.stderr.prefix(400))")
        }
        #expect(try storeBytes(sandbox) == before, "the store changed")
    }

    @Test("standard input that cannot be read is io_error, exit 74, not a crash, and changes nothing")
    func unreadableStandardInput() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        let guest = try await sandbox.newGuest()
        let before = try storeBytes(sandbox)
        let binary = Sandbox.binary.path
        // Standard input a directory: read(2) fails with EISDIR.
        for command in [
            "track --from -", "record put \(guest) habits k --file -", "backup key import -", "prompt record --from -",
        ] {
            for json in ["", " --json"] {
                let result = try await sandbox.shell("'\(binary)' \(command)\(json) </")
                #expect(!result.signalled, "\(command): signal: \(result.stderr)")
                #expect(result.status == 74, "\(command)\(json): exit \(result.status): \(result.stderr)")
                let message = "cannot read standard input: Is a directory"
                if json.isEmpty {
                    #expect(result.stderr == "guestmode: \(message)\n", "\(command): \(result.stderr)")
                } else {
                    #expect(result.errorJSON["code"] as? String == "io_error", "\(command): \(result.stderr)")
                    #expect(result.errorJSON["message"] as? String == message, "\(command): \(result.stderr)")
                }
            }
        }
        #expect(try storeBytes(sandbox) == before, "the store changed")
    }

    /// The store file and its WAL, if one is left.
    private func storeBytes(_ sandbox: Sandbox) throws -> [Data] {
        try ["guestmode.sqlite", "guestmode.sqlite-wal"].map { name in
            FileManager.default.fileExists(atPath: sandbox.path(name)) ? try sandbox.read(name) : Data()
        }
    }

    @Test("\"count\": 1, the documented default, is accepted in track --from; true is not a count")
    func countOneIsAccepted() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let guest = try await sandbox.newGuest()
        let log =
            #"{"user":"\#(guest)","action":"app_opened","count":1}"# + "\n"
            + #"{"user":"\#(guest)","action":"app_opened","count":2.0,"id":"k"}"# + "\n"
        let result = try await sandbox.run("track", "--from", "-", "--json", input: log)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.object["applied"] as? Int == 2)
        #expect(try await sqlite(sandbox, "SELECT total FROM counters WHERE action = 'app_opened'") == "3")
    }

    @Test("event props numbers are stored and come back as JSON numbers")
    func propsNumbersStayNumbers() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let guest = try await sandbox.newGuest()
        let log =
            #"{"user":"\#(guest)","action":"app_opened","props":{"minutes":3,"ratio":1.5,"big":12345678901234567890,"name":"x/y"}}"#
        let result = try await sandbox.run("track", "--from", "-", input: log)
        #expect(result.status == 0, "\(result.stderr)")
        let stored = try await sqlite(sandbox, "SELECT properties FROM events WHERE action = 'app_opened'")
        #expect(stored == #"{"big":12345678901234567890,"minutes":3,"name":"x/y","ratio":1.5}"#)
        #expect(try await sqlite(sandbox, "SELECT json_type(properties, '$.minutes') FROM events") == "integer")
    }

    @Test("a record is stored as canonical JSON when it is a valid object")
    func validRecordsStillWork() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let guest = try await sandbox.newGuest()
        try sandbox.write(
            "recipe.json", #"{ "title": "Crêpe \ud83e\udd5e", "steps": [1, 2], "b": {"z": null, "a": true} }"#)
        let put = try await sandbox.run("record", "put", guest, "recipes", "r1", "--file", "recipe.json")
        #expect(put.status == 0, "\(put.stderr)")
        let get = try await sandbox.run("record", "get", guest, "recipes", "r1")
        #expect(get.stdout.contains(#""title":"Crêpe 🥞""#), "\(get.stdout)")
        #expect(get.stdout.contains(#""b":{"a":true,"z":null}"#))
    }

    @Test("a 40 MB line in track --from or replay is refused with 65 naming the line, not read for minutes")
    func hugeLineIsRefused() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let guest = try await sandbox.newGuest()
        let prepared = try await sandbox.shell(
            #"printf '{"user":"\#(guest)","action":"app_opened"}\n{"user":"' > huge.ndjson && head -c 41943040 /dev/zero | tr '\0' x >> huge.ndjson && printf '","action":"app_opened"}\n' >> huge.ndjson"#
        )
        #expect(prepared.status == 0)
        let before = try sandbox.snapshot()
        let track = try await sandbox.run("track", "--from", "huge.ndjson")
        #expect(track.status == 65, "\(track.stderr)")
        #expect(track.stderr.contains("huge.ndjson:2: the line is longer than 1048576 bytes"))
        let piped = try await sandbox.shell("\(Sandbox.binary.path) track --from - < huge.ndjson")
        #expect(piped.status == 65)
        #expect(piped.stderr.contains("<stdin>:2: the line is longer than 1048576 bytes"))
        let replay = try await sandbox.run("replay", "huge.ndjson")
        #expect(replay.status == 65)
        #expect(replay.stderr.contains("huge.ndjson:2: the line is longer"))
        #expect(try sandbox.snapshot() == before)
        // A line just under the limit is still read (and refused only for what it says).
        let long = try await sandbox.shell(
            #"{ printf '{"user":"\#(guest)","action":"app_opened","id":"'; head -c 1048000 /dev/zero | tr '\0' k; printf '"}\n'; } > long.ndjson"#
        )
        #expect(long.status == 0)
        #expect(try await sandbox.run("track", "--from", "long.ndjson").status == 0)
    }

    @Test("an endless input on standard input is refused (65), not spooled until the disk is full")
    func endlessStandardInput() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        sandbox.environment["TMPDIR"] = sandbox.directory.path
        let result = try await sandbox.shell("head -c 200000000 /dev/zero | \(Sandbox.binary.path) track --from -")
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stderr.contains("<stdin>:1: the line is longer than 1048576 bytes"))
        let spools = try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path)
            .filter { $0.hasPrefix("guestmode-track-") }
        #expect(spools.isEmpty, "spool left behind: \(spools)")
    }
}

/// Text that is not valid UTF-8 or holds U+0000 (`TextRule`),
/// given the ways a shell can give it: raw bytes in an argument or the
/// environment (which Swift would hand over repaired, as U+FFFD), bytes and
/// `\u0000` escapes in the files guestmode reads rows from. `{GM}` is the
/// binary, `{G}` a guest of the store.
struct UntrustedText: Sendable, CustomTestStringConvertible {
    var script: String
    var fragment: String
    var code: String
    var profile = "recipes"
    var setup: String?
    /// Bulk commands print each bad line, then their verdict.
    var isOneLine = true

    var testDescription: String { script }

    static let all: [UntrustedText] = [
        // Arguments: the raw bytes are checked before anything parses them, named by position and option.
        UntrustedText(
            script: #"{GM} record put {G} recipes "$(printf 'k\377x')" --data '{}'"#,
            fragment: #"argument 5 is not valid UTF-8 ('k\xFFx', first bad byte at offset 1)"#, code: "invalid_utf8"),
        UntrustedText(
            script: #"{GM} record put {G} recipes k --data "$(printf '{"a":"\351"}')""#,
            fragment: "argument 7 (after --data) is not valid UTF-8", code: "invalid_utf8"),
        UntrustedText(
            script: #"{GM} record put {G} recipes k "--data=$(printf '{"a":"\351"}')""#,
            fragment: "argument 6 (the value of --data) is not valid UTF-8", code: "invalid_utf8"),
        UntrustedText(
            script: #"{GM} track "$(printf '{G}\300\257')" app_opened"#,
            fragment: "argument 2 is not valid UTF-8", code: "invalid_utf8"),
        UntrustedText(
            script: #"{GM} track {G} app_opened --prop "$(printf 'source=\377')""#,
            fragment: "argument 5 (after --prop) is not valid UTF-8", code: "invalid_utf8"),
        UntrustedText(
            script: #"{GM} link {G} --provider google --subject "$(printf 's\355\240\200')""#,
            fragment: "argument 6 (after --subject) is not valid UTF-8", code: "invalid_utf8"),
        UntrustedText(
            script: #"GUESTMODE_NOW="$(printf '2026\377')" {GM} track {G} app_opened"#,
            fragment: "the environment variable GUESTMODE_NOW is not valid UTF-8", code: "invalid_utf8"),
        UntrustedText(
            script: #"printf 's\377\n' | {GM} guest new --username bob --secret-stdin"#,
            fragment: "the secret on standard input (--secret-stdin) is not valid UTF-8", code: "invalid_utf8"),
        // Record data: a "\u0000" escape is valid JSON but stands for U+0000.
        UntrustedText(
            script: #"{GM} record put {G} recipes k --data '{"a":"x\u0000y"}'"#,
            fragment: #"the record data (member "a") contains U+0000"#, code: "nul_in_text"),
        UntrustedText(
            script: #"{GM} record put {G} recipes k --data '{"a\u0000":1}'"#,
            fragment: "contains U+0000", code: "nul_in_text"),
        UntrustedText(
            script: #"{GM} record put {G} recipes k --file nul.json"#,
            fragment: "the record data contains U+0000", code: "nul_in_text",
            setup: #"printf '{"a":"x\000"}' > nul.json"#),
        // record load: keys and data, from a file or standard input.
        UntrustedText(
            script: #"{GM} record load r.ndjson"#,
            fragment: "r.ndjson:2: the record key contains U+0000", code: "nul_in_text",
            setup:
                #"printf '{"user_id":"{G}","collection":"recipes","key":"ok","data":{}}\n{"user_id":"{G}","collection":"recipes","key":"k\\u0000evil","data":{}}\n' > r.ndjson"#
        ),
        UntrustedText(
            script: #"{GM} record load r.ndjson"#,
            fragment: "r.ndjson:1: the line is not valid UTF-8", code: "invalid_utf8",
            setup: #"printf '{"user_id":"{G}","collection":"recipes","key":"k\377","data":{}}\n' > r.ndjson"#),
        UntrustedText(
            script: #"{GM} record load - < r.ndjson"#,
            fragment: "<stdin>:1: the line is not valid UTF-8", code: "invalid_utf8",
            setup: #"printf '{"user_id":"{G}","collection":"recipes","key":"k","data":{"t":"\351"}}\n' > r.ndjson"#),
        UntrustedText(
            script: #"{GM} record load r.ndjson"#,
            fragment: #"r.ndjson:1: the record data (member "t") contains U+0000"#, code: "nul_in_text",
            setup: #"printf '{"user_id":"{G}","collection":"recipes","key":"k","data":{"t":"\\u0000"}}\n' > r.ndjson"#),
        UntrustedText(
            script: #"{GM} record load r.ndjson"#,
            fragment: "r.ndjson:1: the user id contains U+0000", code: "nul_in_text",
            setup: #"printf '{"user_id":"{G}\\u0000x","collection":"recipes","key":"k","data":{}}\n' > r.ndjson"#),
        // track --from: users, actions, keys, properties; the line is named, nothing applied.
        UntrustedText(
            script: #"{GM} track --from e.ndjson --create-users"#,
            fragment: "e.ndjson:1: the user id contains U+0000", code: "invalid_event_log",
            setup: #"printf '{"user":"u\\u0000v","action":"app_opened"}\n' > e.ndjson"#, isOneLine: false),
        UntrustedText(
            script: #"{GM} track --from e.ndjson"#,
            fragment: "e.ndjson:2: the line is not valid UTF-8", code: "invalid_event_log",
            setup:
                #"printf '{"user":"{G}","action":"app_opened"}\n{"user":"{G}","action":"app_opened","props":{"p":"\377"}}\n' > e.ndjson"#,
            isOneLine: false),
        UntrustedText(
            script: #"{GM} track --from - --skip-invalid < e.ndjson; {GM} track --from - < e.ndjson"#,
            fragment: #"<stdin>:1: the property "p" contains U+0000"#, code: "invalid_event_log",
            setup: #"printf '{"user":"{G}","action":"app_opened","props":{"p":"a\\u0000"}}\n' > e.ndjson"#,
            isOneLine: false),
        UntrustedText(
            script: #"{GM} track --from e.ndjson"#,
            fragment: "e.ndjson:1: the idempotency key contains U+0000", code: "invalid_event_log",
            setup: #"printf '{"user":"{G}","action":"app_opened","id":"k\\u0000"}\n' > e.ndjson"#, isOneLine: false),
        // The other files rows are read from.
        UntrustedText(
            script: #"{GM} replay e.ndjson"#, fragment: "e.ndjson:1: the line is not valid UTF-8",
            code: "malformed_log",
            setup: #"printf '{"user":"u\377","action":"app_opened"}\n' > e.ndjson"#, isOneLine: false),
        UntrustedText(
            script: #"{GM} prompt record --from p.ndjson"#, fragment: "p.ndjson:1: the user id contains U+0000",
            code: "malformed_log",
            setup:
                #"printf '{"user":"{G}\\u0000x","context":"first_recipe_success","outcome":"shown","at":"2026-11-01T00:00:00Z"}\n' > p.ndjson"#,
            isOneLine: false),
    ]
}

@Suite("Untrusted text: refused with 65, never repaired or cut, store unchanged")
struct UntrustedTextTests {
    @Test("text that breaks the rule", arguments: UntrustedText.all)
    func refused(_ bad: UntrustedText) async throws {
        let sandbox = try await Sandbox.withStore(bad.profile)
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        let guest = try await sandbox.newGuest()
        func expand(_ text: String) -> String {
            text.replacingOccurrences(of: "{G}", with: guest).replacingOccurrences(
                of: "{GM}", with: Sandbox.binary.path)
        }
        if let setup = bad.setup {
            let prepared = try await sandbox.shell(expand(setup))
            #expect(prepared.status == 0, "setup: \(prepared.stderr)")
        }
        let before = try sandbox.snapshot()
        let result = try await sandbox.shell(expand(bad.script))
        #expect(!result.signalled)
        #expect(result.status == 65, "exit \(result.status), stderr: \(result.stderr.prefix(400))")
        #expect(result.stderr.contains(bad.fragment), "stderr: \(result.stderr.prefix(600))")
        if bad.isOneLine {
            #expect(result.stderr.split(separator: "\n").count == 1, "stderr: \(result.stderr)")
        }
        #expect(result.stdout.isEmpty || !bad.isOneLine, "stdout: \(result.stdout)")
        let json = try await sandbox.shell(expand(bad.script.replacingOccurrences(of: "{GM} ", with: "{GM} --json ")))
        #expect(json.status == 65)
        // track --from lists its progress and bad lines before the error document.
        let lines = json.stderr.split(separator: "\n", omittingEmptySubsequences: false)
        let document = lines.lastIndex(of: "{").map { lines[$0...].joined(separator: "\n") } ?? json.stderr
        let error = (try? JSONSerialization.jsonObject(with: Data(document.utf8))) as? [String: Any]
        #expect(
            (error?["error"] as? [String: Any])?["code"] as? String == bad.code, "stderr: \(json.stderr.prefix(600))")
        #expect(try sandbox.snapshot() == before, "the store changed")
        #expect(try await sqlite(sandbox, "SELECT count(*) FROM users") == "1")
    }
}

@Suite("Counts that would overflow: refused with 65, the store never poisoned")
struct CounterOverflowTests {
    @Test("a counter at the edge refuses the next track, on its own or from a log, and changes nothing")
    func trackPastTheEdge() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("track", guest, "app_opened", "--count", "5").status == 0)
        #expect(try await sandbox.run("db", "check").status == 0)
        let planted = try await sandbox.shell(
            "sqlite3 guestmode.sqlite \"UPDATE counters SET total = 9223372036854775800 WHERE action = 'app_opened'\"")
        #expect(planted.status == 0)
        let before = try sandbox.snapshot()
        let track = try await sandbox.run("track", guest, "app_opened", "--count", "10")
        #expect(!track.signalled)
        #expect(track.status == 65, "\(track.stderr)")
        #expect(track.stderr.split(separator: "\n").count == 1, "\(track.stderr)")
        #expect(
            track.stderr.contains(
                "the counter 'app_opened' of user '\(guest)' holds 9223372036854775800; adding 10 would pass 9223372036854775807"
            ), "\(track.stderr)")
        let json = try await sandbox.run("--json", "track", guest, "app_opened", "--count", "10")
        #expect(json.errorJSON["code"] as? String == "count_overflow", "\(json.stderr)")
        try sandbox.write("log.ndjson", #"{"user":"\#(guest)","action":"app_opened","count":1000000000}"# + "\n")
        let log = try await sandbox.run("track", "--from", "log.ndjson")
        #expect(log.status == 65, "\(log.stderr)")
        #expect(log.stderr.contains("adding 1000000000 would pass"), "\(log.stderr)")
        #expect(try sandbox.snapshot() == before, "the store changed")
        #expect(
            try await sqlite(sandbox, "SELECT typeof(total) FROM counters WHERE action = 'app_opened'") == "integer")
        // Up to the edge still counts; what reads counters still works.
        #expect(try await sandbox.run("track", guest, "app_opened", "--count", "7").status == 0)
        let counters = try await sandbox.run("counters", guest)
        #expect(counters.status == 0, "\(counters.stderr)")
        #expect(counters.stdout.contains("9223372036854775807"), "\(counters.stdout)")
        #expect(try await sandbox.run("user", "show", guest).status == 0)
    }

    @Test("db check on SQLite compares counters with their events and finds REAL or out-of-range counts")
    func checkFindsPoisonedCounts() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("track", guest, "app_opened", "--count", "5").status == 0)
        #expect(try await sandbox.run("track", guest, "recipe_viewed").status == 0)
        #expect(try await sandbox.run("db", "check").status == 0)
        let planted = try await sandbox.shell(
            """
            sqlite3 guestmode.sqlite "UPDATE counters SET total = 7 WHERE action = 'app_opened'; \
            UPDATE counters SET total = 1e19 WHERE action = 'recipe_viewed'; \
            UPDATE events SET count = 9223372036854775807 WHERE action = 'recipe_viewed'; \
            INSERT INTO outbox (user_id, queued_at, attempts) VALUES ('\(guest)', '2026-11-01T00:00:00Z', 2.5)"
            """)
        #expect(planted.status == 0)
        let before = try sandbox.snapshot()
        let checked = try await sandbox.run("db", "check", "--json")
        #expect(checked.status == 65, "\(checked.stderr)")
        let problems = (checked.object["problems"] as? [String]) ?? []
        #expect(
            problems.contains { $0.contains("counter app_opened") && $0.contains("is 7 but its events add up to 5") },
            "\(problems)")
        #expect(
            problems.contains { $0.contains("counter recipe_viewed") && $0.contains("not a whole number") },
            "\(problems)")
        #expect(problems.contains { $0.contains("has count 9223372036854775807") }, "\(problems)")
        #expect(problems.contains { $0.contains("has 2.5 attempts") }, "\(problems)")
        // A counter already poisoned is refused, not added to.
        let track = try await sandbox.run("--json", "track", guest, "recipe_viewed")
        #expect(track.status == 65)
        #expect(track.errorJSON["code"] as? String == "corrupt_store", "\(track.stderr)")
        #expect(try sandbox.snapshot() == before, "the store changed")
    }

    @Test("report usage adds up past the 64-bit range without failing: the sum saturates, as a meter's usage does")
    func usageReportSumDoesNotOverflow() async throws {
        let sandbox = try await Sandbox.withStore("voice")
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("meter", "use", guest, "api_minutes", "1").status == 0)
        // 16,384 uses of the largest amount a use may name: 1.6e19 millionths, past Int64.max.
        let planted = try await sandbox.shell(
            """
            sqlite3 guestmode.sqlite "UPDATE meter_usage SET amount = 999999999.999999" \
                && for i in $(seq 14); do sqlite3 guestmode.sqlite \
                "INSERT INTO meter_usage (user_id, meter, amount, at) SELECT user_id, meter, amount, at FROM meter_usage"; done
            """)
        #expect(planted.status == 0, "\(planted.stderr)")
        let before = try sandbox.snapshot()
        let report = try await sandbox.run("report", "usage", "--json")
        #expect(!report.signalled)
        #expect(report.status == 0, "\(report.stderr)")
        #expect(report.stdout.contains("9223372036854.775807"), "\(report.stdout)")
        let status = try await sandbox.run("meter", "status", guest, "api_minutes")
        #expect(status.status == 0, "\(status.stderr)")
        #expect(try sandbox.snapshot() == before)
    }
}

/// A command line refused before anything happens: the
/// exit status, exactly one line on standard error (or the error document
/// with --json), and not a byte written anywhere in the working directory.
struct RefusedCommandLine: Sendable, CustomTestStringConvertible {
    var arguments: [String]
    var status: Int32
    var fragment: String
    var environment: [String: String] = [:]

    init(_ arguments: [String], _ status: Int32, _ fragment: String, environment: [String: String] = [:]) {
        self.arguments = arguments
        self.status = status
        self.fragment = fragment
        self.environment = environment
    }

    var testDescription: String {
        (environment.map { "\($0.key)=\($0.value) " }.joined() + arguments.joined(separator: " ")) + " → \(status)"
    }

    static let at = "2026-11-01T10:00:00Z"

    static let all: [RefusedCommandLine] = [
        // (a) ArgumentParser's own errors: one line naming the command's help.
        RefusedCommandLine(
            ["track"], 64, "guestmode: missing USER and ACTION (or --from FILE); see 'guestmode track --help'"),
        RefusedCommandLine(
            ["track", "{G}", "app_opened", "--bogus"], 64,
            "guestmode: unknown option '--bogus'; see 'guestmode track --help'"),
        RefusedCommandLine(
            ["nosuchcommand"], 64, "guestmode: unexpected argument 'nosuchcommand'; see 'guestmode --help'"),
        RefusedCommandLine(
            ["init"], 64, "missing expected argument '--profile <name|file>'; see 'guestmode init --help'"),
        RefusedCommandLine(["backup", "key", "import"], 64, "see 'guestmode backup key import --help'"),
        RefusedCommandLine(["track", "{G}", "app_opened", "--count", "x"], 64, "'x' is invalid for '--count <n>'"),
        RefusedCommandLine(["--json", "user", "show"], 64, #""code" : "usage""#),
        RefusedCommandLine(
            ["plan", "grant", "{G}", "premium", "--trial", "1M"], 64, "; see 'guestmode plan grant --help'"),
        // (b) A single-value option given twice.
        RefusedCommandLine(
            ["track", "{G}", "app_opened", "--now", at, "--now", "2027-01-01T00:00:00Z"], 64,
            "--now takes one value but is given 2 times"),
        RefusedCommandLine(["--now", at, "track", "{G}", "app_opened", "--now", at], 64, "--now takes one value"),
        RefusedCommandLine(
            ["track", "{G}", "app_opened", "--count", "1", "--count", "2"], 64, "--count takes one value"),
        RefusedCommandLine(["track", "{G}", "app_opened", "--count=1", "--count", "2"], 64, "--count takes one value"),
        RefusedCommandLine(["track", "{G}", "app_opened", "--id", "a", "--id", "b"], 64, "--id takes one value"),
        RefusedCommandLine(
            ["record", "put", "{G}", "favorites", "k", "--data", "{}", "--data", "{}"], 64, "--data takes one value"),
        RefusedCommandLine(
            ["--store", "guestmode.sqlite", "user", "list", "--store", "other.sqlite"], 64, "--store takes one value"),
        RefusedCommandLine(
            ["--json", "meter", "use", "{G}", "api_minutes", "1", "--id", "a", "--id", "a"], 64, "takes one value"),
        // (c) An empty property name.
        RefusedCommandLine(["track", "{G}", "app_opened", "--prop", "=v"], 64, "--prop '=v' has an empty name"),
        // (d) help of a command that does not exist.
        RefusedCommandLine(["help", "nosuchcommand"], 64, "'guestmode nosuchcommand' is not a command"),
        RefusedCommandLine(["help", "backup", "nosuch"], 64, "'guestmode backup nosuch' is not a command"),
        // (e) A key file named by GUESTMODE_BACKUP_KEY_FILE is never created by a command that only uses the key.
        RefusedCommandLine(
            ["backup", "export", "{G}", "--out", "x.tar.zst"], 66,
            "GUESTMODE_BACKUP_KEY_FILE names 'typo.key', which does not exist",
            environment: ["GUESTMODE_BACKUP_KEY_FILE": "typo.key"]),
        RefusedCommandLine(
            ["backup", "key", "export", "--out", "k"], 66, "GUESTMODE_BACKUP_KEY_FILE names 'typo.key'",
            environment: ["GUESTMODE_BACKUP_KEY_FILE": "typo.key"]),
        RefusedCommandLine(
            ["--json", "backup", "export", "--all", "--out", "-"], 66, "backup_key_not_found",
            environment: ["GUESTMODE_BACKUP_KEY_FILE": "typo.key"]),
        // (f) Devices, FIFOs and directories as key or passphrase files: a true message, never a hang.
        RefusedCommandLine(
            ["backup", "export", "{G}", "--out", "x.tar.zst"], 66,
            "the backup key file '/dev/null' is a character device, not a regular file",
            environment: ["GUESTMODE_BACKUP_KEY_FILE": "/dev/null"]),
        RefusedCommandLine(
            ["backup", "export", "{G}", "--out", "x.tar.zst"], 66, "'/dev/zero' is a character device",
            environment: ["GUESTMODE_BACKUP_KEY_FILE": "/dev/zero"]),
        RefusedCommandLine(
            ["backup", "export", "{G}", "--out", "x.tar.zst"], 66, "the backup key file 'fifo' is a FIFO (named pipe)",
            environment: ["GUESTMODE_BACKUP_KEY_FILE": "fifo"]),
        RefusedCommandLine(
            ["backup", "export", "{G}", "--out", "x.tar.zst"], 66, "the backup key file 'folder' is a directory",
            environment: ["GUESTMODE_BACKUP_KEY_FILE": "folder"]),
        RefusedCommandLine(
            ["backup", "export", "{G}", "--out", "x.tar.zst", "--encrypt", "--passphrase-file", "/dev/null"], 66,
            "the passphrase file '/dev/null' is a character device"),
        RefusedCommandLine(
            ["backup", "export", "{G}", "--out", "x.tar.zst", "--encrypt", "--passphrase-file", "/dev/zero"], 66,
            "the passphrase file '/dev/zero' is a character device"),
        RefusedCommandLine(
            ["backup", "export", "{G}", "--out", "x.tar.zst", "--encrypt", "--passphrase-file", "fifo"], 66,
            "the passphrase file 'fifo' is a FIFO"),
        RefusedCommandLine(
            ["backup", "export", "{G}", "--out", "x.tar.zst", "--encrypt", "--passphrase-file", "folder"], 66,
            "the passphrase file 'folder' is a directory"),
        RefusedCommandLine(["backup", "verify", "signed.tar.zst", "--passphrase-file", "fifo"], 66, "is a FIFO"),
        RefusedCommandLine(
            ["backup", "key", "import", "/dev/null"], 66, "the key file '/dev/null' is a character device"),
        RefusedCommandLine(["backup", "key", "import", "fifo"], 66, "the key file 'fifo' is a FIFO"),
        RefusedCommandLine(["backup", "key", "import", "folder"], 66, "the key file 'folder' is a directory"),
    ]
}

@Suite("Command-line refusals: one line, the documented status, nothing written")
struct CommandLineRefusalTests {
    /// Every file in the sandbox with its bytes (the store, its key, the archive).
    static func contents(of sandbox: Sandbox) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: sandbox.directory.path) {
            let kind = try FileManager.default.attributesOfItem(atPath: sandbox.path(name))[.type] as? FileAttributeType
            files[name] = kind == .typeRegular ? try sandbox.read(name) : Data()
        }
        return files
    }

    @Test("refused", arguments: RefusedCommandLine.all)
    func refused(_ refused: RefusedCommandLine) async throws {
        let sandbox = try await Sandbox.withStore("voice")
        sandbox.environment["GUESTMODE_NOW"] = RefusedCommandLine.at
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("backup", "export", guest, "--out", "signed.tar.zst").status == 0)
        let prepared = try await sandbox.shell("mkfifo fifo && mkdir folder")
        #expect(prepared.status == 0, "\(prepared.stderr)")
        let before = try Self.contents(of: sandbox)
        // Through timeout(1): a command that blocked on the FIFO would fail here instead of hanging the suite.
        let quoted = refused.arguments.map { "'" + $0.replacingOccurrences(of: "{G}", with: guest) + "'" }
        let environment = refused.environment.map { "\($0.key)='\($0.value)' " }.joined()
        let result = try await sandbox.shell(
            "\(environment)timeout 30 '\(Sandbox.binary.path)' \(quoted.joined(separator: " ")) < /dev/null")
        #expect(result.status != 124, "timed out: \(result.stderr)")
        #expect(result.status == refused.status, "exit \(result.status), stderr: \(result.stderr)")
        #expect(result.stderr.contains(refused.fragment), "stderr: \(result.stderr)")
        if refused.arguments.contains("--json") {
            #expect(result.errorJSON["message"] as? String != nil, "\(result.stderr)")
        } else {
            #expect(result.stderr.split(separator: "\n").count == 1, "not one line: \(result.stderr)")
            #expect(result.stderr.hasPrefix("guestmode: "), "\(result.stderr)")
        }
        #expect(result.stdout.isEmpty, "\(result.stdout)")
        #expect(try Self.contents(of: sandbox) == before, "something was written")
    }

    @Test("init and backup key import are what create a key named by GUESTMODE_BACKUP_KEY_FILE")
    func namedKeyCreatedOnlyByInitAndImport() async throws {
        let sandbox = try Sandbox()
        sandbox.environment["GUESTMODE_BACKUP_KEY_FILE"] = sandbox.path("keys/deployment.key")
        let created = try await sandbox.run("init", "--profile", "voice", "--json")
        #expect(created.status == 0, "\(created.stderr)")
        #expect(FileManager.default.fileExists(atPath: sandbox.path("keys/deployment.key")))
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("backup", "export", guest, "--out", "a.tar.zst").status == 0)
        // Another machine of the deployment installs the key where its variable points, then uses it.
        #expect(try await sandbox.run("backup", "key", "export", "--out", "moved.key").status == 0)
        sandbox.environment["GUESTMODE_BACKUP_KEY_FILE"] = sandbox.path("elsewhere.key")
        #expect(try await sandbox.run("backup", "verify", "a.tar.zst").status == 66)
        #expect(try await sandbox.run("backup", "key", "import", "moved.key").status == 0)
        let verified = try await sandbox.run("backup", "verify", "a.tar.zst")
        #expect(verified.status == 0 && verified.stdout.contains("signed by this deployment"), "\(verified.stdout)")
        // A migration's safety backup cannot be signed with a key that is not there: refused before anything moves.
        let account = try await sandbox.newGuest()
        #expect(try await sandbox.run("link", account, "--provider", "apple", "--subject", "a-1").status == 0)
        sandbox.environment["GUESTMODE_BACKUP_KEY_FILE"] = sandbox.path("typo.key")
        let store = try sandbox.snapshot()
        let migrate = try await sandbox.run("migrate", guest, "--to", account)
        #expect(migrate.status == 66, "\(migrate.stderr)")
        #expect(migrate.stderr.contains("GUESTMODE_BACKUP_KEY_FILE names"), "\(migrate.stderr)")
        #expect(try sandbox.snapshot() == store)
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("typo.key")))
        #expect(!FileManager.default.fileExists(atPath: sandbox.path("guestmode-backups")))
        // Without the variable, a store that never had a key still gets one for its first export, beside it.
        sandbox.environment["GUESTMODE_BACKUP_KEY_FILE"] = nil
        #expect(try await sandbox.run("backup", "export", guest, "--out", "b.tar.zst").status == 0)
        #expect(FileManager.default.fileExists(atPath: sandbox.path("guestmode.sqlite.key")))
    }
}

@Suite("Event logs: an empty property name is refused as on the command line")
struct EmptyPropertyNameTests {
    @Test("track --from with a property named \"\" applies nothing")
    func emptyName() async throws {
        let sandbox = try await Sandbox.withStore("recipes")
        let guest = try await sandbox.newGuest()
        try sandbox.write(
            "e.ndjson",
            #"{"user":"\#(guest)","action":"app_opened"}"# + "\n"
                + #"{"user":"\#(guest)","action":"app_opened","props":{"":"v"}}"# + "\n")
        let before = try sandbox.snapshot()
        let result = try await sandbox.run("track", "--from", "e.ndjson")
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stderr.contains("e.ndjson:2: a property name is empty"), "\(result.stderr)")
        #expect(try sandbox.snapshot() == before)
    }
}
