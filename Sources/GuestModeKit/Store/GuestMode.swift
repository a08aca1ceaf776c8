import Foundation

/// The engine: a store bound to a profile. Every decision it makes comes from
/// the profile; every write goes through the store; time is always passed in.
public struct GuestMode: Sendable {
    public let profile: Profile
    public let store: any GuestStore

    public init(profile: Profile, store: any GuestStore) {
        self.profile = profile
        self.store = store
    }

    /// The engine over an existing store, bound to the profile the store keeps.
    /// `location` names the store in messages (a path or a URI without secrets).
    public static func opening(_ store: any GuestStore, at location: String) throws -> GuestMode {
        guard let bound = try store.boundProfileWithCache() else {
            throw GuestModeError.badData(
                "the store '\(location)' is not bound to a profile",
                code: .storeWithoutProfile)
        }
        // The validated form kept for exactly this text spares the YAML parse;
        // any mismatch or damage is a miss and the text is parsed as always.
        if let profile = ProfileCache.profile(from: bound.cache, text: bound.text) {
            return GuestMode(profile: profile, store: store)
        }
        let profile = try ProfileLoader.parse(bound.text, file: bound.origin)
        keepCache(of: profile, text: bound.text, in: store)
        return GuestMode(profile: profile, store: store)
    }

    /// Binds an empty store to a profile's text and returns the engine over it.
    public static func binding(
        _ store: any GuestStore, toProfileText text: String, origin: String, now: Date
    ) throws -> GuestMode {
        let profile = try ProfileLoader.parse(text, file: origin)
        try store.bindProfile(text: text, origin: origin, now: now)
        keepCache(of: profile, text: text, in: store)
        return GuestMode(profile: profile, store: store)
    }

    /// Best effort: a store that cannot be written to (read-only file, busy)
    /// simply parses its profile next time too.
    private static func keepCache(of profile: Profile, text: String, in store: any GuestStore) {
        guard let entry = try? ProfileCache.entry(for: profile, text: text) else { return }
        try? store.saveProfileCache(entry)
    }
}
