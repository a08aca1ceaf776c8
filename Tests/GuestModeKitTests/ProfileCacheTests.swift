import Foundation
import Testing

@testable import GuestModeKit

/// The validated profile a store keeps (see `ProfileCache`) must give back
/// exactly the profile the YAML parse gives, and anything stale or damaged
/// must be a miss.
@Suite struct ProfileCacheTests {
    static let templates = ["habits", "recipes", "subscriptions", "voice"]

    @Test(arguments: templates) func encodeThenDecodeGivesTheParsedProfile(name: String) throws {
        let text = try template(name)
        let profile = try ProfileLoader.parse(text, file: "\(name).yaml")
        let entry = try ProfileCache.entry(for: profile, text: text)
        let decoded = try #require(ProfileCache.profile(from: entry, text: text))
        #expect(decoded == profile)
        #expect(entry.seal.count == 64)
    }

    @Test func anEntryForOtherTextIsAMiss() throws {
        let voice = try template("voice")
        let habits = try template("habits")
        let entry = try ProfileCache.entry(for: try ProfileLoader.parse(habits, file: "habits.yaml"), text: habits)
        #expect(ProfileCache.profile(from: entry, text: voice) == nil)
        #expect(ProfileCache.profile(from: nil, text: voice) == nil)
    }

    @Test func aDamagedEntryIsAMiss() throws {
        let text = try template("voice")
        let profile = try ProfileLoader.parse(text, file: "voice.yaml")
        let entry = try ProfileCache.entry(for: profile, text: text)
        // The JSON edited, the seal left as it was.
        var edited = entry
        edited.json = entry.json.replacingOccurrences(of: "\"premium\"", with: "\"account\"")
        #expect(edited.json != entry.json)
        #expect(ProfileCache.profile(from: edited, text: text) == nil)
        // Truncated JSON, even freshly sealed, does not decode.
        let truncated = String(entry.json.prefix(entry.json.count / 2))
        let resealed = ProfileCacheEntry(seal: ProfileCache.seal(text: text, json: truncated), json: truncated)
        #expect(ProfileCache.profile(from: resealed, text: text) == nil)
        // A wrong seal.
        #expect(ProfileCache.profile(from: ProfileCacheEntry(seal: "0", json: entry.json), text: text) == nil)
    }

    @Test func theSealIsTheSHA256OfTextNulAndJSON() {
        // printf 'a\0b' | sha256sum
        #expect(
            ProfileCache.seal(text: "a", json: "b")
                == "59b271ae1bbcb1d31d41929817f4b16fb439eb4f31520b5ad1d5ce98920a7138")
    }
}
