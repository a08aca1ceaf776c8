import Foundation
import Testing

/// One request the receiver (scripts/webhook-receiver.py) logged.
struct Received {
    var id: String
    var type: String
    var userID: String
    var headerID: String
    var bodySHA256: String
    var isVerified: Bool
    var mode: String
    var status: Int
}

/// The receiver (scripts/webhook-receiver.py), started detached by `Sandbox.startReceiver`.
struct Receiver {
    var processID: Int32
    /// The port it listens on.
    var port: Int

    /// Stops it at once: SIGKILL, since a process started from a test's thread may inherit a mask that
    /// blocks SIGTERM.
    func stop() { kill(processID, SIGKILL) }
}

extension Sandbox {
    /// Starts the receiver on `port` (0: a free port it binds itself, so no other process can take it
    /// between the choice and the bind), detached, and waits until it listens; or, when `down`, until it
    /// holds the port without listening (connections refused, as when nothing listens) until `listen()`.
    ///
    /// The receiver is started by a shell that exits at once, and stopped by its process id; its
    /// `--lifetime` only bounds one a crashed test leaves behind. So that bound is long: a test on a
    /// machine loaded by the whole suite has taken 250 s, and a receiver that had exited at 240 s
    /// refused its last deliveries.
    func startReceiver(port: Int = 0, down: Bool = false) async throws -> Receiver {
        if (try? read("hook.secret")) == nil { try write("hook.secret", "whsec_\(UUID().uuidString)\n") }
        let script = Sandbox.packageRoot.appendingPathComponent("scripts/webhook-receiver.py").path
        let started = try await shell(
            """
            python3 '\(script)' --port \(port) --port-file receiver.port --log received.ndjson \\
                --secret-file hook.secret --mode-file receiver.mode --lifetime 1800 \(down ? "--listen-file receiver.up" : "") \\
                </dev/null >/dev/null 2>&1 &
            echo $!
            """)
        let processID = try #require(Int32(started.stdout.trimmingCharacters(in: .whitespacesAndNewlines)))
        let listening = try await shell(
            // Up to 30 s: python3 starts in a second or two on a machine loaded by the suite's own processes.
            "for i in $(seq 600); do [ -s receiver.port ] && exit 0; sleep 0.05; done; exit 1")
        #expect(listening.status == 0, "the receiver did not start")
        let listened = try? String(decoding: read("receiver.port"), as: UTF8.self)
        return Receiver(
            processID: processID,
            port: try #require(Int(listened?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "")))
    }

    /// Makes a receiver started `down` listen, and waits until it does.
    func bringReceiverUp() async throws {
        try write("receiver.up", "")
        let up = try await shell("for i in $(seq 600); do [ -e receiver.up.done ] && exit 0; sleep 0.05; done; exit 1")
        #expect(up.status == 0, "the receiver did not start listening")
    }

    func received() throws -> [Received] {
        guard let data = try? read("received.ndjson") else { return [] }
        return try String(decoding: data, as: UTF8.self).split(separator: "\n").map { line in
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return Received(
                id: object["id"] as? String ?? "", type: object["type"] as? String ?? "",
                userID: object["user_id"] as? String ?? "", headerID: object["header_id"] as? String ?? "",
                bodySHA256: object["body_sha256"] as? String ?? "", isVerified: object["verified"] as? Bool ?? false,
                mode: object["mode"] as? String ?? "", status: object["status"] as? Int ?? 0)
        }
    }

    /// Every delivery in the outbox: (event id, type, status).
    func outbox() async throws -> [(id: String, type: String, status: String)] {
        let listed = try await run("webhook", "events", "--json")
        #expect(listed.status == 0, "\(listed.stderr)")
        return (listed.json as? [[String: Any]] ?? []).map {
            ($0["event_id"] as? String ?? "", $0["type"] as? String ?? "", $0["status"] as? String ?? "")
        }
    }
}

extension Sandbox {
    /// Initialises the store on `profile` with every event type sent to a receiver on loopback at
    /// `port`, the secret in ./hook.secret, made unless a receiver started first made it (the store is
    /// PostgreSQL when GUESTMODE_STORE names one).
    func initialise(_ profile: String, sendingEventsTo port: Int) async throws {
        if (try? read("hook.secret")) == nil { try write("hook.secret", "whsec_\(UUID().uuidString)\n") }
        let text = try String(
            contentsOf: Sandbox.packageRoot.appendingPathComponent("Templates/\(profile).yaml"), encoding: .utf8)
        try write(
            "app.yaml",
            text + """

                webhooks:
                  endpoints:
                    - name: receiver
                      url: http://127.0.0.1:\(port)/hook
                      events: ["*"]
                      secret_file: hook.secret

                """)
        let created = try await run("init", "--profile", "./app.yaml")
        #expect(created.status == 0, "\(created.stderr)")
    }
}
