import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// A new anonymous user, as the engine would create it.
func newUser(_ id: String = UUID().uuidString.lowercased(), at time: Date = day(1), device: String? = nil) -> User {
    User(
        id: id, device: device, state: .anonymous, promptState: "anonymous", createdAt: time, lastSeenAt: time,
        linkedAt: nil)
}

func credentials(of user: User, _ username: String, hash: String = "pbkdf2-sha256$1$00$00") -> StoredCredentials {
    StoredCredentials(userID: user.id, username: username, secretHash: hash, createdAt: user.createdAt)
}

/// Expects `body` to throw a `GuestModeError` of this kind and code.
func expectFailure(
    _ kind: FailureKind, code: GuestModeError.Code, sourceLocation: SourceLocation = #_sourceLocation,
    _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("expected \(code), nothing was thrown", sourceLocation: sourceLocation)
    } catch let error as GuestModeError {
        #expect(error.kind == kind, sourceLocation: sourceLocation)
        #expect(error.code == code, "\(error.message)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected \(code), got \(error)", sourceLocation: sourceLocation)
    }
}

/// Stops a link once its upgrade lock is taken, as a crash there would.
private struct StopAfterLock: Error {}

/// Users created, read, listed, deleted and purged, and legacy credentials,
/// decided by the engine over each backend's transaction primitives.
@Suite struct UserStoreTests {
    private func engine(_ backend: StoreBackend) throws -> (engine: GuestMode, store: any GuestStore) {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        return (GuestMode(profile: profile, store: store), store)
    }

    @Test(arguments: StoreBackend.allCases)
    func createdUsersReadBackAsCreated(backend: StoreBackend) throws {
        let (engine, _) = try engine(backend)
        let user = try engine.createGuest(device: "phone", now: day(1))
        #expect(
            user
                == User(
                    id: user.id, device: "phone", state: .anonymous, promptState: "anonymous", createdAt: day(1),
                    lastSeenAt: day(1), linkedAt: nil))
        #expect(try engine.user(user.id) == user)
        #expect(try engine.details(user: user.id, now: day(1)).hasAnonymousCredentials == false)
        expectFailure(.notFound, code: .userNotFound) { _ = try engine.user("nobody") }
    }

    @Test(arguments: StoreBackend.allCases)
    func credentialsAreKeptWithTheirHash(backend: StoreBackend) throws {
        let (engine, store) = try engine(backend)
        let user = try engine.createGuest(
            device: nil, credentials: AnonymousCredentials(username: "anon", secret: "hunter2"), now: day(1))
        let stored = try #require(try store.anonymousCredentials(username: "anon"))
        #expect(stored.userID == user.id && stored.username == "anon" && stored.createdAt == day(1))
        #expect(try SecretHash.verify("hunter2", against: stored.secretHash) == .matches, "a hash, never the secret")
        #expect(try store.anonymousCredentials(username: "other") == nil)
        #expect(try engine.details(user: user.id, now: day(1)).hasAnonymousCredentials)
    }

    @Test(arguments: StoreBackend.allCases)
    func aTakenUsernameCreatesNobody(backend: StoreBackend) throws {
        let (engine, store) = try engine(backend)
        let first = newUser("u1")
        try store.createUser(first, credentials: credentials(of: first, "anon"))
        expectFailure(.conflict, code: .usernameTaken) {
            _ = try engine.createGuest(
                device: nil, credentials: AnonymousCredentials(username: "anon", secret: "s"), now: day(1))
        }
        expectFailure(.conflict, code: .usernameTaken) {
            _ = try engine.createOrFindGuest(
                device: "phone", credentials: AnonymousCredentials(username: "anon", secret: "s"), now: day(1))
        }
        #expect(try engine.users(matching: UserFilter(), now: day(1)).map(\.id) == ["u1"])
        #expect(try store.anonymousCredentials(username: "anon")?.userID == "u1")
    }

    @Test(arguments: StoreBackend.allCases)
    func aKnownDeviceReturnsItsOldestUser(backend: StoreBackend) throws {
        let (engine, store) = try engine(backend)
        let first = try engine.createOrFindGuest(device: "phone", now: day(2))
        #expect(first.isNew)
        // An older user of the same device (from an import, say) is the one found.
        try store.createUser(newUser("older", at: day(1), device: "phone"), credentials: nil)
        let again = try engine.createOrFindGuest(
            device: "phone", credentials: AnonymousCredentials(username: "anon", secret: "s"), now: day(3))
        #expect(!again.isNew)
        #expect(again.user == newUser("older", at: day(1), device: "phone"))
        #expect(try store.anonymousCredentials(username: "anon") == nil, "credentials of a known device are not kept")
        let other = try engine.createOrFindGuest(device: "tablet", now: day(3))
        #expect(other.isNew && other.user.id != first.user.id)
        #expect(try engine.createOrFindGuest(device: nil, now: day(3)).isNew, "no device, always a new guest")
        #expect(try engine.users(matching: UserFilter(), now: day(3)).count == 4)
    }

    @Test(arguments: StoreBackend.allCases)
    func listingFiltersByStateAndInactivity(backend: StoreBackend) throws {
        let (engine, store) = try engine(backend)
        try store.createUser(newUser("old", at: day(1)), credentials: nil)
        try store.createUser(newUser("linked", at: day(2)), credentials: nil)
        try store.createUser(newUser("new", at: day(10)), credentials: nil)
        _ = try engine.link(user: "linked", provider: "apple", subject: "s", email: nil, now: day(2))

        let all = try engine.users(matching: UserFilter(), now: day(10))
        #expect(all.map(\.id) == ["old", "linked", "new"], "in creation order")
        #expect(all.map(\.identities) == [0, 1, 0])
        #expect(all.first?.createdAt == day(1))
        #expect(try engine.users(matching: UserFilter(state: .anonymous), now: day(10)).map(\.id) == ["old", "new"])
        #expect(try engine.users(matching: UserFilter(state: .linked), now: day(10)).map(\.id) == ["linked"])
        let idle = { (days: Int, state: UserState?) in
            try engine.users(matching: UserFilter(state: state, inactiveDays: days), now: day(10)).map(\.id)
        }
        #expect(try idle(0, nil) == ["old", "linked"], "strictly before now")
        #expect(try idle(8, nil) == ["old"], "strictly before")
        #expect(try idle(8, .linked).isEmpty)
    }

    @Test(arguments: StoreBackend.allCases)
    func theOverviewGathersWhatTheUserHolds(backend: StoreBackend) throws {
        let (engine, store) = try engine(backend)
        try store.createUser(newUser("u1"), credentials: nil)
        try store.createUser(newUser("other"), credentials: nil)
        _ = try engine.grantPlan(user: "u1", plan: "premium", trial: nil, until: day(9), now: day(2))
        _ = try engine.grantPlan(user: "other", plan: "premium", trial: nil, until: nil, now: day(1))
        _ = try engine.link(user: "u1", provider: "google", subject: "g", email: "me@example.com", now: day(3))
        _ = try engine.putRecord(user: "u1", collection: "subscriptions", key: "a", json: "{}", now: day(3))
        _ = try engine.putRecord(user: "u1", collection: "subscriptions", key: "b", json: "{}", now: day(3))

        let overview = try store.userOverview(id: "u1")
        #expect(overview.user.id == "u1")
        #expect(overview.user.state == .linked)
        #expect(
            overview.identities == [
                Identity(provider: "google", subject: "g", email: "me@example.com", linkedAt: day(3))
            ])
        #expect(overview.grants == [PlanGrant(plan: "premium", grantedAt: day(2), endsAt: day(9))])
        #expect(overview.counters["account_upgrade_succeeded"] == 1)
        #expect(overview.records == ["subscriptions": 2])
        #expect(!overview.hasAnonymousCredentials)
        let details = try engine.details(user: "u1", now: day(3))
        #expect(details.tier == .premium, "the tier from the plans the overview read")
        #expect(details.records == overview.records && details.identities == overview.identities)
        expectFailure(.notFound, code: .userNotFound) { _ = try engine.details(user: "nobody", now: day(3)) }
    }

    @Test(arguments: StoreBackend.allCases)
    func deletingRemovesEverythingOwnedAndNothingElse(backend: StoreBackend) throws {
        let (engine, store) = try engine(backend)
        for id in ["doomed", "bystander"] {
            let user = newUser(id)
            try store.createUser(user, credentials: credentials(of: user, "anon-\(id)"))
            _ = try engine.grantPlan(user: id, plan: "premium", trial: nil, until: nil, now: day(1))
            #expect(throws: StopAfterLock.self) {
                _ = try engine.link(
                    user: id, provider: "apple", subject: "s-\(id)", email: nil, now: day(1),
                    checkpoint: { _ in throw StopAfterLock() })
            }
        }
        let before = try store.userOverview(id: "bystander")
        try engine.deleteUser("doomed", now: day(2))

        expectFailure(.notFound, code: .userNotFound) { _ = try engine.user("doomed") }
        expectFailure(.notFound, code: .userNotFound) { _ = try engine.plans(user: "doomed", now: day(1)) }
        #expect(try store.anonymousCredentials(username: "anon-doomed") == nil)
        #expect(try engine.users(matching: UserFilter(), now: day(1)).map(\.id) == ["bystander"])
        #expect(try store.userOverview(id: "bystander") == before)
        #expect(try store.anonymousCredentials(username: "anon-bystander") != nil)
        // Its username is free again.
        let heir = newUser("heir")
        try store.createUser(heir, credentials: credentials(of: heir, "anon-doomed"))

        // A linked user's identity is freed with it.
        _ = try engine.link(user: "heir", provider: "apple", subject: "s-heir", email: nil, now: day(2))
        try engine.deleteUser("heir", now: day(2))
        try store.createUser(newUser("successor"), credentials: nil)
        #expect(
            try engine.link(user: "successor", provider: "apple", subject: "s-heir", email: nil, now: day(3))
                .isNewlyLinked)

        expectFailure(.notFound, code: .userNotFound) { try engine.deleteUser("doomed", now: day(2)) }
    }

    @Test(arguments: StoreBackend.allCases)
    func purgeDeletesTheIdleGuestsThePolicyLetsGo(backend: StoreBackend) throws {
        let (engine, store) = try engine(backend)
        for (id, seen) in [("idle", 2), ("payer", 1), ("lapsed", 3), ("trialist", 4), ("recent", 20), ("linked", 1)] {
            try store.createUser(newUser(id, at: day(seen)), credentials: nil)
        }
        _ = try engine.grantPlan(user: "payer", plan: "premium", trial: nil, until: nil, now: day(1))
        _ = try engine.grantPlan(user: "lapsed", plan: "premium", trial: nil, until: day(5), now: day(1))
        _ = try engine.grantPlan(
            user: "trialist", plan: "premium", trial: TimeSpan(amount: 29, unit: .days), until: nil, now: day(1))
        _ = try engine.link(user: "linked", provider: "apple", subject: "s", email: nil, now: day(1))

        // Inactive for 10 days at day 25: last seen before day 15.
        let inactive = TimeSpan(amount: 10, unit: .days)
        let dryRun = try engine.purge(inactive: inactive, includingUsersWithData: false, dryRun: true, now: day(25))
        #expect(dryRun.cutoff == day(15))
        #expect(dryRun.purged.map(\.id) == ["idle", "lapsed"], "oldest activity first")
        #expect(dryRun.kept.map(\.id) == ["payer", "trialist"])
        #expect(dryRun.purged.first == PurgeCandidate(id: "idle", lastSeenAt: day(2), records: 0))
        #expect(try engine.users(matching: UserFilter(), now: day(25)).count == 6, "a dry run changes nothing")
        #expect(try engine.user("idle") == newUser("idle", at: day(2)))

        let done = try engine.purge(inactive: inactive, includingUsersWithData: false, dryRun: false, now: day(25))
        #expect(done.purged == dryRun.purged && done.kept == dryRun.kept)
        #expect(
            Set(try engine.users(matching: UserFilter(), now: day(25)).map(\.id)) == [
                "payer", "trialist", "recent", "linked",
            ])
        expectFailure(.notFound, code: .userNotFound) { _ = try engine.plans(user: "lapsed", now: day(25)) }
        #expect(
            try engine.purge(inactive: inactive, includingUsersWithData: false, dryRun: false, now: day(25))
                .purged.isEmpty)
    }

    /// A purge works in chunks of ids: kept guests are passed over, and the
    /// result and the report (by last activity, then id, whatever the
    /// chunks' order) are those of one chunk for all.
    @Test(arguments: StoreBackend.allCases)
    func aPurgeInSmallChunksDecidesAsOneChunkDoes(backend: StoreBackend) throws {
        let (engine, store) = try engine(backend)
        let guests = [
            ("a", 5), ("b", 2), ("c", 2), ("payer", 3), ("d", 3), ("e", 4), ("f", 2), ("g", 5), ("recent", 20),
        ]
        for (id, seen) in guests { try store.createUser(newUser(id, at: day(seen)), credentials: nil) }
        _ = try engine.grantPlan(user: "payer", plan: "premium", trial: nil, until: nil, now: day(3))
        let inactive = TimeSpan(amount: 10, unit: .days)

        func run(chunkSize: Int, dryRun: Bool) throws -> (kept: [String], purged: [String], progress: [Int]) {
            var kept: [String] = []
            var purged: [String] = []
            var progress: [Int] = []
            let (_, tally) = try engine.purge(
                inactive: inactive, includingUsersWithData: false, dryRun: dryRun, now: day(25),
                chunkSize: chunkSize, progress: { progress.append($0) }
            ) { candidate, isPurged in
                if isPurged { purged.append(candidate.id) } else { kept.append(candidate.id) }
            }
            #expect(tally == PurgeTally(purged: purged.count, kept: kept.count))
            return (kept, purged, progress)
        }
        let whole = try run(chunkSize: 100, dryRun: true)
        #expect(whole.kept == ["payer"])
        #expect(whole.purged == ["b", "c", "f", "d", "e", "a", "g"], "oldest activity first, then by id")
        #expect(whole.progress == [8])
        // Chunks of two ids: a–b, c–d, e–f, g–payer, then one that finds nobody left.
        let chunked = try run(chunkSize: 2, dryRun: true)
        #expect(chunked.kept == whole.kept && chunked.purged == whole.purged)
        #expect(chunked.progress == [2, 4, 6, 8, 8])
        let done = try run(chunkSize: 2, dryRun: false)
        #expect(done.kept == whole.kept && done.purged == whole.purged)
        #expect(Set(try engine.users(matching: UserFilter(), now: day(25)).map(\.id)) == ["payer", "recent"])
        #expect(try run(chunkSize: 2, dryRun: false).purged.isEmpty)
    }

    /// Each chunk commits on its own: a purge stopped after its first chunk
    /// keeps that chunk's deletions, touches no other guest, and the same
    /// purge run again removes the rest.
    @Test(arguments: StoreBackend.allCases)
    func aPurgeStoppedBetweenChunksKeepsWhatItCommitted(backend: StoreBackend) throws {
        let (engine, store) = try engine(backend)
        for (id, seen) in [("a", 2), ("b", 3), ("c", 4), ("d", 5)] {
            try store.createUser(newUser(id, at: day(seen)), credentials: nil)
        }
        struct Stop: Error {}
        let inactive = TimeSpan(amount: 10, unit: .days)
        #expect(throws: Stop.self) {
            _ = try engine.purge(
                inactive: inactive, includingUsersWithData: false, dryRun: false, now: day(25), chunkSize: 2,
                progress: { _ in throw Stop() }, report: { _, _ in Issue.record("a stopped purge reports nothing") })
        }
        #expect(Set(try engine.users(matching: UserFilter(), now: day(25)).map(\.id)) == ["c", "d"])
        var purged: [String] = []
        _ = try engine.purge(
            inactive: inactive, includingUsersWithData: false, dryRun: false, now: day(25), chunkSize: 2
        ) { candidate, isPurged in if isPurged { purged.append(candidate.id) } }
        #expect(purged == ["c", "d"])
        #expect(try engine.users(matching: UserFilter(), now: day(25)).isEmpty)
    }

    /// Records keep a guest unless the purge includes users with data; the
    /// purged one takes its records and queued backup along (tables without
    /// a foreign key to users), and nobody else's.
    @Test(arguments: StoreBackend.allCases)
    func aPurgeIncludingDataDeletesWhatTheGuestsOwn(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "habits")
        let engine = GuestMode(profile: profile, store: store)
        for id in ["keeper", "bystander"] { try store.createUser(newUser(id), credentials: nil) }
        _ = try engine.putRecord(user: "keeper", collection: "habits", key: "h", json: "{}", now: day(2))
        _ = try engine.putRecord(user: "bystander", collection: "habits", key: "h", json: "{}", now: day(20))
        #expect(Set(try store.outboxEntries().map(\.userID)) == ["keeper", "bystander"])
        let inactive = TimeSpan(amount: 10, unit: .days)

        let kept = try engine.purge(inactive: inactive, includingUsersWithData: false, dryRun: false, now: day(25))
        #expect(kept.purged.isEmpty)
        #expect(kept.kept == [PurgeCandidate(id: "keeper", lastSeenAt: day(2), records: 1)])

        let purged = try engine.purge(inactive: inactive, includingUsersWithData: true, dryRun: false, now: day(25))
        #expect(purged.purged == [PurgeCandidate(id: "keeper", lastSeenAt: day(2), records: 1)])
        #expect(try store.tableCounts()["records"] == 1, "the bystander's record stays")
        #expect(try store.outboxEntries().map(\.userID) == ["bystander"])
        #expect(try engine.users(matching: UserFilter(), now: day(25)).map(\.id) == ["bystander"])
    }

    @Test(arguments: StoreBackend.allCases)
    func signingInMovesLastSeenAndReplacesOnlyTheVerifiedHash(backend: StoreBackend) throws {
        let (engine, store) = try engine(backend)
        let user = newUser("u1")
        try store.createUser(user, credentials: credentials(of: user, "anon", hash: "old"))

        // A stale verification (the hash changed since it was read) replaces nothing.
        let stale = try engine.recordAnonymousSignIn(
            username: "anon", verifiedHash: "other", upgradedHash: "new", now: day(2))
        #expect(stale?.id == "u1")
        #expect(try store.anonymousCredentials(username: "anon")?.secretHash == "old")

        let signedIn = try engine.recordAnonymousSignIn(
            username: "anon", verifiedHash: "old", upgradedHash: "new", now: day(3))
        #expect(signedIn?.lastSeenAt == day(3))
        #expect(try store.anonymousCredentials(username: "anon")?.secretHash == "new")
        #expect(try engine.user("u1").lastSeenAt == day(3))

        _ = try engine.recordAnonymousSignIn(username: "anon", verifiedHash: "new", upgradedHash: nil, now: day(2))
        #expect(try engine.user("u1").lastSeenAt == day(3), "last seen never moves back")
        #expect(try store.anonymousCredentials(username: "anon")?.secretHash == "new")

        #expect(
            try engine.recordAnonymousSignIn(username: "nobody", verifiedHash: "x", upgradedHash: nil, now: day(4))
                == nil)
        #expect(try engine.user("u1").lastSeenAt == day(3))
    }
}
