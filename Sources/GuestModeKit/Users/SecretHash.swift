import Crypto
import Foundation
import _CryptoExtras

/// Salted, slow hashes of legacy anonymous secrets, so the store never holds
/// a secret that can be read back or cheaply guessed.
///
/// A stored hash names its scheme, so hashes of an older scheme keep
/// verifying and are replaced by a current one the next time the secret is
/// verified:
/// - `pbkdf2-sha256$ROUNDS$SALT$HASH` (current): PBKDF2-HMAC-SHA256, 32-byte
///   output, salt and hash in lowercase hex.
/// - `sha256i2000$SALT$HASH` (legacy): 2,000 rounds of
///   `digest = SHA256(salt ‖ digest)` starting from the secret's UTF-8 bytes.
package enum SecretHash {
    /// OWASP's recommendation for PBKDF2-HMAC-SHA256 (Password Storage Cheat
    /// Sheet, 2023 onwards).
    package static let currentRounds = 600_000

    static let scheme = "pbkdf2-sha256"
    static let legacyScheme = "sha256i2000"
    static let legacyRounds = 2_000
    static let saltByteCount = 16
    static let hashByteCount = 32
    /// Stored round counts above this are treated as malformed, so an edited
    /// store cannot make a verification run for hours.
    static let maximumRounds = 100_000_000

    /// The outcome of checking a secret against a stored hash.
    package enum Verification: Sendable, Equatable {
        /// The secret matches and the hash is of the current scheme and cost.
        case matches
        /// The secret matches but the hash is of an older scheme or a lower
        /// cost; store a fresh `make(_:)` of the secret in its place.
        case matchesButNeedsRehash
        /// The secret does not match, or the stored hash is not one we read.
        case doesNotMatch

        package var isMatch: Bool { self != .doesNotMatch }
    }

    /// A hash of `secret` under the current scheme, with a fresh random salt
    /// unless one is given (tests pass one to get a repeatable value).
    package static func make(_ secret: String, salt: [UInt8]? = nil, rounds: Int = currentRounds) throws -> String {
        var generator = SystemRandomNumberGenerator()
        let salt = salt ?? (0..<saltByteCount).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let hash = try pbkdf2(Array(secret.utf8), salt: salt, rounds: rounds, outputByteCount: hashByteCount)
        return "\(scheme)$\(rounds)$\(hex(salt))$\(hex(hash))"
    }

    /// Checks `secret` against a stored hash of any scheme this build knows,
    /// comparing digests in constant time.
    package static func verify(_ secret: String, against stored: String) throws -> Verification {
        let parts = stored.split(separator: "$", omittingEmptySubsequences: false)
        switch parts.first {
        case Substring(scheme):
            guard parts.count == 4, let rounds = Int(parts[1]), rounds > 0, rounds <= maximumRounds,
                let salt = bytes(fromHex: parts[2]), let expected = bytes(fromHex: parts[3]), !expected.isEmpty
            else { return .doesNotMatch }
            let actual = try pbkdf2(Array(secret.utf8), salt: salt, rounds: rounds, outputByteCount: expected.count)
            guard constantTimeEquals(actual, expected) else { return .doesNotMatch }
            return rounds < currentRounds ? .matchesButNeedsRehash : .matches
        case Substring(legacyScheme):
            guard parts.count == 3, let salt = bytes(fromHex: parts[1]), let expected = bytes(fromHex: parts[2]) else {
                return .doesNotMatch
            }
            return constantTimeEquals(legacyDigest(secret, salt: salt), expected)
                ? .matchesButNeedsRehash : .doesNotMatch
        default:
            return .doesNotMatch
        }
    }

    /// Work comparable to verifying a real hash, for an unknown username, so
    /// timing does not tell which usernames exist.
    static func verifyNothing(_ secret: String) {
        _ = try? pbkdf2(
            Array(secret.utf8), salt: [UInt8](repeating: 0, count: saltByteCount), rounds: currentRounds,
            outputByteCount: hashByteCount)
    }

    static func pbkdf2(_ secret: [UInt8], salt: [UInt8], rounds: Int, outputByteCount: Int) throws -> [UInt8] {
        // `unsafeUncheckedRounds`: the checked variant refuses fewer than
        // 210,000 rounds, which old hashes of this scheme and the RFC test
        // vectors use; new hashes always use `currentRounds`.
        let key = try KDF.Insecure.PBKDF2.deriveKey(
            from: secret, salt: salt, using: .sha256, outputByteCount: outputByteCount, unsafeUncheckedRounds: rounds)
        return key.withUnsafeBytes { Array($0) }
    }

    /// The scheme before PBKDF2; kept only to verify hashes stored by it.
    static func legacyDigest(_ secret: String, salt: [UInt8]) -> [UInt8] {
        var digest = Array(secret.utf8)
        for _ in 0..<legacyRounds {
            var hasher = Crypto.SHA256()
            hasher.update(data: salt)
            hasher.update(data: digest)
            digest = Array(hasher.finalize())
        }
        return digest
    }

    /// True when both are equal, in time that depends only on the lengths.
    static func constantTimeEquals(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    static func bytes(fromHex text: Substring) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(characters.count / 2)
        var index = 0
        while index < characters.count {
            guard let high = characters[index].hexDigitValue, let low = characters[index + 1].hexDigitValue else {
                return nil
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }
}
