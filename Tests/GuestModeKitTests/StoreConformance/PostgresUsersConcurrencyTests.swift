import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModePostgres
@testable import GuestModeSQLite

/// Users, identities, plans, prompts and experiments under contention: many
/// connections (as many processes on many machines would hold) racing on
/// one user, one identity or one username of one PostgreSQL store.
@Suite struct PostgresUsersConcurrencyTests {
    static let racers = 8

    /// A fresh store bound to `profile`, and `racers` more connections to its schema.
    func stores(profile name: String) throws -> (store: PostgresStore, profile: Profile, connections: [PostgresStore]) {
        let store = try StoreBackend.makePostgresStore()
        let text = try template(name)
        let profile = try ProfileLoader.parse(text, file: "\(name).yaml")
        try store.bindProfile(text: text, origin: "\(name).yaml", now: day(1))
        guard let uri = ProcessInfo.processInfo.environment["GUESTMODE_TEST_POSTGRES"] else {
            throw StoreBackend.MissingTestServer()
        }
        let connections = try (0..<Self.racers).map { _ in try PostgresStore.open(uri: uri, schema: store.schema) }
        return (store, profile, connections)
    }

    /// Runs `body(i)` for every racer on its own thread (libpq blocks a
    /// thread per connection), released together, and returns each outcome.
    func race<T: Sendable>(_ body: @escaping @Sendable (Int) throws -> T) -> [Result<T, any Error>] {
        let results = UsersRaceOutcomes<T>(count: Self.racers)
        let gate = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        for index in 0..<Self.racers {
            done.enter()
            let thread = Thread {
                gate.wait()
                results.set(index, Result { try body(index) })
                done.leave()
            }
            thread.start()
        }
        for _ in 0..<Self.racers { gate.signal() }
        done.wait()
        return results.all
    }

    func codes<T>(_ results: [Result<T, any Error>]) -> [GuestModeError.Code?] {
        results.map { result in
            guard case let .failure(error) = result else { return nil }
            return (error as? GuestModeError)?.code ?? .internalFailure
        }
    }

    @Test func oneIdentityRacedByEightGuestsGoesToExactlyOne() throws {
        let (store, profile, connections) = try stores(profile: "subscriptions")
        let request: @Sendable (Int) -> LinkRequest = { index in
            LinkRequest(user: "g\(index)", provider: "apple", subject: "s", email: nil)
        }
        var before: [String: UserOverview] = [:]
        for index in 0..<Self.racers {
            let guest = newUser("g\(index)")
            try store.createUser(guest, credentials: credentials(of: guest, "anon-\(index)"))
            #expect(try GuestMode(profile: profile, store: store).beginLink(request(index), now: day(2)) == .started)
            before["g\(index)"] = try store.userOverview(id: "g\(index)")
        }

        let results = race { index in
            try GuestMode(profile: profile, store: connections[index]).completeLink(request(index), now: day(2))
        }

        let outcomes = codes(results)
        #expect(outcomes.filter { $0 == nil }.count == 1, "exactly one link wins: \(outcomes)")
        #expect(outcomes.filter { $0 == .identityAlreadyExists }.count == Self.racers - 1, "\(outcomes)")
        let winner = try #require(outcomes.firstIndex { $0 == nil })
        let linked = try store.userOverview(id: "g\(winner)")
        #expect(linked.user.state == .linked)
        #expect(linked.identities.map(\.subject) == ["s"])
        #expect(!linked.hasAnonymousCredentials)
        for index in 0..<Self.racers where index != winner {
            // Untouched: same state, credentials, counters and identities as before the race.
            #expect(try store.userOverview(id: "g\(index)") == before["g\(index)"], "g\(index) was touched")
        }
        #expect(try store.users(state: .linked, lastSeenBefore: nil).map(\.id) == ["g\(winner)"])
        #expect(try store.integrityProblems().isEmpty)
    }

    /// Runs `body` on `holder` inside one transaction on its own thread,
    /// runs `contender` once `body` is done (its effects uncommitted), and
    /// commits the holder's transaction half a second later: whatever
    /// `contender` does must wait for the holder's locks or keys.
    func whileHeld(
        by holder: PostgresStore, _ body: @escaping @Sendable () throws -> Void, contender: () throws -> Void
    ) throws {
        let held = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let failure = UsersRaceOutcomes<Bool>(count: 1)
        Thread {
            failure.set(
                0,
                Result {
                    try holder.write { _ in
                        try body()
                        held.signal()
                        Thread.sleep(forTimeInterval: 0.5)
                    }
                    return true
                })
            held.signal()
            finished.signal()
        }.start()
        held.wait()
        try contender()
        finished.wait()
        _ = try failure.all[0].get()
    }

    @Test func aLinkWaitingOnAnUncommittedLinkOfTheSameIdentityIsRefused() throws {
        let (store, profile, connections) = try stores(profile: "subscriptions")
        for id in ["first", "second"] {
            let guest = newUser(id)
            try store.createUser(guest, credentials: credentials(of: guest, "anon-\(id)"))
            _ = try GuestMode(profile: profile, store: store).beginLink(
                LinkRequest(user: id, provider: "apple", subject: "s", email: nil), now: day(2))
        }
        let before = try store.userOverview(id: "second")
        let holder = connections[0]
        // The second link reads no owner (the first is uncommitted), then its
        // insert waits on the identity's key and finds it taken.
        try whileHeld(
            by: holder,
            {
                _ = try GuestMode(profile: profile, store: holder).completeLink(
                    LinkRequest(user: "first", provider: "apple", subject: "s", email: nil), now: day(2))
            }
        ) {
            expectFailure(.conflict, code: .identityAlreadyExists) {
                _ = try GuestMode(profile: profile, store: connections[1]).completeLink(
                    LinkRequest(user: "second", provider: "apple", subject: "s", email: nil), now: day(2))
            }
        }
        #expect(try store.user(id: "first").state == .linked)
        #expect(try store.userOverview(id: "second") == before)
    }

    @Test func aPurgeWaitsForAGuestBeingChangedAndDecidesOnWhatWasCommitted() throws {
        let (store, profile, connections) = try stores(profile: "subscriptions")
        for id in ["buyer", "idle"] { try store.createUser(newUser(id, at: day(1)), credentials: nil) }
        let holder = connections[0]
        // The buyer pays while the purge runs: the purge waits for the buyer's
        // lock, then sees the plan and keeps it.
        try whileHeld(
            by: holder,
            {
                _ = try GuestMode(profile: profile, store: holder).grantPlan(
                    user: "buyer", plan: "premium", trial: nil, until: nil, now: day(20))
            }
        ) {
            let report = try GuestMode(profile: profile, store: connections[1]).purge(
                inactive: TimeSpan(amount: 5, unit: .days), includingUsersWithData: false, dryRun: false, now: day(20))
            #expect(report.purged.map(\.id) == ["idle"])
            #expect(report.kept.map(\.id) == ["buyer"])
        }
        #expect(try store.users(state: nil, lastSeenBefore: nil).map(\.id) == ["buyer"])
        let grants = try store.read { (transaction: any StoreTransaction) in try transaction.planGrants(of: "buyer") }
        #expect(grants.count == 1)
    }

    @Test func aDryRunPurgeLocksNobodyAndDecidesOnWhatIsCommitted() throws {
        let (store, profile, connections) = try stores(profile: "subscriptions")
        for id in ["buyer", "idle"] { try store.createUser(newUser(id, at: day(1)), credentials: nil) }
        let holder = connections[0]
        // The buyer pays while the dry run reads: the dry run does not wait
        // for the buyer's lock, so it sees no plan yet (a real run would wait).
        try whileHeld(
            by: holder,
            {
                _ = try GuestMode(profile: profile, store: holder).grantPlan(
                    user: "buyer", plan: "premium", trial: nil, until: nil, now: day(20))
            }
        ) {
            let report = try GuestMode(profile: profile, store: connections[1]).purge(
                inactive: TimeSpan(amount: 5, unit: .days), includingUsersWithData: false, dryRun: true, now: day(20))
            #expect(report.purged.map(\.id) == ["buyer", "idle"])
            #expect(report.kept.isEmpty)
        }
        #expect(try store.users(state: nil, lastSeenBefore: nil).count == 2, "a dry run deletes nobody")
    }

    @Test func aPurgeOfManyGuestsDeletesInBatchesAndKeepsTheRest() throws {
        let (store, profile, _) = try stores(profile: "subscriptions")
        // More than two batches, every seventh guest paying.
        let count = PostgresStore.purgeBatchSize * 2 + 500
        try store.write { connection in
            try connection.copy(
                "COPY users (id, state, prompt_state, created_at, last_seen_at) FROM STDIN",
                rows: (0..<count).map { index in
                    [
                        PostgresValue(String(format: "g%05d", index)), PostgresValue("anonymous"),
                        PostgresValue("anonymous"), PostgresValue(day(1)), PostgresValue(day(1 + index % 5)),
                    ]
                })
            try connection.copy(
                "COPY plans (user_id, plan, granted_at) FROM STDIN",
                rows: stride(from: 0, to: count, by: 7).map { index in
                    [PostgresValue(String(format: "g%05d", index)), PostgresValue("premium"), PostgresValue(day(1))]
                })
        }
        let engine = GuestMode(profile: profile, store: store)
        let inactive = TimeSpan(amount: 5, unit: .days)
        let dryRun = try engine.purge(inactive: inactive, includingUsersWithData: false, dryRun: true, now: day(20))
        let paying = (count + 6) / 7
        #expect(dryRun.kept.count == paying)
        #expect(dryRun.purged.count == count - paying)
        let order = dryRun.purged.map { Timestamp.format($0.lastSeenAt) + " " + $0.id }
        #expect(order == order.sorted(), "oldest activity first, then id")
        let done = try engine.purge(inactive: inactive, includingUsersWithData: false, dryRun: false, now: day(20))
        #expect(done.purged == dryRun.purged && done.kept == dryRun.kept)
        #expect(try store.tableCounts()["users"] == paying)
        #expect(try store.tableCounts()["plans"] == paying)
    }

    @Test func eightRacingTrialsGrantExactlyOne() throws {
        let (store, profile, connections) = try stores(profile: "subscriptions")
        try store.createUser(newUser("u"), credentials: nil)
        _ = try GuestMode(profile: profile, store: store).grantPlan(
            user: "u", plan: "premium", trial: nil, until: day(2), now: day(1))

        let results = race { index in
            try GuestMode(profile: profile, store: connections[index]).grantPlan(
                user: "u", plan: "premium", trial: TimeSpan(amount: 7, unit: .days), until: nil, now: day(3))
        }

        let outcomes = codes(results)
        #expect(outcomes.filter { $0 == nil }.count == 1, "exactly one trial: \(outcomes)")
        #expect(outcomes.filter { $0 == .trialAlreadyUsed }.count == Self.racers - 1, "\(outcomes)")
        let grants = try store.read { (transaction: any StoreTransaction) in try transaction.planGrants(of: "u") }
        #expect(grants.count == 2, "the paid grant and one trial")
        #expect(grants.filter { $0.trialEndsAt != nil }.count == 1)
    }

    @Test func eightGuestsRacingForOneUsernameLeaveOne() throws {
        let (store, _, connections) = try stores(profile: "subscriptions")
        let results = race { index in
            let guest = newUser("g\(index)")
            try connections[index].createUser(guest, credentials: credentials(of: guest, "anon"))
        }
        let outcomes = codes(results)
        #expect(outcomes.filter { $0 == nil }.count == 1, "\(outcomes)")
        #expect(outcomes.filter { $0 == .usernameTaken }.count == Self.racers - 1, "\(outcomes)")
        let created = try store.users(state: nil, lastSeenBefore: nil).map(\.id)
        #expect(created.count == 1, "the refused guests were not created")
        #expect(try store.anonymousCredentials(username: "anon")?.userID == created.first)
    }

    @Test func racingOutcomesAndAssignmentsLoseNothingAndAgree() throws {
        let (store, profile, connections) = try stores(profile: "recipes")
        try store.createUser(newUser("u"), credentials: nil)
        try store.createUser(newUser("v"), credentials: nil)
        let variants = ["control", "aggressive", "delayed", "benefits", "social"]

        // The rows alone: a first assignment that loses the race reads the winner's.
        let assignments = race { index in
            try connections[index].write { (transaction: any StoreTransaction) in
                let added = try transaction.addAssignment(
                    of: "u", experiment: "auth_prompts", variant: variants[index % variants.count], at: day(2))
                var stored = try transaction.requireAssignment(of: "u", experiment: "auth_prompts")
                stored.isNew = added
                return stored
            }
        }
        let stored = try assignments.map { try $0.get() }
        #expect(Set(stored.map(\.variant)).count == 1, "every racer reads the one assignment that won")
        #expect(stored.filter(\.isNew).count == 1)
        #expect(
            try store.read { (transaction: any StoreTransaction) in
                try transaction.assignment(of: "u", experiment: "auth_prompts")
            }?.variant
                == stored.first?.variant)
        // The engine: every racer finds nothing stored, one enrols the user.
        let enrolled = race { index in
            try GuestMode(profile: profile, store: connections[index]).assignExperiments(
                user: "v", named: "auth_prompts", now: day(2))
        }
        let firsts = try enrolled.map { try #require(try $0.get().first) }
        #expect(Set(firsts.map(\.variant)).count == 1)
        #expect(firsts.filter(\.isNew).count == 1, "one racer enrolled the user")

        let perRacer = 10
        let recorded = race { index in
            for step in 0..<perRacer {
                let outcome: PromptOutcome = index == 0 && step == perRacer - 1 ? .never : .shown
                _ = try GuestMode(profile: profile, store: connections[index]).recordPrompt(
                    outcome, context: "reengagement", user: "u", now: day(3))
            }
            return true
        }
        #expect(codes(recorded).allSatisfy { $0 == nil }, "\(codes(recorded))")
        let facts = try #require(try storedPromptFacts(store, of: "u"))
        #expect(facts.history.count == Self.racers * perRacer, "no outcome lost")
        // Every state move is applied on the locked row: the never-ask outcome sticks whatever came after it.
        #expect(facts.promptState == .neverAsk)
    }
}

/// Results written by racing threads, one slot each.
private final class UsersRaceOutcomes<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var slots: [Result<T, any Error>?]

    init(count: Int) { slots = Array(repeating: nil, count: count) }

    func set(_ index: Int, _ result: Result<T, any Error>) {
        lock.lock()
        defer { lock.unlock() }
        slots[index] = result
    }

    var all: [Result<T, any Error>] {
        lock.lock()
        defer { lock.unlock() }
        return slots.map {
            $0 ?? .failure(GuestModeError(.internalFailure, "a racer never finished"))
        }
    }
}
