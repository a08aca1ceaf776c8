import Foundation

/// The engine: a store bound to a profile. Every decision it makes comes from
/// the profile; every write goes through the store; time is always passed in.
public struct GuestMode: Sendable {
    public let profile: Profile
    public let store: SQLiteStore

    public init(profile: Profile, store: SQLiteStore) {
        self.profile = profile
        self.store = store
    }

    /// Opens a store file and the profile it is bound to.
    public static func open(storePath: String) throws -> GuestMode {
        let store = try SQLiteStore.open(path: storePath)
        guard let bound = try store.boundProfile() else {
            throw GuestModeError.badData(
                "the store '\(storePath)' has no profile; run 'guestmode init --profile NAME --store \(storePath) --force'",
                code: .storeWithoutProfile)
        }
        let profile = try ProfileLoader.parse(bound.text, file: bound.origin)
        return GuestMode(profile: profile, store: store)
    }

    /// A fresh in-memory engine for tests and replays.
    public static func inMemory(profileText: String, origin: String = "profile.yaml", now: Date) throws -> GuestMode {
        let profile = try ProfileLoader.parse(profileText, file: origin)
        let store = try SQLiteStore.inMemory()
        try store.bindProfile(text: profileText, origin: origin, now: now)
        return GuestMode(profile: profile, store: store)
    }

    /// Creates a store bound to a profile.
    public static func initialize(
        storePath: String, source: ProfileCatalog.Source, replacing: Bool, now: Date
    ) throws {
        try SQLiteStore.create(path: storePath, replacing: replacing) { store in
            try store.bindProfile(text: source.text, origin: source.origin, now: now)
        }
    }
}
