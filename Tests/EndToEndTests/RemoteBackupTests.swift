import Foundation
import Testing

/// `backup push --to URL` and `backup pull --from URL` against a server
/// nobody here wrote, Debian's nginx with its WebDAV module
/// (scripts/with-nginx.sh, which `make test` runs the tests under), and
/// against `guestmode serve --backups-dir`.
@Suite("remote backups: nginx WebDAV and guestmode serve")
struct RemoteBackupTests {
    enum Destination: String, CaseIterable, CustomTestStringConvertible {
        case nginx, serve
        var testDescription: String { rawValue }
    }

    /// A destination up and running: the URL pushes go to, a token it
    /// takes, and where it keeps a user's latest archive on disk.
    struct Running {
        var base: String
        var token: String
        var server: Server?
        var latestFile: (_ user: String) -> String
    }

    static func environment(_ name: String) throws -> String {
        try #require(
            ProcessInfo.processInfo.environment[name].flatMap { $0.isEmpty ? nil : $0 },
            "\(name) is not set: run the tests through 'make test' (scripts/with-nginx.sh starts nginx)")
    }

    static func start(_ destination: Destination, in sandbox: Sandbox) async throws -> Running {
        switch destination {
        case .nginx:
            // A folder of this test's own under the one location the script serves.
            let folder = "t-\(UUID().uuidString)"
            let root = try environment("GUESTMODE_TEST_WEBDAV_ROOT")
            let token = try String(contentsOfFile: try environment("GUESTMODE_TEST_WEBDAV_TOKEN_FILE"), encoding: .utf8)
            return Running(
                base: try environment("GUESTMODE_TEST_WEBDAV_URL") + folder + "/",
                token: token.trimmingCharacters(in: .whitespacesAndNewlines), server: nil,
                latestFile: { "\(root)/\(folder)/\($0)/backups/\($0).gmbackup" })
        case .serve:
            let created = try await sandbox.run("serve", "key", "create", "pusher", "--scope", "user-data", "--json")
            let key = try #require(created.object["secret"] as? String, "\(created.stderr)")
            let server = try await Server.start(
                in: sandbox, options: ["--backups-dir", "pushed", "--keep-backups", "2"])
            let folder = sandbox.path("pushed")
            return Running(
                base: "http://\(server.address)/v1/users/", token: key, server: server,
                latestFile: { user in
                    let names = (try? FileManager.default.contentsOfDirectory(atPath: "\(folder)/\(user)")) ?? []
                    return "\(folder)/\(user)/" + (names.filter { $0.hasSuffix(".gmbackup") }.max() ?? "none")
                })
        }
    }

    /// A port nothing listens on: bound, then let go.
    static func closedPort(_ sandbox: Sandbox) async throws -> String {
        let port = try await sandbox.shell(
            "python3 -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1]); s.close()'"
        )
        return port.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// What the user's restore must reproduce: their records and their row.
    static func records(of user: String, in sandbox: Sandbox, store: String) async throws -> [String] {
        try await ["habits", "completions"].asyncMap { collection in
            let listed = try await sandbox.run("--store", store, "record", "list", user, collection, "--json")
            #expect(listed.status == 0, "\(listed.stderr)")
            return listed.stdout
        } + [try await sandbox.run("--store", store, "user", "show", user, "--json").stdout]
    }

    @Test(
        "push, destination down (75, queue kept), push again, pull on a new device: the same records; the token never shown",
        arguments: Destination.allCases)
    func newPhone(_ destination: Destination) async throws {
        let sandbox = try await Sandbox.withStore("habits")
        let running = try await Self.start(destination, in: sandbox)
        defer { if let server = running.server { Task { _ = try? await server.stop() } } }
        try sandbox.write("token", running.token + "\n")
        let guest = try await sandbox.newGuest()
        for (key, name) in [("h1", "Read"), ("h2", "Walk")] {
            let put = try await sandbox.run("record", "put", guest, "habits", key, "--data", #"{"name":"\#(name)"}"#)
            #expect(put.status == 0, "\(put.stderr)")
        }
        let push = { (base: String, extra: [String]) in
            try await sandbox.run(arguments: ["backup", "push", "--to", base, "--retry-now"] + extra)
        }

        let down = try await push("http://127.0.0.1:\(try await Self.closedPort(sandbox))/backups/", ["--json"])
        #expect(down.status == 75, "\(down.stderr)")
        let queued = try await sandbox.run("backup", "queue", "--json").json as? [[String: Any]] ?? []
        #expect(queued.map { $0["user_id"] as? String } == [guest])
        #expect(queued.first?["attempts"] as? Int == 1)

        var outputs: [String] = []
        let pushed = try await push(running.base, ["--token-file", "token", "--json"])
        outputs += [pushed.stdout, pushed.stderr]
        #expect(pushed.status == 0, "\(pushed.stderr)")
        #expect((pushed.object["pushed"] as? [[String: Any]])?.first?["user_id"] as? String == guest)
        #expect((try await sandbox.run("backup", "queue", "--json").json as? [Any])?.isEmpty == true)

        // A change queues the user again; the next push (the token from the environment) replaces the archive.
        let completed = try await sandbox.run(
            "record", "put", guest, "completions", "c1", "--data", #"{"habit":"h1","day":"2026-11-25"}"#)
        #expect(completed.status == 0, "\(completed.stderr)")
        let again = try await sandbox.run(
            arguments: ["backup", "push", "--to", running.base], environment: ["GUESTMODE_BACKUP_TOKEN": running.token])
        outputs += [again.stdout, again.stderr]
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.contains("pushed \(guest) -> \(running.base)\(guest)/backups/\(guest).gmbackup"))
        #expect(FileManager.default.fileExists(atPath: running.latestFile(guest)), "\(running.latestFile(guest))")
        let leftovers = try FileManager.default.contentsOfDirectory(
            atPath: URL(fileURLWithPath: running.latestFile(guest)).deletingLastPathComponent().path)
        #expect(leftovers.allSatisfy { !$0.hasSuffix(".part") }, "\(leftovers)")

        // The new device: an empty store with the deployment's key.
        let phone = ["GUESTMODE_BACKUP_KEY_FILE": sandbox.path("guestmode.sqlite.key")]
        #expect(try await sandbox.run("--store", "phone.sqlite", "init", "--profile", "habits").status == 0)
        let pulled = try await sandbox.run(
            arguments: [
                "--store", "phone.sqlite", "backup", "pull", "--from", running.base, guest, "--json",
                "--token-file", "token",
            ],
            environment: phone)
        outputs += [pulled.stdout, pulled.stderr]
        #expect(pulled.status == 0, "\(pulled.stderr)")
        #expect(pulled.object["added"] as? [String] == [guest], "\(pulled.stdout)")
        let original = try await Self.records(of: guest, in: sandbox, store: "guestmode.sqlite")
        #expect(original[1].contains("2026-11-25"))
        #expect(try await Self.records(of: guest, in: sandbox, store: "phone.sqlite") == original)

        for output in outputs {
            #expect(!output.contains(running.token), "the token was shown: \(output)")
        }
    }

    @Test("a tampered archive on the server is refused on pull and changes nothing", arguments: Destination.allCases)
    func tamperedPull(_ destination: Destination) async throws {
        let sandbox = try await Sandbox.withStore("habits")
        let running = try await Self.start(destination, in: sandbox)
        defer { if let server = running.server { Task { _ = try? await server.stop() } } }
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("record", "put", guest, "habits", "h1", "--data", "{}").status == 0)
        let environment = ["GUESTMODE_BACKUP_TOKEN": running.token]
        let pushed = try await sandbox.run(
            arguments: ["backup", "push", "--to", running.base], environment: environment)
        #expect(pushed.status == 0, "\(pushed.stderr)")
        // The signature's MAC changed, in place on the server's disk, as an intruder there would.
        let file = running.latestFile(guest)
        try sandbox.write(
            "tamper.py",
            """
            import io, sys, tarfile, json, subprocess
            raw = subprocess.run(['zstd', '-dc', sys.argv[1]], capture_output=True, check=True).stdout
            with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
                entries = [(m.name, tar.extractfile(m).read()) for m in tar.getmembers()]
            out = io.BytesIO()
            with tarfile.open(fileobj=out, mode='w') as tar:
                for name, data in entries:
                    if name == 'signature.json':
                        signature = json.loads(data)
                        signature['mac'] = ('0' if signature['mac'][0] != '0' else '1') + signature['mac'][1:]
                        data = json.dumps(signature).encode()
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
            packed = subprocess.run(['zstd', '-c'], input=out.getvalue(), capture_output=True, check=True).stdout
            open(sys.argv[1], 'wb').write(packed)
            """)
        let tampered = try await sandbox.shell("python3 tamper.py '\(file)'")
        #expect(tampered.status == 0, "\(tampered.stderr)")
        #expect(try await sandbox.run("--store", "phone.sqlite", "init", "--profile", "habits").status == 0)
        let before = try sandbox.snapshot("phone.sqlite")
        let pulled = try await sandbox.run(
            arguments: ["--store", "phone.sqlite", "backup", "pull", "--from", running.base, guest, "--json"],
            environment: environment.merging(["GUESTMODE_BACKUP_KEY_FILE": sandbox.path("guestmode.sqlite.key")]) {
                $1
            })
        #expect(pulled.status == 65, "\(pulled.stderr)")
        #expect(pulled.errorJSON["code"] as? String == "bad_signature", "\(pulled.stderr)")
        #expect(try sandbox.snapshot("phone.sqlite") == before)
    }

    @Test(
        "a wrong token is a usage failure (64) naming the refusal, not a retry; the queue is untouched",
        arguments: Destination.allCases)
    func wrongToken(_ destination: Destination) async throws {
        let sandbox = try await Sandbox.withStore("habits")
        let running = try await Self.start(destination, in: sandbox)
        defer { if let server = running.server { Task { _ = try? await server.stop() } } }
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("record", "put", guest, "habits", "h1", "--data", "{}").status == 0)
        #expect(try await sandbox.run("--store", "phone.sqlite", "init", "--profile", "habits").status == 0)
        let wrong = "not-the-token-\(UUID().uuidString)"
        let pushed = try await sandbox.run(
            arguments: ["backup", "push", "--to", running.base, "--json"],
            environment: ["GUESTMODE_BACKUP_TOKEN": wrong])
        #expect(pushed.status == 64, "\(pushed.stderr)")
        #expect(pushed.errorJSON["code"] as? String == "destination_unauthorized", "\(pushed.stderr)")
        #expect((pushed.errorJSON["message"] as? String)?.contains("refused the token") == true)
        #expect(!(pushed.stdout + pushed.stderr).contains(wrong))
        let queued = try await sandbox.run("backup", "queue", "--json").json as? [[String: Any]] ?? []
        #expect(queued.first?["attempts"] as? Int == 0)
        let pulled = try await sandbox.run(
            arguments: ["--store", "phone.sqlite", "backup", "pull", "--from", running.base, guest],
            environment: ["GUESTMODE_BACKUP_TOKEN": wrong])
        #expect(pulled.status == 64, "\(pulled.stderr)")
    }

    @Test("serve keeps only this deployment's archives of the route's user, the last --keep-backups of them")
    func serveKeeps() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        let running = try await Self.start(.serve, in: sandbox)
        let server = try #require(running.server)
        let (guest, session) = try await server.signIn()
        let (other, _) = try await server.signIn()
        let environment = ["GUESTMODE_BACKUP_TOKEN": running.token]
        for round in 1...3 {
            #expect(
                try await sandbox.run("record", "put", guest, "habits", "h\(round)", "--data", "{}").status == 0)
            let pushed = try await sandbox.run(
                arguments: ["backup", "push", "--to", running.base], environment: environment)
            #expect(pushed.status == 0, "\(pushed.stderr)")
        }
        let kept = try FileManager.default.contentsOfDirectory(atPath: sandbox.path("pushed/\(guest)"))
            .filter { $0.hasSuffix(".gmbackup") }.sorted()
        #expect(kept == ["0000000002-\(guest).gmbackup", "0000000003-\(guest).gmbackup"])

        #expect(try await sandbox.run("backup", "export", guest, "--out", "mine.tar.zst").status == 0)
        try sandbox.write("plain", "not an archive")
        let base = "http://\(server.address)/v1/users"
        let put = { (token: String, user: String, file: String, name: String) in
            try await sandbox.shell(
                "curl -s -o /dev/null -w '%{http_code}' -X PUT --data-binary @\(file) -H 'Authorization: Bearer \(token)' '\(base)/\(user)/backups/\(name)'"
            ).stdout
        }
        #expect(try await put(session, guest, "mine.tar.zst", "up") == "201", "a session pushes its own")
        #expect(try await put(session, other, "mine.tar.zst", "up") == "404", "another user does not exist for it")
        #expect(try await put(running.token, other, "mine.tar.zst", "up") == "409", "the archive holds another user")
        #expect(try await put(running.token, guest, "plain", "up") == "422")
        #expect(try await put("wrong", guest, "mine.tar.zst", "up") == "401")
        #expect(try await put(session, guest, "mine.tar.zst", "%2E%2E") == "400", "a name is a file in the folder")
        #expect(try await put(session, guest, "mine.tar.zst", "a%2Fb") == "400")
        let moved = try await server.request(
            "MOVE", "/v1/users/\(guest)/backups/up", token: session,
            headers: ["Destination": "/v1/users/\(other)/backups/x.gmbackup"])
        #expect(moved.status == 400, "a move stays in its user's folder")
        let latest = try await server.request("GET", "/v1/users/\(guest)/backups/latest", token: session)
        #expect(latest.status == 200)
        let listed = try await server.request("GET", "/v1/users/\(guest)/backups", token: session)
        #expect(listed.array.map { $0["sequence"] as? Int } == [2, 3], "\(listed.body)")
        #expect(
            listed.array.allSatisfy { ($0["size"] as? Int ?? 0) > 0 && $0["name"] as? String == "\(guest).gmbackup" })
        #expect(try await server.request("GET", "/v1/users/\(other)/backups", token: running.token).array.isEmpty)
        let none = try await server.request("GET", "/v1/users/\(other)/backups/latest", token: running.token)
        #expect(none.status == 404)
        #expect(none.object["error"].flatMap { ($0 as? [String: Any])?["code"] as? String } == "archive_not_found")
        #expect(try await server.stop() == 0)
    }
}

extension RemoteBackupTests {
    @Test(
        "POST …/backups: the server backs the user up and keeps it; the same Idempotency-Key again answers that backup; the archive restores the records"
    )
    func serverMadeBackup() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        let running = try await Self.start(.serve, in: sandbox)
        let server = try #require(running.server)
        let (guest, session) = try await server.signIn()
        let (other, _) = try await server.signIn()
        let put = try await server.request(
            "PUT", "/v1/users/\(guest)/records/habits/h1", token: session, body: #"{"name":"Read"}"#)
        #expect(put.status == 201, "\(put.body)")

        let first = try await server.request(
            "POST", "/v1/users/\(guest)/backups", token: session, headers: ["Idempotency-Key": "backup-1"])
        #expect(first.status == 201, "\(first.body)")
        let name = try #require(first.object["name"] as? String)
        #expect(name.hasPrefix("snapshot-") && name.hasSuffix(".gmbackup"), "\(name)")
        #expect((first.object["size"] as? Int ?? 0) > 0)
        let again = try await server.request(
            "POST", "/v1/users/\(guest)/backups", token: session, headers: ["Idempotency-Key": "backup-1"])
        #expect(again.status == 200 && again.headers["idempotent-replayed"] == "true", "\(again.headers)")
        #expect(again.object["sequence"] as? Int == first.object["sequence"] as? Int)
        let fresh = try await server.request("POST", "/v1/users/\(guest)/backups", token: session)
        #expect(fresh.status == 201)
        #expect(fresh.object["sequence"] as? Int == (first.object["sequence"] as? Int ?? 0) + 1)
        let listed = try await server.request("GET", "/v1/users/\(guest)/backups", token: session)
        #expect(listed.array.count == 2, "one backup per key, one without: \(listed.body)")

        // Refused: another user's folder, a body, no credential; none keeps an archive.
        #expect(try await server.request("POST", "/v1/users/\(other)/backups", token: session).status == 404)
        #expect(
            try await server.request("POST", "/v1/users/\(guest)/backups", token: session, body: "{}").status == 400)
        #expect(try await server.request("POST", "/v1/users/\(guest)/backups").status == 401)
        #expect(try await server.request("GET", "/v1/users/\(guest)/backups", token: session).array.count == 2)

        // What was kept is a backup of this deployment that restores the user's records elsewhere.
        let pulled = try await sandbox.shell(
            "curl -s -o kept.gmbackup -w '%{http_code}' -H 'Authorization: Bearer \(session)' 'http://\(server.address)/v1/users/\(guest)/backups/\(name)'"
        )
        #expect(pulled.stdout == "200")
        #expect(try await sandbox.run("--store", "copy.sqlite", "init", "--profile", "habits").status == 0)
        let imported = try await sandbox.run(
            arguments: ["--store", "copy.sqlite", "backup", "import", "kept.gmbackup"],
            environment: ["GUESTMODE_BACKUP_KEY_FILE": sandbox.path("guestmode.sqlite.key")])
        #expect(imported.status == 0, "\(imported.stderr)")
        let record = try await sandbox.run("--store", "copy.sqlite", "record", "get", guest, "habits", "h1")
        #expect(record.stdout == #"{"name":"Read"}"# + "\n", "\(record.stderr)")
        #expect(try await server.stop() == 0)
    }

    @Test("an archive of another user at the user's name on the server is refused on pull (14) and changes nothing")
    func anotherUsersArchive() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        let running = try await Self.start(.nginx, in: sandbox)
        let (mine, theirs) = (try await sandbox.newGuest(), try await sandbox.newGuest())
        #expect(try await sandbox.run("backup", "export", theirs, "--out", "theirs.gmbackup").status == 0)
        let put = try await sandbox.shell(
            "curl -s -o /dev/null -w '%{http_code}' -T theirs.gmbackup -H 'Authorization: Bearer \(running.token)' '\(running.base)\(mine)/backups/\(mine).gmbackup'"
        )
        #expect(put.stdout == "201")
        #expect(try await sandbox.run("--store", "phone.sqlite", "init", "--profile", "habits").status == 0)
        let before = try sandbox.snapshot("phone.sqlite")
        let pulled = try await sandbox.run(
            arguments: ["--store", "phone.sqlite", "backup", "pull", "--from", running.base, mine, "--json"],
            environment: [
                "GUESTMODE_BACKUP_TOKEN": running.token,
                "GUESTMODE_BACKUP_KEY_FILE": sandbox.path("guestmode.sqlite.key"),
            ])
        #expect(pulled.status == 14, "\(pulled.stderr)")
        #expect(pulled.errorJSON["code"] as? String == "archive_user_mismatch", "\(pulled.stderr)")
        #expect(try sandbox.snapshot("phone.sqlite") == before)
    }

    @Test("a server that echoes the token in its refusal does not get it printed")
    func echoedToken() async throws {
        let sandbox = try await Sandbox.withStore("habits")
        let running = try await Self.start(.nginx, in: sandbox)
        let guest = try await sandbox.newGuest()
        #expect(try await sandbox.run("record", "put", guest, "habits", "h1", "--data", "{}").status == 0)
        let echo = running.base.replacingOccurrences(of: "/dav/", with: "/echo/")
        let pushed = try await sandbox.run(
            arguments: ["backup", "push", "--to", echo, "--json"],
            environment: ["GUESTMODE_BACKUP_TOKEN": running.token])
        #expect(pushed.status == 64, "\(pushed.stderr)")
        #expect((pushed.errorJSON["message"] as? String)?.contains("refused Bearer …") == true, "\(pushed.stderr)")
        #expect(!(pushed.stdout + pushed.stderr).contains(running.token))
    }
}
