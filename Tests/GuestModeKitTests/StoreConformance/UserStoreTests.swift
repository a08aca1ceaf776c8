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

@Suite struct UserStoreTests {
    @Test(arguments: StoreBackend.allCases)
    func createdUsersReadBackAsCreated(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "subscriptions")
        let user = newUser("u1", device: "phone")
        try store.createUser(user, credentials: nil)
        #expect(try store.user(id: "u1") == user)
        #expect(try store.userOverview(id: "u1").hasAnonymousCredentials == false)
        expectFailure(.notFound, code: .userNotFound) { _ = try store.user(id: "nobody") }
    }

    @Test(arguments: StoreBackend.allCases)
    func credentialsAreKeptWithTheirHash(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "subscriptions")
        let user = newUser("u1")
        try store.createUser(user, credentials: credentials(of: user, "anon", hash: "pbkdf2-sha256$7$ab$cd"))
        #expect(
            try store.anonymousCredentials(username: "anon")
                == credentials(of: user, "anon", hash: "pbkdf2-sha256$7$ab$cd"))
        #expect(try store.anonymousCredentials(username: "other") == nil)
        #expect(try store.userOverview(id: "u1").hasAnonymousCredentials)
    }

    @Test(arguments: StoreBackend.allCases)
    func aTakenUsernameCreatesNobody(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "subscriptions")
        let first = newUser("u1")
        try store.createUser(first, credentials: credentials(of: first, "anon"))
        let second = newUser("u2")
        expectFailure(.conflict, code: .usernameTaken) {
            try store.createUser(second, credentials: credentials(of: second, "anon"))
        }
        expectFailure(.notFound, code: .userNotFound) { _ = try store.user(id: "u2") }
        #expect(try store.users(state: nil, lastSeenBefore: nil).map(\.id) == ["u1"])
        #expect(try store.anonymousCredentials(username: "anon")?.userID == "u1")
    }

    @Test(arguments: StoreBackend.allCases)
    func listingFiltersByStateAndInactivity(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "subscriptions")
        try store.createUser(newUser("old", at: day(1)), credentials: nil)
        try store.createUser(newUser("linked", at: day(2)), credentials: nil)
        try store.createUser(newUser("new", at: day(10)), credentials: nil)
        let profile = try ProfileLoader.parse(try template("subscriptions"), file: "subscriptions.yaml")
        _ = try IdentityStoreTests().link(
            store, profile, LinkRequest(user: "linked", provider: "apple", subject: "s", email: nil), now: day(2))

        let all = try store.users(state: nil, lastSeenBefore: nil)
        #expect(all.map(\.id) == ["old", "linked", "new"], "in creation order")
        #expect(all.map(\.identities) == [0, 1, 0])
        #expect(all.first?.createdAt == day(1))
        #expect(try store.users(state: .anonymous, lastSeenBefore: nil).map(\.id) == ["old", "new"])
        #expect(try store.users(state: .linked, lastSeenBefore: nil).map(\.id) == ["linked"])
        #expect(try store.users(state: nil, lastSeenBefore: day(10)).map(\.id) == ["old", "linked"])
        #expect(try store.users(state: nil, lastSeenBefore: day(2)).map(\.id) == ["old"], "strictly before")
        #expect(try store.users(state: .linked, lastSeenBefore: day(2)).isEmpty)
    }

    @Test(arguments: StoreBackend.allCases)
    func theOverviewGathersWhatTheUserHolds(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try store.createUser(newUser("u1"), credentials: nil)
        try store.createUser(newUser("other"), credentials: nil)
        let engine = GuestMode(profile: profile, store: store)
        _ = try engine.grantPlan(user: "u1", plan: "premium", trial: nil, until: day(9), now: day(2))
        _ = try engine.grantPlan(user: "other", plan: "premium", trial: nil, until: nil, now: day(1))
        _ = try IdentityStoreTests().link(
            store, profile, LinkRequest(user: "u1", provider: "google", subject: "g", email: "me@example.com"),
            now: day(3))

        let overview = try store.userOverview(id: "u1")
        #expect(overview.user.id == "u1")
        #expect(overview.user.state == .linked)
        #expect(
            overview.identities == [
                Identity(provider: "google", subject: "g", email: "me@example.com", linkedAt: day(3))
            ])
        #expect(overview.grants == [PlanGrant(plan: "premium", grantedAt: day(2), endsAt: day(9))])
        #expect(overview.counters["account_upgrade_succeeded"] == 1)
        #expect(overview.records.isEmpty)
        #expect(!overview.hasAnonymousCredentials)
        expectFailure(.notFound, code: .userNotFound) { _ = try store.userOverview(id: "nobody") }
    }

    @Test(arguments: StoreBackend.allCases)
    func deletingRemovesEverythingOwnedAndNothingElse(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        for id in ["doomed", "bystander"] {
            let user = newUser(id)
            try store.createUser(user, credentials: credentials(of: user, "anon-\(id)"))
            _ = try engine.grantPlan(user: id, plan: "premium", trial: nil, until: nil, now: day(1))
            _ = try GuestMode(profile: profile, store: store).beginLink(
                LinkRequest(user: id, provider: "apple", subject: "s-\(id)", email: nil), now: day(1))
        }
        let before = try store.userOverview(id: "bystander")
        try store.deleteUser(id: "doomed")

        expectFailure(.notFound, code: .userNotFound) { _ = try store.user(id: "doomed") }
        expectFailure(.notFound, code: .userNotFound) { _ = try engine.plans(of: "doomed", now: day(1)) }
        #expect(try store.anonymousCredentials(username: "anon-doomed") == nil)
        #expect(try store.users(state: nil, lastSeenBefore: nil).map(\.id) == ["bystander"])
        #expect(try store.userOverview(id: "bystander") == before)
        #expect(try store.anonymousCredentials(username: "anon-bystander") != nil)
        // Its username is free again.
        let heir = newUser("heir")
        try store.createUser(heir, credentials: credentials(of: heir, "anon-doomed"))

        // A linked user's identity is freed with it.
        let request = LinkRequest(user: "heir", provider: "apple", subject: "s-heir", email: nil)
        _ = try IdentityStoreTests().link(store, profile, request, now: day(2))
        try store.deleteUser(id: "heir")
        let successor = newUser("successor")
        try store.createUser(successor, credentials: nil)
        let taken = LinkRequest(user: "successor", provider: "apple", subject: "s-heir", email: nil)
        #expect(try IdentityStoreTests().link(store, profile, taken, now: day(3)).isNewlyLinked)

        expectFailure(.notFound, code: .userNotFound) { try store.deleteUser(id: "doomed") }
    }

    @Test(arguments: StoreBackend.allCases)
    func purgeDeletesTheIdleGuestsThePolicyLetsGo(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        for (id, seen) in [("idle", 2), ("payer", 1), ("lapsed", 3), ("trialist", 4), ("recent", 20), ("linked", 1)] {
            try store.createUser(newUser(id, at: day(seen)), credentials: nil)
        }
        let engine = GuestMode(profile: profile, store: store)
        _ = try engine.grantPlan(user: "payer", plan: "premium", trial: nil, until: nil, now: day(1))
        _ = try engine.grantPlan(user: "lapsed", plan: "premium", trial: nil, until: day(5), now: day(1))
        _ = try engine.grantPlan(
            user: "trialist", plan: "premium", trial: TimeSpan(amount: 29, unit: .days), until: nil, now: day(1))
        let request = LinkRequest(user: "linked", provider: "apple", subject: "s", email: nil)
        _ = try IdentityStoreTests().link(store, profile, request, now: day(1))

        let policy = PurgePolicy(profile: profile, cutoff: day(15), includesUsersWithRecords: false, now: day(25))
        let dryRun = try store.purgeUsers(under: policy, isDryRun: true)
        #expect(dryRun.purged.map(\.id) == ["idle", "lapsed"], "oldest activity first")
        #expect(dryRun.kept.map(\.id) == ["payer", "trialist"])
        #expect(dryRun.purged.first == PurgeCandidate(id: "idle", lastSeenAt: day(2), records: 0))
        #expect(try store.users(state: nil, lastSeenBefore: nil).count == 6, "a dry run changes nothing")
        #expect(try store.user(id: "idle") == newUser("idle", at: day(2)))

        let done = try store.purgeUsers(under: policy, isDryRun: false)
        #expect(done == dryRun)
        #expect(
            Set(try store.users(state: nil, lastSeenBefore: nil).map(\.id)) == [
                "payer", "trialist", "recent", "linked",
            ])
        expectFailure(.notFound, code: .userNotFound) { _ = try engine.plans(of: "lapsed", now: day(1)) }
        #expect(try store.purgeUsers(under: policy, isDryRun: false).purged.isEmpty)
    }

    @Test(arguments: StoreBackend.allCases)
    func signingInMovesLastSeenAndReplacesOnlyTheVerifiedHash(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "subscriptions")
        let user = newUser("u1")
        try store.createUser(user, credentials: credentials(of: user, "anon", hash: "old"))

        // A stale verification (the hash changed since it was read) replaces nothing.
        let stale = try store.recordAnonymousSignIn(
            username: "anon", verifiedHash: "other", upgradedHash: "new", now: day(2))
        #expect(stale?.id == "u1")
        #expect(try store.anonymousCredentials(username: "anon")?.secretHash == "old")

        let signedIn = try store.recordAnonymousSignIn(
            username: "anon", verifiedHash: "old", upgradedHash: "new", now: day(3))
        #expect(signedIn?.lastSeenAt == day(3))
        #expect(try store.anonymousCredentials(username: "anon")?.secretHash == "new")
        #expect(try store.user(id: "u1").lastSeenAt == day(3))

        _ = try store.recordAnonymousSignIn(username: "anon", verifiedHash: "new", upgradedHash: nil, now: day(2))
        #expect(try store.user(id: "u1").lastSeenAt == day(3), "last seen never moves back")
        #expect(try store.anonymousCredentials(username: "anon")?.secretHash == "new")

        #expect(
            try store.recordAnonymousSignIn(username: "nobody", verifiedHash: "x", upgradedHash: nil, now: day(4))
                == nil)
        #expect(try store.user(id: "u1").lastSeenAt == day(3))
    }
}
