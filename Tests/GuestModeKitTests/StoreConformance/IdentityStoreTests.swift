import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// The engine's identity steps (`beginLink`, `completeLink`, `abandonLink`,
/// `unlink`) over the rows of every backend.
@Suite struct IdentityStoreTests {
    /// Begins and completes a link, as `GuestMode.link` does.
    func link(_ store: any GuestStore, _ profile: Profile, _ request: LinkRequest, now: Date) throws -> LinkResult {
        let engine = GuestMode(profile: profile, store: store)
        #expect(try engine.beginLink(request, now: now) == .started)
        return try engine.completeLink(request, now: now)
    }

    @Test(arguments: StoreBackend.allCases)
    func linkingUpgradesInPlaceAndDropsCredentialsAfterwards(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        let guest = newUser("g")
        try store.createUser(guest, credentials: credentials(of: guest, "anon"))
        _ = try GuestMode(profile: profile, store: store).grantPlan(
            user: "g", plan: "premium", trial: nil, until: nil, now: day(1))
        let request = LinkRequest(user: "g", provider: "apple", subject: "a", email: "a@example.com")

        #expect(try engine.beginLink(request, now: day(2)) == .started)
        // While the lock is held nothing else has changed yet.
        #expect(try store.anonymousCredentials(username: "anon") != nil)
        #expect(try store.user(id: "g").state == .anonymous)

        let result = try engine.completeLink(request, now: day(2))
        #expect(
            result
                == LinkResult(
                    user: "g", provider: "apple", subject: "a", isNewlyLinked: true, removedAnonymousCredentials: true))
        let user = try store.user(id: "g")
        #expect(user.id == "g")
        #expect(user.state == .linked)
        #expect(user.linkedAt == day(2))
        #expect(user.promptState == PromptState.authenticated.rawValue)
        #expect(try store.anonymousCredentials(username: "anon") == nil)
        let overview = try store.userOverview(id: "g")
        #expect(
            overview.identities == [Identity(provider: "apple", subject: "a", email: "a@example.com", linkedAt: day(2))]
        )
        #expect(overview.grants.count == 1, "the plan stays with the user")
        #expect(overview.counters["account_upgrade_started"] == 1)
        #expect(overview.counters["account_upgrade_succeeded"] == 1)
        // The lock is gone: a second provider is refused for its own reason, not as in progress.
        let second = LinkRequest(user: "g", provider: "google", subject: "b", email: nil)
        #expect(try engine.beginLink(second, now: day(2)) == .started)
        expectFailure(.conflict, code: .tooManyProviders) {
            _ = try engine.completeLink(second, now: day(2))
        }
    }

    @Test(arguments: StoreBackend.allCases)
    func aGuestWithoutCredentialsLinksToo(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        try store.createUser(newUser("g"), credentials: nil)
        let result = try link(
            store, profile, LinkRequest(user: "g", provider: "email", subject: "me", email: nil), now: day(1))
        #expect(result.isNewlyLinked)
        #expect(!result.didRemoveAnonymousCredentials)
    }

    @Test(arguments: StoreBackend.allCases)
    func anAlreadyBoundIdentityIsNoChange(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        try store.createUser(newUser("g"), credentials: nil)
        let request = LinkRequest(user: "g", provider: "apple", subject: "a", email: nil)
        _ = try link(store, profile, request, now: day(1))
        let before = try store.userOverview(id: "g")
        #expect(try engine.beginLink(request, now: day(2)) == .alreadyLinked)
        #expect(try store.userOverview(id: "g") == before, "no lock, no event")
        // Bound between begin and complete (by another process): only the lock goes.
        let result = try engine.completeLink(request, now: day(2))
        #expect(!result.isNewlyLinked)
        #expect(try store.userOverview(id: "g") == before)
    }

    @Test(arguments: StoreBackend.allCases)
    func anIdentityOfAnotherUserLeavesTheGuestUntouched(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        try store.createUser(newUser("owner"), credentials: nil)
        _ = try link(
            store, profile, LinkRequest(user: "owner", provider: "apple", subject: "taken", email: nil), now: day(1))
        let guest = newUser("g")
        try store.createUser(guest, credentials: credentials(of: guest, "anon"))
        _ = try GuestMode(profile: profile, store: store).grantPlan(
            user: "g", plan: "premium", trial: nil, until: nil, now: day(1))
        let before = try store.userOverview(id: "g")
        let owner = try store.userOverview(id: "owner")

        let request = LinkRequest(user: "g", provider: "apple", subject: "taken", email: nil)
        #expect(try engine.beginLink(request, now: day(2)) == .started)
        expectFailure(.conflict, code: .identityAlreadyExists) {
            _ = try engine.completeLink(request, now: day(2))
        }
        try engine.abandonLink(user: "g", provider: "apple", failureCode: "identity_already_exists", now: day(2))

        let after = try store.userOverview(id: "g")
        #expect(after.user == before.user)
        #expect(after.identities.isEmpty)
        #expect(after.grants == before.grants)
        #expect(after.hasAnonymousCredentials)
        #expect(try store.anonymousCredentials(username: "anon")?.userID == "g")
        #expect(after.counters["account_upgrade_failed"] == 1)
        #expect(after.counters["account_upgrade_succeeded"] == nil)
        #expect(try store.userOverview(id: "owner") == owner)
        // The lock was released: a good identity links at once.
        #expect(
            try link(
                store, profile, LinkRequest(user: "g", provider: "google", subject: "mine", email: nil), now: day(2)
            ).isNewlyLinked)
    }

    @Test(arguments: StoreBackend.allCases)
    func oneIdentityPerProviderAndNoMoreProvidersThanTheProfileAllows(backend: StoreBackend) throws {
        let (store, subscriptions) = try backend.makeStore(profile: "subscriptions")
        var profile = subscriptions
        profile.identity.maximumProvidersPerUser = 2
        let engine = GuestMode(profile: profile, store: store)
        try store.createUser(newUser("g"), credentials: nil)
        _ = try link(store, profile, LinkRequest(user: "g", provider: "apple", subject: "a", email: nil), now: day(1))

        let sameProvider = LinkRequest(user: "g", provider: "apple", subject: "b", email: nil)
        _ = try engine.beginLink(sameProvider, now: day(2))
        expectFailure(.conflict, code: .providerAlreadyLinked) {
            _ = try engine.completeLink(sameProvider, now: day(2))
        }
        try engine.abandonLink(user: "g", provider: "apple", failureCode: "provider_already_linked", now: day(2))

        _ = try link(store, profile, LinkRequest(user: "g", provider: "google", subject: "c", email: nil), now: day(3))
        let third = LinkRequest(user: "g", provider: "email", subject: "d", email: nil)
        _ = try engine.beginLink(third, now: day(4))
        expectFailure(.conflict, code: .tooManyProviders) {
            _ = try engine.completeLink(third, now: day(4))
        }
        #expect(try store.userOverview(id: "g").identities.map(\.provider) == ["apple", "google"])
    }

    @Test(arguments: StoreBackend.allCases)
    func aHeldLockRefusesASecondUpgradeUntilItIsStale(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        try store.createUser(newUser("g"), credentials: nil)
        let request = LinkRequest(user: "g", provider: "apple", subject: "a", email: nil)
        // A process took the lock at 10:00 and died.
        let taken = day(1, hour: 10)
        #expect(try engine.beginLink(request, now: taken) == .started)
        let before = try store.userOverview(id: "g")
        expectFailure(.conflict, code: .upgradeInProgress) {
            _ = try engine.beginLink(request, now: taken.addingTimeInterval(60))
        }
        #expect(try store.userOverview(id: "g") == before, "a refused start changes nothing")
        // A second before the lock's lifetime is over, it still holds...
        expectFailure(.conflict, code: .upgradeInProgress) {
            _ = try engine.beginLink(request, now: taken.addingTimeInterval(GuestMode.upgradeLockLifetime - 1))
        }
        // ...and once it is over, the lock is stale and taken over.
        let later = taken.addingTimeInterval(GuestMode.upgradeLockLifetime)
        #expect(try engine.beginLink(request, now: later) == .started)
        #expect(try engine.completeLink(request, now: later).isNewlyLinked)
    }

    @Test(arguments: StoreBackend.allCases)
    func aRefusedConcurrentUpgradeIsCountedAndLeavesTheOtherAttemptsLock(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        try store.createUser(newUser("g"), credentials: nil)
        let first = LinkRequest(user: "g", provider: "apple", subject: "a", email: nil)
        #expect(try engine.beginLink(first, now: day(1)) == .started)
        expectFailure(.conflict, code: .upgradeInProgress) {
            _ = try engine.link(user: "g", provider: "google", subject: "b", email: nil, now: day(1, hour: 1))
        }
        let refused = try engine.details(user: "g", now: day(1, hour: 1))
        #expect(refused.counters["account_upgrade_failed"] == 1)
        #expect(refused.identities.isEmpty)
        let failures = try engine.events(user: "g", matching: EventQuery(action: "account_upgrade_failed"))
        #expect(failures.map { $0.properties["code"] } == [.string("upgrade_in_progress")])
        #expect(failures.map { $0.properties["provider"] } == [.string("google")])
        // The first attempt still holds its lock, and finishes.
        expectFailure(.conflict, code: .upgradeInProgress) {
            _ = try engine.beginLink(first, now: day(1, hour: 1))
        }
        #expect(try engine.completeLink(first, now: day(1, hour: 1)).isNewlyLinked)
        #expect(try engine.details(user: "g", now: day(1, hour: 1)).counters["account_upgrade_succeeded"] == 1)
    }

    @Test(arguments: StoreBackend.allCases)
    func linkingAMissingUserIsNotFound(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "subscriptions")
        let engine = GuestMode(profile: profile, store: store)
        let request = LinkRequest(user: "nobody", provider: "apple", subject: "a", email: nil)
        expectFailure(.notFound, code: .userNotFound) {
            _ = try engine.beginLink(request, now: day(1))
        }
        expectFailure(.notFound, code: .userNotFound) {
            _ = try engine.completeLink(request, now: day(1))
        }
        expectFailure(.notFound, code: .userNotFound) {
            _ = try engine.unlink(user: "nobody", provider: "apple", now: day(1))
        }
        // Abandoning the link of a user deleted meanwhile is harmless.
        try engine.abandonLink(user: "nobody", provider: "apple", failureCode: "user_not_found", now: day(1))
        #expect(try store.users(state: nil, lastSeenBefore: nil).isEmpty)
    }

    @Test(arguments: StoreBackend.allCases)
    func unlinkingTheLastIdentityMakesTheUserAnonymousAgain(backend: StoreBackend) throws {
        let (store, subscriptions) = try backend.makeStore(profile: "subscriptions")
        var profile = subscriptions
        profile.identity.maximumProvidersPerUser = 2
        let engine = GuestMode(profile: profile, store: store)
        try store.createUser(newUser("g"), credentials: nil)
        _ = try link(store, profile, LinkRequest(user: "g", provider: "apple", subject: "a", email: nil), now: day(1))
        _ = try link(store, profile, LinkRequest(user: "g", provider: "google", subject: "b", email: nil), now: day(2))

        let stillLinked = try engine.unlink(user: "g", provider: "apple", now: day(3))
        #expect(stillLinked.state == .linked)
        #expect(stillLinked.linkedAt == day(1))
        let anonymous = try engine.unlink(user: "g", provider: "google", now: day(4))
        #expect(anonymous.state == .anonymous)
        #expect(anonymous.linkedAt == nil)
        #expect(anonymous.promptState == "anonymous")
        #expect(try store.user(id: "g") == anonymous)
        #expect(try store.userOverview(id: "g").counters["account_unlinked"] == 2)

        let before = try store.userOverview(id: "g")
        expectFailure(.notFound, code: .identityNotFound) {
            _ = try engine.unlink(user: "g", provider: "google", now: day(5))
        }
        #expect(try store.userOverview(id: "g") == before, "a refused unlink changes nothing")
        // The identity is free for anyone again.
        try store.createUser(newUser("other"), credentials: nil)
        #expect(
            try link(
                store, profile, LinkRequest(user: "other", provider: "google", subject: "b", email: nil), now: day(5)
            ).isNewlyLinked)
    }
}

@Suite struct UnlinkPromptStateTests {
    @Test func theHistoryDecidesExceptAuthenticated() {
        #expect(PromptState.afterUnlinking(outcomes: []) == .anonymous)
        #expect(PromptState.afterUnlinking(outcomes: [.shown, .completed]) == .anonymous)
        #expect(PromptState.afterUnlinking(outcomes: [.shown, .never]) == .neverAsk)
        #expect(PromptState.afterUnlinking(outcomes: [.shown, .later]) == .dismissed)
        #expect(PromptState.afterUnlinking(outcomes: [.shown]) == .prompted)
    }
}
