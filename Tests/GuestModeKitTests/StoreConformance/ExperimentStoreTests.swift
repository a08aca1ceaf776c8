import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// Sticky experiment assignments, directly and through the engine, on every
/// backend (GrowthBookTests covers the bucketing itself).
@Suite struct ExperimentStoreTests {
    @Test(arguments: StoreBackend.allCases)
    func theFirstAssignmentSticksUntilReplaced(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "recipes")
        try store.createUser(newUser("u"), credentials: nil)
        #expect(try store.storedAssignment(userID: "u", experiment: "auth_prompts") == nil)

        let first = try store.storeAssignment(userID: "u", experiment: "auth_prompts", variant: "social", at: day(2))
        #expect(first == StoredAssignment(variant: "social", assignedAt: day(2), isNew: true))
        let second = try store.storeAssignment(userID: "u", experiment: "auth_prompts", variant: "control", at: day(3))
        #expect(second == StoredAssignment(variant: "social", assignedAt: day(2), isNew: false), "the stored one wins")
        #expect(
            try store.storedAssignment(userID: "u", experiment: "auth_prompts")
                == StoredAssignment(
                    variant: "social", assignedAt: day(2), isNew: false))

        let replaced = try store.replaceAssignment(
            userID: "u", experiment: "auth_prompts", variant: "delayed", at: day(4))
        #expect(replaced == StoredAssignment(variant: "delayed", assignedAt: day(4), isNew: true))
        #expect(try store.storedAssignment(userID: "u", experiment: "auth_prompts")?.variant == "delayed")
        // Replacing where nothing was stored stores it.
        let fresh = try store.replaceAssignment(userID: "u", experiment: "other", variant: "b", at: day(5))
        #expect(fresh == StoredAssignment(variant: "b", assignedAt: day(5), isNew: true))
        #expect(try store.storedAssignment(userID: "u", experiment: "auth_prompts")?.variant == "delayed")
    }

    @Test(arguments: StoreBackend.allCases)
    func usersExistUntilDeletedAndTakeTheirAssignmentsWithThem(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "recipes")
        #expect(try store.userExists("u") == false)
        try store.createUser(newUser("u"), credentials: nil)
        try store.createUser(newUser("other"), credentials: nil)
        #expect(try store.userExists("u"))
        _ = try store.storeAssignment(userID: "u", experiment: "auth_prompts", variant: "social", at: day(2))
        _ = try store.storeAssignment(userID: "other", experiment: "auth_prompts", variant: "control", at: day(2))
        try store.deleteUser(id: "u")
        #expect(try store.userExists("u") == false)
        #expect(try store.storedAssignment(userID: "u", experiment: "auth_prompts") == nil)
        #expect(try store.storedAssignment(userID: "other", experiment: "auth_prompts")?.variant == "control")
    }

    @Test(arguments: StoreBackend.allCases)
    func theEngineAssignsByBucketAndKeepsItSticky(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        let engine = GuestMode(profile: profile, store: store)
        try store.createUser(newUser("u"), credentials: nil)
        let experiment = try #require(profile.experiment(named: "auth_prompts"))

        let first = try #require(try engine.assignExperiments(for: "u", named: "auth_prompts", now: day(2)).first)
        #expect(first.isNew)
        #expect(first.variant == experiment.variant(for: "u")?.name)
        #expect(first.assignedAt == day(2))
        let again = try #require(try engine.assignExperiments(for: "u", named: nil, now: day(3)).first)
        #expect(again.variant == first.variant)
        #expect(!again.isNew)
        #expect(again.assignedAt == day(2))

        let other = try #require(experiment.variants.map(\.name).first { $0 != first.variant })
        let forced = try engine.forceVariant(other, of: "auth_prompts", for: "u", now: day(4))
        #expect(forced.variant == other)
        #expect(forced.isNew)
        #expect(try engine.assignExperiments(for: "u", named: "auth_prompts", now: day(5)).first?.variant == other)

        expectFailure(.notFound, code: .userNotFound) {
            _ = try engine.assignExperiments(for: "ghost", named: nil, now: day(2))
        }
        expectFailure(.notFound, code: .userNotFound) {
            _ = try engine.forceVariant(other, of: "auth_prompts", for: "ghost", now: day(2))
        }
        #expect(try store.storedAssignment(userID: "ghost", experiment: "auth_prompts") == nil)
    }
}
