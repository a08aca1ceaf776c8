import Foundation

/// What the engine needs from a store about itself and its profile. Each
/// area of the engine has its own protocol (users, records, meters, …) and a
/// backend implements them all; SQLite is the embedded one.
package protocol StoreAdministration: Sendable {
    /// Binds the store to a profile, keeping the profile's text.
    func bindProfile(text: String, origin: String, now: Date) throws
    /// The profile text the store was bound to, or nil for a store never initialised.
    func boundProfile() throws -> (text: String, origin: String)?
    /// The bound profile and, in the same read, the cached validated form kept
    /// by `saveProfileCache` (nil when none; see `ProfileCache`) and whether
    /// the store owes a build of kept grant draws (`MeterRows.owedGrantDraws`),
    /// so that opening a store asks nothing more of it.
    func boundProfileWithCache() throws -> BoundProfile?
    /// Keeps the validated form of the bound profile, replacing any earlier one.
    func saveProfileCache(_ entry: ProfileCacheEntry) throws
    func schemaStatus() throws -> SchemaStatus
    func applyPendingMigrations(progress: (String) -> Void) throws -> [String]
    /// Problems found by the backend's own consistency check; empty when healthy.
    func integrityProblems() throws -> [String]
    func tableCounts() throws -> [String: Int]
}

package struct SchemaStatus: Codable, Sendable, Equatable {
    package var applied: [String]
    package var pending: [String]

    package init(applied: [String], pending: [String]) {
        self.applied = applied
        self.pending = pending
    }
    package var current: String? { applied.last }
}

/// What `StoreAdministration.boundProfileWithCache` reads, in one read.
package struct BoundProfile: Sendable, Equatable {
    package var text: String
    package var origin: String
    package var cache: ProfileCacheEntry?
    /// A schema step left kept grant draws to build (`GuestMode.buildOwedGrantDraws`).
    package var owesGrantDraws: Bool

    package init(text: String, origin: String, cache: ProfileCacheEntry?, owesGrantDraws: Bool) {
        self.text = text
        self.origin = origin
        self.cache = cache
        self.owesGrantDraws = owesGrantDraws
    }
}
