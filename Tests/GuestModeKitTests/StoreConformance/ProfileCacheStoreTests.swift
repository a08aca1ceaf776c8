import Foundation
import Testing

@testable import GuestModeKit
@testable import GuestModeSQLite

/// The validated profile kept in the store (`ProfileCache`): opening a store
/// gives the same profile whether it comes from the cache or from the YAML,
/// and a stale or tampered cache is ignored.
@Suite struct ProfileCacheStoreTests {
    @Test(arguments: StoreBackend.allCases) func openingKeepsTheCacheAndAHitGivesTheParsedProfile(
        backend: StoreBackend
    ) throws {
        let (store, parsed) = try backend.makeStore(profile: "voice")
        let text = try template("voice")
        // Bound without a cache: the first opening parses and keeps it.
        #expect(try store.boundProfileWithCache()?.cache == nil)
        let first = try GuestMode(store: store, location: "test")
        #expect(first.profile == parsed)
        let bound = try #require(try store.boundProfileWithCache())
        #expect(bound.text == text)
        #expect(bound.origin == "voice.yaml")
        let cache = try #require(bound.cache)
        #expect(try cache == ProfileCache.entry(for: parsed, text: text))
        // The second opening comes from the cache.
        #expect(try GuestMode(store: store, location: "test").profile == parsed)
    }

    @Test(arguments: StoreBackend.allCases) func aTamperedCacheIsIgnored(backend: StoreBackend) throws {
        let (store, parsed) = try backend.makeStore(profile: "voice")
        let text = try template("voice")
        let habitsText = try template("habits")
        let habits = try ProfileLoader.parse(habitsText, file: "habits.yaml")
        let good = try ProfileCache.entry(for: parsed, text: text)
        let tampered = [
            // Another profile's JSON under this text's seal.
            ProfileCacheEntry(seal: good.seal, json: try ProfileCache.entry(for: habits, text: text).json),
            // Stale: made from another text (as after a re-bind or `profile apply`).
            try ProfileCache.entry(for: habits, text: habitsText),
            // Damaged JSON.
            ProfileCacheEntry(seal: good.seal, json: "{"),
            ProfileCacheEntry(seal: "", json: ""),
        ]
        for entry in tampered {
            try store.saveProfileCache(entry)
            #expect(try store.boundProfileWithCache()?.cache == entry)
            #expect(try GuestMode(store: store, location: "test").profile == parsed)
            // The miss put a good entry back.
            #expect(try store.boundProfileWithCache()?.cache == good)
        }
    }

    @Test(arguments: StoreBackend.allCases) func aStoreWithoutProfileHasNoCache(backend: StoreBackend) throws {
        let store: any GuestStore
        switch backend {
        case .sqlite: store = try SQLiteStore.inMemory()
        case .sqlitePool: store = try StoreBackend.makePooledSQLiteStore()
        case .postgres: store = try StoreBackend.makePostgresStore()
        }
        #expect(try store.boundProfileWithCache() == nil)
    }
}
