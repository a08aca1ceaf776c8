import Crypto
import Foundation

/// The validated form of a store's profile, kept in the store next to the
/// profile's text so that opening a store does not parse and validate the
/// YAML again on every command. The entry is sealed with the SHA-256 of the
/// cache's format, the exact text it was made from and its own JSON: an entry
/// whose seal does not match the bound text and the JSON, or whose JSON does
/// not decode, is a miss (the text is parsed as before), so a stale entry (the
/// profile was re-bound or applied since, or an older guestmode wrote it in
/// another form) or a damaged one never changes what the engine does.
package struct ProfileCacheEntry: Sendable, Equatable {
    /// Lowercase hex SHA-256 of `ProfileCache.format`, a NUL byte, the profile
    /// text, a NUL byte and `json`.
    package var seal: String
    /// The validated profile, as `ProfileCacheCodec` writes it.
    package var json: String

    package init(seal: String, json: String) {
        self.seal = seal
        self.json = json
    }
}

package enum ProfileCache {
    /// The keys of the `meta` table that hold the entry (`meta` is a key/value
    /// table in both backends, so the cache needs no schema change).
    package static let sealMetaKey = "profile_cache_sha256"
    package static let jsonMetaKey = "profile_cache_json"

    /// The form of the JSON, sealed with it: an entry an older guestmode wrote
    /// in another form (`JSONEncoder`'s, before 2) does not match its seal.
    package static let format = "guestmode-profile-cache-2"

    /// Lowercase hex SHA-256 of `format`, a NUL byte, the text, a NUL byte and the JSON.
    package static func seal(text: String, json: String) -> String {
        // Each text hashed from its own UTF-8 storage: `Data(text.utf8)` asks at run time whether the
        // view is contiguous bytes, a scan of the binary's conformance records on every command's
        // start-up (bench/results.md, "Start-up").
        var hasher = SHA256()
        func update(_ text: String) {
            var text = text
            text.withUTF8 { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }
        }
        update(format)
        withUnsafeBytes(of: UInt8(0)) { hasher.update(bufferPointer: $0) }
        update(text)
        withUnsafeBytes(of: UInt8(0)) { hasher.update(bufferPointer: $0) }
        update(json)
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(64)
        for byte in hasher.finalize() {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: hex, as: UTF8.self)
    }

    /// The entry for a profile parsed and validated from `text`.
    package static func entry(for profile: Profile, text: String) throws -> ProfileCacheEntry {
        let json = try ProfileCacheCodec.encode(profile)
        return ProfileCacheEntry(seal: seal(text: text, json: json), json: json)
    }

    /// The profile kept in `entry` when it was made from exactly `text` and
    /// is intact; nil for any mismatch or damage.
    package static func profile(from entry: ProfileCacheEntry?, text: String) -> Profile? {
        guard let entry, entry.seal == seal(text: text, json: entry.json) else { return nil }
        guard let profile = try? ProfileCacheCodec.decode(entry.json) else { return nil }
        // A profile the loader made has all three tiers; one without is not what was cached.
        guard TierLevel.allCases.allSatisfy({ level in profile.tiers.contains { $0.level == level } }) else {
            return nil
        }
        return profile
    }
}
