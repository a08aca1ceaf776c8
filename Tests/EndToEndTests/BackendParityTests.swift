import Foundation
import GuestModeCommandLine
import Testing

/// One step of a journey: the arguments (with `$1`, `$2`, … standing for the
/// guests created so far), the exit status it must give, and an optional clock.
struct JourneyStep: Sendable {
    var arguments: [String]
    var status: Int32
    var now: String? = nil
    /// `guest new`: its output is the id of the next guest (`$1`, `$2`, …).
    var createsGuest = false

    static func run(_ status: Int32, _ arguments: String..., now: String? = nil) -> JourneyStep {
        JourneyStep(arguments: arguments, status: status, now: now)
    }

    static func newGuest(now: String? = nil) -> JourneyStep {
        JourneyStep(arguments: ["guest", "new"], status: 0, now: now, createsGuest: true)
    }
}

/// What one step printed, with the generated ids and the store's name replaced
/// by placeholders: the part that must not depend on the backend.
struct StepTranscript: Equatable, CustomStringConvertible {
    var command: String
    var status: Int32
    var stdout: String
    var stderr: String

    var description: String { "$ guestmode \(command)\n→ \(status)\n--- stdout\n\(stdout)--- stderr\n\(stderr)" }
}

extension Sandbox {
    /// Runs a journey and returns every step's normalised transcript; each
    /// step's exit status is checked against the expected one as it goes.
    func transcript(
        of journey: [JourneyStep], backend: String, storeNames: [String]
    ) async throws
        -> [StepTranscript]
    {
        var guests: [String] = []
        var transcripts: [StepTranscript] = []
        for step in journey {
            let arguments = step.arguments.map { argument in
                guard argument.hasPrefix("$"), let index = Int(argument.dropFirst()), guests.indices.contains(index - 1)
                else { return argument }
                return guests[index - 1]
            }
            let result = try await run(
                arguments: arguments, environment: step.now.map { ["GUESTMODE_NOW": $0] } ?? [:])
            if step.createsGuest {
                guests.append(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            }
            #expect(
                result.status == step.status,
                "\(backend): guestmode \(step.arguments.joined(separator: " ")) exited \(result.status), not \(step.status): \(result.stderr)"
            )
            // Longest first, so a store name that contains another is replaced whole.
            func normalise(_ text: String) -> String {
                var text = text
                for (index, guest) in guests.enumerated() where !guest.isEmpty {
                    text = text.replacingOccurrences(of: guest, with: "<guest \(index + 1)>")
                }
                for name in storeNames.filter({ !$0.isEmpty }).sorted(by: { $0.count > $1.count }) {
                    text = text.replacingOccurrences(of: name, with: "<store>")
                }
                return text
            }
            transcripts.append(
                StepTranscript(
                    command: step.arguments.joined(separator: " "), status: result.status,
                    stdout: normalise(result.stdout), stderr: normalise(result.stderr)))
        }
        return transcripts
    }
}

@Suite("Backend parity: the README's journeys give the same output on SQLite and PostgreSQL")
struct BackendParityTests {
    static let start = "2026-11-01T10:00:00Z"

    /// Runs the journey on a fresh SQLite store and a fresh PostgreSQL schema
    /// and compares them step by step; SQLite is the reference.
    @discardableResult
    static func compare(profile: String, _ journey: [JourneyStep]) async throws -> [StepTranscript] {
        let sqlite = try await Sandbox.withStore(profile)
        sqlite.environment["GUESTMODE_NOW"] = start
        let postgres = try await Sandbox.withPostgresStore(profile)
        postgres.environment["GUESTMODE_NOW"] = start
        let reference = try await sqlite.transcript(
            of: journey, backend: "sqlite",
            storeNames: [sqlite.path("guestmode.sqlite"), sqlite.directory.path, "guestmode.sqlite"])
        let candidate = try await postgres.transcript(
            of: journey, backend: "postgres", storeNames: [postgres.postgresURI, postgres.postgresSchema])
        #expect(reference.count == candidate.count)
        for (expected, actual) in zip(reference, candidate) {
            #expect(expected == actual, "\nSQLite:\n\(expected)\nPostgreSQL:\n\(actual)")
        }
        // The comparison means something only if the steps printed something.
        #expect(reference.filter { !$0.stdout.isEmpty }.count > journey.count / 2)
        return reference
    }

    @Test("subscriptions: cap 5 → exit 10, link, exit 11, premium")
    func subscriptions() async throws {
        var journey: [JourneyStep] = [.newGuest()]
        for index in 1...4 {
            journey.append(.run(0, "record", "put", "$1", "subscriptions", "s\(index)", "--data", #"{"price": 15.49}"#))
        }
        journey += [
            .run(0, "--json", "record", "put", "$1", "subscriptions", "s5", "--data", #"{"price": 2.5}"#),
            .run(10, "record", "put", "$1", "subscriptions", "s6", "--data", "{}"),
            .run(10, "--json", "record", "put", "$1", "subscriptions", "s6", "--data", "{}"),
            .run(10, "limit", "$1", "subscriptions"),
            .run(0, "--json", "record", "list", "$1", "subscriptions"),
            .run(0, "record", "get", "$1", "subscriptions", "s1"),
            .run(0, "link", "$1", "--provider", "apple", "--subject", "001234.abcd"),
            .run(11, "record", "put", "$1", "subscriptions", "s6", "--data", "{}"),
            .run(11, "--json", "record", "put", "$1", "subscriptions", "s6", "--data", "{}"),
            .run(11, "limit", "$1", "subscriptions"),
            .run(11, "--json", "limit", "$1", "subscriptions"),
            .run(0, "plan", "grant", "$1", "premium"),
            .run(0, "--json", "plan", "status", "$1"),
            .run(0, "record", "put", "$1", "subscriptions", "s6", "--data", "{}"),
            .run(0, "limit", "$1", "subscriptions"),
            .run(0, "--json", "limit", "$1", "subscriptions"),
            .newGuest(now: "2026-11-01T11:00:00Z"),
            .run(14, "link", "$2", "--provider", "apple", "--subject", "001234.abcd"),
            .run(14, "--json", "link", "$2", "--provider", "apple", "--subject", "001234.abcd"),
            .run(0, "counters", "$1"),
            .run(0, "--json", "counters", "$1"),
            .run(0, "user", "show", "$1"),
            .run(0, "--json", "user", "show", "$1"),
            .run(0, "user", "list"),
            .run(0, "--json", "user", "list", "--linked"),
            .run(0, "db", "check"),
        ]
        let transcript = try await Self.compare(profile: "subscriptions", journey)
        #expect(transcript.last?.status == 0)
    }

    @Test("voice: 60 minutes, warnings once, exit 12, a trial, exit 12 after it")
    func voice() async throws {
        let journey: [JourneyStep] = [
            .newGuest(),
            .run(0, "meter", "use", "$1", "api_minutes", "45"),
            .run(0, "meter", "use", "$1", "api_minutes", "1"),
            .run(0, "meter", "use", "$1", "api_minutes", "8"),
            .run(0, "--json", "meter", "use", "$1", "api_minutes", "0.5"),
            .run(0, "meter", "check", "$1", "api_minutes"),
            .run(12, "meter", "check", "$1", "api_minutes", "20"),
            .run(12, "--json", "meter", "check", "$1", "api_minutes", "20"),
            .run(0, "meter", "status", "$1", "api_minutes"),
            .run(0, "--json", "meter", "status", "$1", "api_minutes"),
            .run(0, "meter", "use", "$1", "api_minutes", "5.5"),
            .run(12, "meter", "use", "$1", "api_minutes", "1"),
            .run(12, "--json", "meter", "use", "$1", "api_minutes", "0.1"),
            .run(12, "meter", "check", "$1", "api_minutes"),
            .run(0, "plan", "grant", "$1", "premium", "--trial", "1 month"),
            .run(0, "plan", "status", "$1"),
            .run(0, "--json", "plan", "status", "$1"),
            .run(0, "meter", "use", "$1", "api_minutes", "10"),
            .run(0, "--json", "meter", "status", "$1", "api_minutes"),
            .run(0, "meter", "check", "$1", "api_minutes", "500"),
            .run(12, "meter", "check", "$1", "api_minutes", now: "2026-12-15T10:00:00Z"),
            .run(12, "meter", "use", "$1", "api_minutes", "1", now: "2026-12-15T10:00:00Z"),
            .run(0, "plan", "status", "$1", now: "2026-12-15T10:00:00Z"),
            .run(0, "--json", "plan", "status", "$1", now: "2026-12-15T10:00:00Z"),
            .run(0, "--json", "meter", "status", "$1", "api_minutes", now: "2026-12-15T10:00:00Z"),
            .run(0, "user", "show", "$1", now: "2026-12-15T10:00:00Z"),
            .run(0, "--json", "user", "show", "$1", now: "2026-12-15T10:00:00Z"),
            .run(0, "track", "$1", "app_opened", "--id", "launch-42"),
            .run(0, "track", "$1", "app_opened", "--id", "launch-42"),
            .run(0, "--json", "counters", "$1"),
            .run(0, "db", "check"),
        ]
        let transcript = try await Self.compare(profile: "voice", journey)
        // Each warning fired once, on the use that crossed it.
        let printed = transcript.map { $0.stdout + $0.stderr }
        #expect(printed.filter { $0.contains("passed 75%") }.count == 1, "\(printed)")
        #expect(printed.filter { $0.contains("passed 90%") }.count == 1, "\(printed)")
        #expect(printed[1].contains("passed 75%") && printed[3].contains("passed 90%"), "\(printed)")
    }
}

/// A caps-and-meters profile for the stress test: a guest keeps five records
/// and sixty minutes; identities are single-provider.
private let stressProfile = """
    name: stress
    version: 1
    description: Caps, a meter, keyed events and one identity raced by eight processes
    guest_owner: ""
    identity:
      providers: [apple]
      max_providers_per_user: 1
    collections:
      subscriptions:
    actions: [app_opened]
    meters:
      api_minutes:
        unit: minutes
        reset: never
        warnings:
          - percent: 75
            level: warning
    tiers:
      guest:
        caps:
          subscriptions: 5
        meters:
          api_minutes: 60
        when_capped: needs-account
      account:
        when_capped: needs-premium
    backup:
      outbox: false
      format: tar.zst

    """

/// One worker's outcome: how often each operation succeeded, and anything unexpected.
struct WorkerTally: Sendable {
    var worker: Int
    var storedRecords = 0
    var usedMinutes = 0
    var links = 0
    var unexpected: [String] = []
}

@Suite("PostgreSQL under load: eight processes racing on one database")
struct PostgresStressTests {
    static let workers = 8
    /// 60 per worker in `make test` (enough to pass every cap, meter and
    /// identity limit several times over); `make stress` runs 400.
    static let operations = max(60, Int(ProcessInfo.processInfo.environment["GUESTMODE_STRESS_OPERATIONS"] ?? "") ?? 60)

    /// Runs `operations` guestmode commands one after another on a thread of
    /// its own (no shell: see CrashTests), so eight workers overlap freely.
    static func work(
        worker: Int, directory: URL, environment: [String: String], capped: String, metered: String,
        tracked: String, linker: String
    ) async -> WorkerTally {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var tally = WorkerTally(worker: worker)
                for index in 0..<operations {
                    let arguments: [String]
                    let allowed: Set<Int32>
                    switch (worker + index) % 4 {
                    case 0:
                        arguments = ["record", "put", capped, "subscriptions", "w\(worker)-\(index)", "--data", "{}"]
                        allowed = [0, 10]
                    case 1:
                        arguments = ["meter", "use", metered, "api_minutes", "1"]
                        allowed = [0, 12]
                    case 2:
                        arguments = ["track", tracked, "app_opened", "--id", "same-key"]
                        allowed = [0]
                    default:
                        arguments = ["link", linker, "--provider", "apple", "--subject", "shared-subject"]
                        allowed = [0, 14]
                    }
                    let termination: ChildProcess.Termination
                    let stderr: Data
                    do {
                        let process = try ChildProcess(
                            Sandbox.binary.path, arguments: arguments, environment: environment,
                            directory: directory.path, input: .null, output: .null, errors: .pipe)
                        stderr = process.errors?.readDataToEndOfFile() ?? Data()
                        termination = try process.wait()
                    } catch {
                        tally.unexpected.append("\(arguments): \(error)")
                        continue
                    }
                    let status = termination.status
                    if !allowed.contains(status) || termination.signalled {
                        tally.unexpected.append(
                            "\(arguments.joined(separator: " ")) → \(status): \(String(decoding: stderr, as: UTF8.self))"
                        )
                    } else if status == 0 {
                        switch (worker + index) % 4 {
                        case 0: tally.storedRecords += 1
                        case 1: tally.usedMinutes += 1
                        case 3: tally.links += 1
                        default: break
                        }
                    }
                }
                continuation.resume(returning: tally)
            }
        }
    }

    @Test("8 processes × 60 operations (400 with make stress): caps, meters, keys and identities hold")
    func eightWorkers() async throws {
        let uri = try #require(
            ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"].flatMap { $0.isEmpty ? nil : $0 },
            "GUESTMODE_TEST_POSTGRES is not set: run the tests through 'make test'")
        let sandbox = try Sandbox()
        sandbox.environment["GUESTMODE_STORE"] = uri
        sandbox.environment["GUESTMODE_SCHEMA"] =
            "e2e_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        sandbox.environment["GUESTMODE_NOW"] = "2026-11-01T10:00:00Z"
        try sandbox.write("stress.yaml", stressProfile)
        let created = try await sandbox.run("init", "--profile", "./stress.yaml")
        try #require(created.status == 0, "init failed: \(created.stderr)")
        let capped = try await sandbox.newGuest()
        let metered = try await sandbox.newGuest()
        let tracked = try await sandbox.newGuest()
        let linkers = try await (0..<Self.workers).asyncMap { _ in try await sandbox.newGuest() }

        let directory = sandbox.directory
        let environment = sandbox.environment
        let tallies = await withTaskGroup(of: WorkerTally.self) { group in
            for worker in 0..<Self.workers {
                group.addTask {
                    await Self.work(
                        worker: worker, directory: directory, environment: environment, capped: capped,
                        metered: metered, tracked: tracked, linker: linkers[worker])
                }
            }
            var tallies: [WorkerTally] = []
            for await tally in group { tallies.append(tally) }
            return tallies
        }
        let unexpected = tallies.flatMap(\.unexpected)
        #expect(unexpected.isEmpty, "\(unexpected.count) unexpected outcomes, first: \(unexpected.prefix(5))")

        // Every success was stored, and no more than the cap/allowance succeeded.
        let attempts = Self.workers * Self.operations / 4
        #expect(tallies.map(\.storedRecords).reduce(0, +) == min(5, attempts))
        #expect(tallies.map(\.usedMinutes).reduce(0, +) == min(60, attempts))

        let records = try await sandbox.run("--json", "record", "list", capped, "subscriptions")
        #expect((records.json as? [Any])?.count == min(5, attempts), "\(records.stdout)\(records.stderr)")
        let meter = try await sandbox.run("--json", "meter", "status", metered, "api_minutes")
        let meterStatus = (meter.json as? [[String: Any]])?.first
        #expect(meterStatus?["used"] as? Int == min(60, attempts), "\(meter.stdout)\(meter.stderr)")
        #expect(meterStatus?["remaining"] as? Int == max(0, 60 - attempts), "\(meter.stdout)")
        let counters = try await sandbox.run("--json", "counters", tracked)
        #expect(
            (counters.object["counters"] as? [String: Any])?["app_opened"] as? Int == 1,
            "\(counters.stdout)\(counters.stderr)")

        // The identity is bound to exactly one of the eight guests, and only that one ever won a link.
        let linked = try await sandbox.run("--json", "user", "list", "--linked")
        let linkedUsers = (linked.json as? [[String: Any]]) ?? []
        #expect(linkedUsers.count == 1, "\(linked.stdout)\(linked.stderr)")
        #expect(linkedUsers.first?["identities"] as? Int == 1, "\(linked.stdout)")
        let winners = tallies.filter { $0.links > 0 }.map(\.worker)
        #expect(winners.count == 1, "workers that linked: \(winners)")
        if let winner = winners.first {
            #expect(linkedUsers.first?["user_id"] as? String == linkers[winner])
        }
        let check = try await sandbox.run("db", "check")
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
    }
}
