import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

/// Sticky experiment assignments: each backend's assignment rows, and the
/// engine's rule over them (GrowthBookTests covers the bucketing itself).
@Suite struct ExperimentStoreTests {
    /// The stored assignment, read in its own transaction.
    private func stored(_ store: any GuestStore, _ userID: String, _ experiment: String) throws -> StoredAssignment? {
        try store.read { transaction in try transaction.assignment(of: userID, experiment: experiment) }
    }

    @Test(arguments: StoreBackend.allCases)
    func theFirstAssignmentSticksUntilReplaced(backend: StoreBackend) throws {
        let (store, _) = try backend.makeStore(profile: "recipes")
        try store.createUser(newUser("u"), credentials: nil)
        #expect(try stored(store, "u", "auth_prompts") == nil)

        let added = try store.write { transaction in
            try transaction.addAssignment(of: "u", experiment: "auth_prompts", variant: "social", at: day(2))
        }
        #expect(added)
        let addedAgain = try store.write { transaction in
            try transaction.addAssignment(of: "u", experiment: "auth_prompts", variant: "control", at: day(3))
        }
        #expect(!addedAgain, "the stored one wins")
        #expect(
            try stored(store, "u", "auth_prompts")
                == StoredAssignment(variant: "social", assignedAt: day(2), isNew: false))

        try store.write { transaction in
            try transaction.upsertAssignment(of: "u", experiment: "auth_prompts", variant: "delayed", at: day(4))
        }
        #expect(
            try stored(store, "u", "auth_prompts")
                == StoredAssignment(variant: "delayed", assignedAt: day(4), isNew: false))
        // Replacing where nothing was stored stores it.
        try store.write { transaction in
            try transaction.upsertAssignment(of: "u", experiment: "other", variant: "b", at: day(5))
        }
        #expect(try stored(store, "u", "other") == StoredAssignment(variant: "b", assignedAt: day(5), isNew: false))
        #expect(try stored(store, "u", "auth_prompts")?.variant == "delayed")
    }

    @Test(arguments: StoreBackend.allCases)
    func usersTakeTheirAssignmentsWithThem(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        let engine = GuestMode(profile: profile, store: store)
        try store.createUser(newUser("u"), credentials: nil)
        try store.createUser(newUser("other"), credentials: nil)
        _ = try engine.forceVariant("social", of: "auth_prompts", user: "u", now: day(2))
        _ = try engine.forceVariant("control", of: "auth_prompts", user: "other", now: day(2))
        try store.deleteUser(id: "u")
        expectFailure(.notFound, code: .userNotFound) {
            _ = try engine.assignExperiments(user: "u", named: nil, now: day(3))
        }
        #expect(try stored(store, "u", "auth_prompts") == nil)
        #expect(try stored(store, "other", "auth_prompts")?.variant == "control")
    }

    @Test(arguments: StoreBackend.allCases)
    func theEngineAssignsByBucketAndKeepsItSticky(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        let engine = GuestMode(profile: profile, store: store)
        try store.createUser(newUser("u"), credentials: nil)
        let experiment = try #require(profile.experiment(named: "auth_prompts"))

        let first = try #require(try engine.assignExperiments(user: "u", named: "auth_prompts", now: day(2)).first)
        #expect(first.isNew)
        #expect(first.variant == experiment.variant(for: "u")?.name)
        #expect(first.assignedAt == day(2))
        let again = try #require(try engine.assignExperiments(user: "u", named: nil, now: day(3)).first)
        #expect(again.variant == first.variant)
        #expect(!again.isNew)
        #expect(again.assignedAt == day(2))

        let other = try #require(experiment.variants.map(\.name).first { $0 != first.variant })
        let forced = try engine.forceVariant(other, of: "auth_prompts", user: "u", now: day(4))
        #expect(forced.variant == other)
        #expect(forced.isNew)
        #expect(forced.assignedAt == day(4))
        #expect(try engine.assignExperiments(user: "u", named: "auth_prompts", now: day(5)).first?.variant == other)

        expectFailure(.notFound, code: .userNotFound) {
            _ = try engine.assignExperiments(user: "ghost", named: nil, now: day(2))
        }
        expectFailure(.notFound, code: .userNotFound) {
            _ = try engine.forceVariant(other, of: "auth_prompts", user: "ghost", now: day(2))
        }
        #expect(try stored(store, "ghost", "auth_prompts") == nil)
    }

    /// A prompt decision assigns the user first; a user who does not exist
    /// is not found, never an assignment the store cannot keep.
    @Test(arguments: StoreBackend.allCases)
    func aPromptStrategyOfAMissingUserIsNotFound(backend: StoreBackend) throws {
        let (store, profile) = try backend.makeStore(profile: "recipes")
        let engine = GuestMode(profile: profile, store: store)
        expectFailure(.notFound, code: .userNotFound) { _ = try engine.promptStrategy(user: "ghost", now: day(2)) }
        #expect(try stored(store, "ghost", "auth_prompts") == nil)
    }
}
