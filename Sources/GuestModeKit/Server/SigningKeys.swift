import Crypto
import Foundation

/// Where a signing key stands: the `current` key signs new access tokens; a
/// `rotated` one signed earlier tokens and still verifies them; a `retired`
/// one verifies nothing and is no longer published.
package enum SigningKeyState: String, Codable, Sendable {
    case current, rotated, retired
}

/// A key access tokens are signed with (ES256: ECDSA on P-256 with SHA-256),
/// as listed and published: its private half is kept sealed in the store and
/// never shown.
package struct SigningKey: Encodable, Sendable, Equatable {
    /// The key id tokens name in their `kid` header: the start of the key's
    /// RFC 7638 thumbprint.
    package var kid: String
    package var algorithm: String
    package var state: SigningKeyState
    package var createdAt: Date
    /// Nil while the key verifies tokens.
    package var retiredAt: Date?
    /// The public key's coordinates, base64url, as a JWK's `x` and `y`.
    package var x: String
    package var y: String
    /// The id of the deployment key its private half is sealed with.
    package var sealedBy: String

    enum CodingKeys: String, CodingKey { case kid, algorithm, state, createdAt, retiredAt }
}

/// A signing key as the store keeps it: the private key sealed (AES-GCM) with
/// a key the deployment's backup key derives, so a copy of the database alone
/// signs nothing.
package struct StoredSigningKey: Sendable, Equatable {
    package var kid: String
    package var algorithm: String
    /// The public key, X9.63 uncompressed, base64url.
    package var publicKey: String
    /// AES-GCM's combined nonce, ciphertext and tag over the raw private key, base64url.
    package var sealedPrivateKey: String
    /// The id of the deployment key that sealed it (`BackupKey.id`).
    package var sealedBy: String
    package var createdAt: Date
    package var retiredAt: Date?

    package init(
        kid: String, algorithm: String, publicKey: String, sealedPrivateKey: String, sealedBy: String,
        createdAt: Date, retiredAt: Date?
    ) {
        self.kid = kid
        self.algorithm = algorithm
        self.publicKey = publicKey
        self.sealedPrivateKey = sealedPrivateKey
        self.sealedBy = sealedBy
        self.createdAt = createdAt
        self.retiredAt = retiredAt
    }
}

/// The key signing keys are sealed with: derived from the deployment's
/// backup key by the caller, named by that key's id.
package struct SigningKeySeal: Sendable {
    /// The id of the deployment key new signing keys are sealed with.
    package var id: String
    let key: SymmetricKey
    /// What the deployment's rotated keys derive, by their ids: signing keys sealed before a rotation
    /// of the deployment key still open.
    private var earlier: [String: SymmetricKey] = [:]

    package init(id: String, bytes: [UInt8]) {
        self.id = id
        key = SymmetricKey(data: bytes)
    }

    package mutating func add(id: String, bytes: [UInt8]) {
        earlier[id] = SymmetricKey(data: bytes)
    }

    /// The key that opens what the deployment key `id` sealed, or nil.
    func opening(_ id: String) -> SymmetricKey? {
        id == self.id ? key : earlier[id]
    }
}

/// What a server signs and verifies with: the current key's private half and
/// the public halves of every key not retired, by kid.
package struct SigningKeyRing: Sendable {
    package var current: SigningKey
    package var signer: P256.Signing.PrivateKey
    package var verifiers: [String: P256.Signing.PublicKey]
    /// Every key not retired, oldest first: what `/.well-known/jwks.json` publishes.
    package var published: [SigningKey]
}

/// Base64url without padding (RFC 4648 §5), as JOSE writes bytes.
package enum Base64URL {
    package static func encode(_ bytes: some DataProtocol) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    /// The bytes, or nil for anything but unpadded base64url.
    package static func decode(_ text: some StringProtocol) -> Data? {
        guard
            text.utf8.allSatisfy({ byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: "_")
            }), text.utf8.count % 4 != 1
        else { return nil }
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}

extension GuestMode {
    static let signingAlgorithm = "ES256"

    /// Every signing key, retired ones too, oldest first.
    package func signingKeys() throws -> [SigningKey] {
        try store.read { transaction in try Self.listed(try transaction.signingKeys()) }
    }

    /// Makes a new signing key the current one: new access tokens are signed
    /// with it from now on, and tokens the previous ones signed keep
    /// verifying until they expire or their key is retired. On a store with
    /// no key yet, this makes the first. Refused when the store's current key
    /// was sealed with another deployment key: servers holding that one
    /// could not open the new key.
    package func rotateSigningKey(seal: SigningKeySeal, now: Date) throws -> SigningKey {
        try store.write { transaction in
            try transaction.lockSigningKeys()
            let stored = try transaction.signingKeys()
            if let current = Self.current(of: stored) { _ = try Self.open(current, with: seal) }
            let made = try Self.makeSigningKey(seal: seal, now: now)
            try transaction.insertSigningKey(made)
            return try Self.listed([made])[0]
        }
    }

    /// The store's current signing key, made first when the store has none
    /// (`guestmode serve` calls this as it starts); `created` says which.
    package func ensureSigningKey(seal: SigningKeySeal, now: Date) throws -> (key: SigningKey, created: Bool) {
        if let current = try store.read({ transaction in try Self.listed(try transaction.signingKeys()) })
            .first(where: { $0.state == .current })
        {
            return (current, false)
        }
        return try store.write { transaction in
            try transaction.lockSigningKeys()
            let stored = try transaction.signingKeys()
            if let current = try Self.listed(stored).first(where: { $0.state == .current }) { return (current, false) }
            let made = try Self.makeSigningKey(seal: seal, now: now)
            try transaction.insertSigningKey(made)
            return (try Self.listed([made])[0], true)
        }
    }

    /// Retires a key that is no longer current: tokens it signed are refused
    /// and it is no longer published. Retiring a retired key changes nothing.
    package func retireSigningKey(kid: String, now: Date) throws -> SigningKey {
        try TextRule.check(kid, what: "the key id")
        return try store.write { transaction in
            try transaction.lockSigningKeys()
            let keys = try Self.listed(try transaction.signingKeys())
            guard var key = keys.first(where: { $0.kid == kid }) else {
                throw GuestModeError(.signingKeyNotFound, "no signing key has the id '\(kid)'")
            }
            switch key.state {
            case .retired:
                return key
            case .current:
                throw GuestModeError(
                    .signingKeyInUse,
                    "the signing key \(kid) signs new access tokens; rotate first, then retire it once the tokens it signed have expired"
                )
            case .rotated:
                try transaction.markSigningKeyRetired(kid: kid, at: now)
                key.state = .retired
                key.retiredAt = now
                return key
            }
        }
    }

    /// The keys a server signs and verifies with, the current one opened with
    /// `seal`; nil while the store has no signing key.
    package func signingKeyRing(seal: SigningKeySeal) throws -> SigningKeyRing? {
        let stored = try store.read { transaction in try transaction.signingKeys() }
        guard let current = Self.current(of: stored) else { return nil }
        let signer = try Self.open(current, with: seal)
        let listed = try Self.listed(stored)
        var verifiers: [String: P256.Signing.PublicKey] = [:]
        for key in stored where key.retiredAt == nil { verifiers[key.kid] = try Self.publicKey(of: key) }
        return SigningKeyRing(
            current: try Self.listed([current])[0], signer: signer, verifiers: verifiers,
            published: listed.filter { $0.state != .retired })
    }

    /// The newest key not retired: the one new tokens are signed with.
    private static func current(of stored: [StoredSigningKey]) -> StoredSigningKey? {
        stored.last { $0.retiredAt == nil }
    }

    private static func listed(_ stored: [StoredSigningKey]) throws -> [SigningKey] {
        let current = Self.current(of: stored)?.kid
        return try stored.map { key in
            let raw = try Self.publicKey(of: key).x963Representation
            return SigningKey(
                kid: key.kid, algorithm: key.algorithm,
                state: key.retiredAt != nil ? .retired : key.kid == current ? .current : .rotated,
                createdAt: key.createdAt, retiredAt: key.retiredAt,
                x: Base64URL.encode(raw[1..<33]), y: Base64URL.encode(raw[33..<65]), sealedBy: key.sealedBy)
        }
    }

    private static func publicKey(of key: StoredSigningKey) throws -> P256.Signing.PublicKey {
        guard key.algorithm == signingAlgorithm, let raw = Base64URL.decode(key.publicKey),
            let publicKey = try? P256.Signing.PublicKey(x963Representation: raw)
        else {
            throw GuestModeError(.databaseError, "the signing key \(key.kid) in the store is not an ES256 public key")
        }
        return publicKey
    }

    private static func open(_ key: StoredSigningKey, with seal: SigningKeySeal) throws -> P256.Signing.PrivateKey {
        guard let opening = seal.opening(key.sealedBy) else {
            throw GuestModeError(
                .signingKeySealedElsewhere,
                "the store's signing key \(key.kid) is sealed with the deployment key \(key.sealedBy), and this machine's is \(seal.id)"
            )
        }
        guard let sealed = Base64URL.decode(key.sealedPrivateKey),
            let box = try? AES.GCM.SealedBox(combined: sealed),
            let raw = try? AES.GCM.open(box, using: opening, authenticating: Data(key.kid.utf8)),
            let privateKey = try? P256.Signing.PrivateKey(rawRepresentation: raw),
            privateKey.publicKey.x963Representation == (try publicKey(of: key)).x963Representation
        else {
            throw GuestModeError(
                .signingKeySealedElsewhere,
                "the store's signing key \(key.kid) does not open with the deployment key \(key.sealedBy); it was sealed with another key of that id, or changed since"
            )
        }
        return privateKey
    }

    private static func makeSigningKey(seal: SigningKeySeal, now: Date) throws -> StoredSigningKey {
        var privateKey: P256.Signing.PrivateKey
        var raw: Data
        var kid: String
        // A kid is typed on command lines ('signing-key retire KID'), where one that starts with '-'
        // reads as an option; one key in 64 would, so such a key is drawn again.
        repeat {
            privateKey = P256.Signing.PrivateKey()
            raw = privateKey.publicKey.x963Representation
            let x = Base64URL.encode(raw[1..<33])
            let y = Base64URL.encode(raw[33..<65])
            // RFC 7638: the SHA-256 of the required members, in lexicographic order, without spaces.
            let thumbprint = SHA256.hash(data: Data(#"{"crv":"P-256","kty":"EC","x":"\#(x)","y":"\#(y)"}"#.utf8))
            kid = String(Base64URL.encode(Array(thumbprint)).prefix(16))
        } while kid.hasPrefix("-")
        let sealed = try AES.GCM.seal(privateKey.rawRepresentation, using: seal.key, authenticating: Data(kid.utf8))
        guard let combined = sealed.combined else {
            throw GuestModeError(.internalFailure, "AES-GCM gave no combined box for a new signing key")
        }
        return StoredSigningKey(
            kid: kid, algorithm: signingAlgorithm, publicKey: Base64URL.encode(raw),
            sealedPrivateKey: Base64URL.encode(combined), sealedBy: seal.id, createdAt: now, retiredAt: nil)
    }
}
