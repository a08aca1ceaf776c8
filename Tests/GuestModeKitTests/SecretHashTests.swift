import Foundation
import Testing

@testable import GuestModeArchive
@testable import GuestModeKit
@testable import GuestModeSQLite

@Suite struct SecretHashTests {
    func hex(_ bytes: [UInt8]) -> String { SecretHash.hex(bytes) }

    /// PBKDF2-HMAC-SHA256 vectors: RFC 7914 §11 (64-byte output) and the
    /// widely published SHA-256 counterparts of RFC 6070's SHA-1 vectors.
    @Test(arguments: [
        (
            "passwd", "salt", 1, 64,
            "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc49ca9cccf179b645991664b39d77ef317c71b845b1e30bd509112041d3a19783"
        ),
        (
            "Password", "NaCl", 80_000, 64,
            "4ddcd8f60b98be21830cee5ef22701f9641a4418d04c0414aeff08876b34ab56a1d425a1225833549adb841b51c9b3176a272bdebba1d078478f62b397f33c8d"
        ),
        ("password", "salt", 1, 32, "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b"),
        ("password", "salt", 4_096, 32, "c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a"),
        (
            "passwordPASSWORDpassword", "saltSALTsaltSALTsaltSALTsaltSALTsalt", 4_096, 40,
            "348c89dbcbd32b2f32d814b8116e84cf2b17347ebc1800181c4e2a1fb8dd53e1c635518c7dac47e9"
        ),
    ])
    func knownVectors(password: String, salt: String, rounds: Int, length: Int, expected: String) throws {
        let derived = try SecretHash.pbkdf2(
            Array(password.utf8), salt: Array(salt.utf8), rounds: rounds, outputByteCount: length)
        #expect(hex(derived) == expected)
    }

    @Test func theStoredFormNamesSchemeRoundsSaltAndHash() throws {
        let stored = try SecretHash.make("password", salt: Array("salt".utf8), rounds: 4_096)
        #expect(
            stored == "pbkdf2-sha256$4096$73616c74$c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a")
        #expect(try SecretHash.make("x").hasPrefix("pbkdf2-sha256$\(SecretHash.currentRounds)$"))
        #expect(SecretHash.currentRounds >= 600_000)
    }

    @Test func aCurrentHashVerifiesOnlyItsSecret() throws {
        let stored = try SecretHash.make("hunter2")
        #expect(try SecretHash.verify("hunter2", against: stored) == .matches)
        #expect(try SecretHash.verify("hunter3", against: stored) == .doesNotMatch)
        #expect(try SecretHash.verify("", against: stored) == .doesNotMatch)
    }

    /// Written by the scheme before PBKDF2 (2,000 rounds of SHA-256 over salt
    /// and digest); computed independently with Python's hashlib.
    static let legacy =
        "sha256i2000$07070707070707070707070707070707$0de189f9c10f29ea336d695807ce3e920fb7120387caed43c84db616a78a83f0"

    @Test func aLegacyHashStillVerifiesAndAsksForARehash() throws {
        #expect(try SecretHash.verify("hunter2", against: Self.legacy) == .matchesButNeedsRehash)
        #expect(try SecretHash.verify("hunter3", against: Self.legacy) == .doesNotMatch)
    }

    @Test func aHashBelowTheCurrentCostAsksForARehash() throws {
        let cheap = try SecretHash.make("hunter2", rounds: 1_000)
        #expect(try SecretHash.verify("hunter2", against: cheap) == .matchesButNeedsRehash)
        #expect(try SecretHash.verify("hunter3", against: cheap) == .doesNotMatch)
    }

    @Test(arguments: [
        "", "hunter2", "md5$abc", "pbkdf2-sha256$1000$zz$00", "pbkdf2-sha256$0$00$00", "pbkdf2-sha256$-1$00$00",
        "pbkdf2-sha256$999999999999$00$00", "pbkdf2-sha256$1000$00$", "pbkdf2-sha256$1000$00", "sha256i2000$00",
        "sha256i2000$0$00",
    ])
    func malformedHashesNeverMatch(stored: String) throws {
        #expect(try SecretHash.verify("hunter2", against: stored) == .doesNotMatch)
    }

    @Test func comparisonIsByContentAndLength() {
        #expect(SecretHash.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!SecretHash.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!SecretHash.constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(SecretHash.constantTimeEquals([], []))
    }
}

@Suite struct AnonymousSignInTests {
    @Test func aCorrectSecretSignsInAndMovesLastSeen() throws {
        let engine = try engine("subscriptions")
        let guest = try engine.createGuest(
            device: nil, credentials: AnonymousCredentials(username: "anon", secret: "hunter2"), now: day(1))
        let signedIn = try engine.verifyAnonymousCredentials(username: "anon", secret: "hunter2", now: day(3))
        #expect(signedIn?.id == guest.id)
        #expect(signedIn?.lastSeenAt == day(3))
        #expect(try engine.verifyAnonymousCredentials(username: "anon", secret: "hunter3", now: day(4)) == nil)
        #expect(try engine.verifyAnonymousCredentials(username: "nobody", secret: "hunter2", now: day(4)) == nil)
        #expect(try engine.user(guest.id).lastSeenAt == day(3), "a failed attempt is not activity")
    }

    @Test func aLegacyHashIsReplacedOnSuccessfulUseOnly() throws {
        let engine = try engine("subscriptions")
        let guest = try engine.createGuest(device: nil, now: day(1))
        let store = engine.store
        // A guest created by an older guestmode: the legacy hash as it stored it.
        try store.deleteUser(id: guest.id)
        try store.createUser(
            guest,
            credentials: StoredCredentials(
                userID: guest.id, username: "anon", secretHash: SecretHashTests.legacy, createdAt: day(1)))

        #expect(try engine.verifyAnonymousCredentials(username: "anon", secret: "wrong", now: day(2)) == nil)
        #expect(try store.anonymousCredentials(username: "anon")?.secretHash == SecretHashTests.legacy)

        #expect(try engine.verifyAnonymousCredentials(username: "anon", secret: "hunter2", now: day(2))?.id == guest.id)
        let upgraded = try #require(try store.anonymousCredentials(username: "anon")?.secretHash)
        #expect(upgraded.hasPrefix("pbkdf2-sha256$\(SecretHash.currentRounds)$"))
        #expect(try SecretHash.verify("hunter2", against: upgraded) == .matches)
        // The new hash keeps working, and is not replaced again.
        #expect(try engine.verifyAnonymousCredentials(username: "anon", secret: "hunter2", now: day(3))?.id == guest.id)
        #expect(try store.anonymousCredentials(username: "anon")?.secretHash == upgraded)
    }

    @Test func linkedUsersNoLongerSignInAnonymously() throws {
        let engine = try engine("subscriptions")
        let guest = try engine.createGuest(
            device: nil, credentials: AnonymousCredentials(username: "anon", secret: "hunter2"), now: day(1))
        _ = try engine.link(user: guest.id, provider: "apple", subject: "a", email: nil, now: day(2))
        #expect(try engine.verifyAnonymousCredentials(username: "anon", secret: "hunter2", now: day(3)) == nil)
    }
}
