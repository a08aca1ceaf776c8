import Crypto
import Foundation
import GuestModeKit
import Synchronization

/// A guest's access token: a compact JWS signed ES256 with the store's current
/// signing key, its `kid` in the header, carrying the claims Supabase's sessions
/// carry (`sub`, `is_anonymous`, `iss`, `aud`, `iat`, `exp`). Anyone can verify
/// one with the public keys `/.well-known/jwks.json` publishes.
final class AccessTokens: Sendable {
    let lifetime: TimeInterval
    let issuer: String
    let audience: String
    private let keys: SigningKeyCache
    /// Tokens this server verified, so a guest's next request skips the signature check (a quarter of a
    /// served read's time).
    private let verified = VerifiedTokens(limit: 4096)

    /// `load` reads the store's keys (the engine's `signingKeyRing`).
    init(
        lifetime: TimeInterval, issuer: String, audience: String, refresh: Duration,
        load: @escaping @Sendable () async throws -> SigningKeyRing
    ) {
        self.lifetime = lifetime
        self.issuer = issuer
        self.audience = audience
        keys = SigningKeyCache(refresh: refresh, load: load)
    }

    struct Issued: Sendable {
        var token: String
        var expiresAt: Date
    }

    /// The header and claims as signed: exactly these members, written in key order.
    private struct Header: Encodable {
        var alg = "ES256"
        var typ = "JWT"
        var kid: String
    }

    private struct Claims: Encodable {
        var iss: String
        var aud: String
        var sub: String
        var isAnonymous: Bool
        var iat: Int64
        var exp: Int64

        enum CodingKeys: String, CodingKey { case iss, aud, sub, isAnonymous = "is_anonymous", iat, exp }
    }

    func issue(for user: User, now: Date) async throws -> Issued {
        let ring = try await keys.ring()
        // Whole seconds, as the claims are written: the document's expiry is the token's.
        let issuedAt = now.timeIntervalSince1970.rounded(.down)
        let expiresAt = Date(timeIntervalSince1970: issuedAt + lifetime.rounded(.down))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let header = try encoder.encode(Header(kid: ring.current.kid))
        let claims = try encoder.encode(
            Claims(
                iss: issuer, aud: audience, sub: user.id, isAnonymous: user.state == .anonymous,
                iat: Int64(issuedAt), exp: Int64(expiresAt.timeIntervalSince1970)))
        let input = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let signature = try ring.signer.signature(for: Data(input.utf8))
        return Issued(token: input + "." + Base64URL.encode(signature.rawRepresentation), expiresAt: expiresAt)
    }

    /// The user a valid, unexpired token names. Any fault of the token (a bad
    /// signature, another algorithm, `none`, a key unknown or retired, another
    /// issuer or audience, expiry) is the same refusal: a client learns nothing
    /// from which it was. Only the store failing to give its keys is not a refusal.
    func verify(_ token: String, now: Date) async throws -> String {
        let digest = SHA256.hash(data: Data(token.utf8))
        if let known = verified.entry(digest) {
            // Never past the token's expiry, nor once its key is retired (as the uncached check would see).
            guard now.timeIntervalSince1970 < known.expiry, try await keys.verifier(for: known.kid) != nil else {
                throw AccessTokens.refused
            }
            return known.subject
        }
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, token.utf8.count <= 8192,
            let headerBytes = Base64URL.decode(parts[0]),
            case let .object(header)? = try? StrictJSON.parse(headerBytes),
            // The algorithm is the server's, whatever the header says; no extension it would have to understand.
            header["alg"] == .string("ES256"), header["crit"] == nil, case let .string(kid)? = header["kid"],
            let signatureBytes = Base64URL.decode(parts[2]), signatureBytes.count == 64,
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes)
        else { throw AccessTokens.refused }
        guard let key = try await keys.verifier(for: kid) else { throw AccessTokens.refused }
        let input = Data(token.utf8.prefix(parts[0].utf8.count + 1 + parts[1].utf8.count))
        guard key.isValidSignature(signature, for: input),
            let claimBytes = Base64URL.decode(parts[1]), case let .object(claims)? = try? StrictJSON.parse(claimBytes),
            case let .string(subject)? = claims["sub"], !subject.isEmpty,
            claims["iss"] == .string(issuer), Self.names(claims["aud"], audience),
            case let .number(expiry)? = claims["exp"], let exp = Double(expiry),
            now.timeIntervalSince1970 < exp
        else { throw AccessTokens.refused }
        verified.keep(digest, VerifiedTokens.Entry(subject: subject, expiry: exp, kid: kid), now: now)
        return subject
    }

    /// The keys `/.well-known/jwks.json` publishes: every one not retired.
    func published() async throws -> [SigningKey] {
        try await keys.ring().published
    }

    /// Whether `aud` (a string, or an array of them, RFC 7519 §4.1.3) names `audience`.
    private static func names(_ aud: JSONValue?, _ audience: String) -> Bool {
        switch aud {
        case let .string(value)?: return value == audience
        case let .array(values)?: return values.contains(.string(audience))
        default: return false
        }
    }

    static var refused: GuestModeError {
        GuestModeError(.unauthorized, "the access token or server key is missing, invalid or expired")
    }
}

/// Access tokens whose signature and claims this server checked, by their
/// SHA-256 (never the token itself), with what the check found. Bounded: when
/// full, the expired go, and if that is not enough, all of them (a guest's next
/// request is then checked in full again). Only a token that passed is kept,
/// so what a client sends cannot fill it with anything but valid tokens.
private final class VerifiedTokens: Sendable {
    struct Entry: Sendable {
        var subject: String
        /// The `exp` claim, in seconds since 1970.
        var expiry: Double
        var kid: String
    }

    private let entries = Mutex<[SHA256.Digest: Entry]>([:])
    private let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    func entry(_ digest: SHA256.Digest) -> Entry? {
        entries.withLock { $0[digest] }
    }

    func keep(_ digest: SHA256.Digest, _ entry: Entry, now: Date) {
        entries.withLock { entries in
            if entries.count >= limit {
                let moment = now.timeIntervalSince1970
                entries = entries.filter { $0.value.expiry > moment }
                if entries.count >= limit { entries.removeAll(keepingCapacity: true) }
            }
            entries[digest] = entry
        }
    }
}

/// The store's signing keys as this server last read them. Read again once
/// `refresh` has passed, so every server on a store signs with the key a
/// rotation made current, and refuses a retired one, within that time; and at
/// once (at most once a second, whatever a client sends) for a `kid` it does
/// not know, which another server may have started signing with. A copy past
/// `refresh` still answers while the new one is read in the background: a
/// request never waits on a busy store for keys this server holds. Only a
/// `kid` it does not know waits, as long as `load` lets a store call wait.
private final class SigningKeyCache: Sendable {
    private struct State {
        var ring: SigningKeyRing?
        var loadedAt = ContinuousClock.Instant.now
        var loading: Task<SigningKeyRing, any Error>?
    }

    private let state = Mutex(State())
    private let refresh: Duration
    private let load: @Sendable () async throws -> SigningKeyRing

    init(refresh: Duration, load: @escaping @Sendable () async throws -> SigningKeyRing) {
        self.refresh = refresh
        self.load = load
    }

    func ring() async throws -> SigningKeyRing {
        let held = state.withLock { state -> SigningKeyRing? in
            guard let ring = state.ring else { return nil }
            if ContinuousClock.now - state.loadedAt >= refresh, state.loading == nil {
                state.loading = startLoading()
            }
            return ring
        }
        if let held { return held }
        return try await ring(olderThan: refresh)
    }

    func verifier(for kid: String) async throws -> P256.Signing.PublicKey? {
        if let key = try await ring().verifiers[kid] { return key }
        return try await ring(olderThan: .seconds(1)).verifiers[kid]
    }

    /// The keys, read again first when the copy held is older than `age`; callers
    /// arriving while a read is under way wait for that one.
    private func ring(olderThan age: Duration) async throws -> SigningKeyRing {
        enum Next {
            case held(SigningKeyRing)
            case await(Task<SigningKeyRing, any Error>)
        }
        let next = state.withLock { state -> Next in
            if let ring = state.ring, ContinuousClock.now - state.loadedAt < age { return .held(ring) }
            if let loading = state.loading { return .await(loading) }
            let loading = startLoading()
            state.loading = loading
            return .await(loading)
        }
        switch next {
        case let .held(ring): return ring
        case let .await(task): return try await task.value
        }
    }

    /// A read of the keys that keeps what it read, or forgets that it ran when it failed; the
    /// caller records it as the read under way, in the same lock.
    private func startLoading() -> Task<SigningKeyRing, any Error> {
        let load = self.load
        return Task { [self] in
            do {
                let ring = try await load()
                self.state.withLock { state in
                    state.ring = ring
                    state.loadedAt = .now
                    state.loading = nil
                }
                return ring
            } catch {
                self.state.withLock { $0.loading = nil }
                throw error
            }
        }
    }
}

/// How the signing keys are read: at start-up straight off the pool, then (`replace`) through the
/// services' bounded store calls, which exist only once the keys were read.
final class SigningKeyLoader: Sendable {
    private let read: Mutex<@Sendable () async throws -> SigningKeyRing>

    init(_ read: @escaping @Sendable () async throws -> SigningKeyRing) {
        self.read = Mutex(read)
    }

    func replace(_ read: @escaping @Sendable () async throws -> SigningKeyRing) {
        self.read.withLock { $0 = read }
    }

    func load() async throws -> SigningKeyRing {
        let read = self.read.withLock { $0 }
        return try await read()
    }
}
