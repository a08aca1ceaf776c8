import Foundation
import GuestModeKit
import GuestModeRemote
import JWTKit

/// One provider whose OpenID Connect ID tokens may link identities
/// (guestmode-serve(1), PROVIDER=ISSUER,AUDIENCE,JWKS): the issuer its
/// tokens must name, the audience (the app's client id) they must be for,
/// and where its signing keys are, a JWKS file or an https URL.
package struct IdentityProviderSetting: Sendable, Equatable {
    /// Where a provider's key set is read from.
    package enum KeySetSource: Sendable, Equatable {
        /// A JWKS file, read once at startup.
        case file(String)
        /// A JWKS URL (https, or http on loopback), fetched when first needed and kept.
        case url(RemoteURL)
    }

    package var provider: String
    package var issuer: String
    package var audience: String
    package var keySet: KeySetSource

    /// Parses `PROVIDER=ISSUER,AUDIENCE,JWKS`; the JWKS, last, may hold commas.
    package init(parsing text: String) throws {
        let usage =
            "the identity provider '\(text)' must be PROVIDER=ISSUER,AUDIENCE,JWKS, e.g. apple=https://appleid.apple.com,com.example.app,https://appleid.apple.com/auth/keys"
        guard let equals = text.firstIndex(of: "=") else {
            throw GuestModeError(.invalidIdentityProvider, usage)
        }
        provider = String(text[..<equals])
        let parts = text[text.index(after: equals)...].split(
            separator: ",", maxSplits: 2, omittingEmptySubsequences: false
        )
        .map { $0.trimmingCharacters(in: .whitespaces) }
        guard !provider.isEmpty, parts.count == 3, !parts.contains(where: \.isEmpty) else {
            throw GuestModeError(.invalidIdentityProvider, usage)
        }
        issuer = parts[0]
        audience = parts[1]
        let location = parts[2]
        if location.lowercased().hasPrefix("https://") || location.lowercased().hasPrefix("http://") {
            keySet = .url(try RemoteURL(location, what: "the JWKS URL of provider '\(provider)'"))
        } else {
            keySet = .file(location)
        }
    }
}

/// The claims of an OpenID Connect ID token guestmode reads. Expiry is
/// checked against the request's clock after verification, not here.
struct IDTokenClaims: JWTIdentityToken {
    var iss: IssuerClaim
    var sub: SubjectClaim
    var aud: AudienceClaim
    var exp: ExpirationClaim
    var nonce: String?
    var email: String?

    var audience: AudienceClaim { aud }

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// An identity an ID token vouched for: the provider's subject and, when
/// the token has one, the e-mail address.
struct VerifiedIdentity: Sendable {
    var subject: String
    var email: String?
}

/// Verifies providers' ID tokens with jwt-kit against each provider's key
/// set. The signature is checked with the key the key set names for the
/// token's `kid`, by that key's algorithm (RS256 or ES256) only: `alg: none`,
/// HS256 and any algorithm other than the key's are refused before jwt-kit
/// looks at the signature. Then the audience, the issuer, the expiry (with
/// `leeway` for clocks slightly apart) and, when the request gives one, the
/// nonce. Every refusal is 401 with a code saying which check failed; no
/// message ever holds the token.
final class IdentityTokens: Sendable {
    /// How far past its `exp` a token is still taken: clocks of two machines differ a little.
    static let leeway: TimeInterval = 60

    private let providers: [String: ProviderKeys]

    /// Reads every file key set now (a bad one stops the server before it
    /// listens); URL key sets are fetched when first needed.
    init(settings: [IdentityProviderSetting], transport: HTTPTransport) async throws {
        var providers: [String: ProviderKeys] = [:]
        for setting in settings {
            guard providers[setting.provider] == nil else {
                throw GuestModeError(
                    .invalidIdentityProvider,
                    "provider '\(setting.provider)' is configured twice; give each provider once")
            }
            providers[setting.provider] = try await ProviderKeys(setting: setting, transport: transport)
        }
        self.providers = providers
    }

    /// The identity `token` vouches for at `provider`, or the refusal of the first check it fails.
    func verify(_ token: String, provider: String, nonce: String?, now: Date) async throws -> VerifiedIdentity {
        guard let keys = providers[provider] else {
            throw GuestModeError(
                .identityProviderNotConfigured,
                "the server takes no ID tokens from provider '\(provider)'; it takes them from \(providers.isEmpty ? "no provider" : providers.keys.sorted().map { "'\($0)'" }.joined(separator: ", "))"
            )
        }
        let setting = keys.setting
        let header: JWTHeader
        do {
            header = try DefaultJWTParser().parse([UInt8](token.utf8), as: IDTokenClaims.self).header
        } catch {
            throw Self.invalid("the ID token is not a JWT with an issuer, a subject, an audience and an expiry")
        }
        let algorithm = header.alg ?? "none"
        let kid = header.kid
        let (collection, keyAlgorithm) = try await keys.keys(for: kid)
        guard let keyAlgorithm else {
            throw Self.invalid("the ID token is signed with a key that provider '\(provider)''s key set does not hold")
        }
        guard algorithm == keyAlgorithm else {
            // The header is the sender's text: named back only when it looks like an algorithm's name.
            let named =
                algorithm.count <= 16 && algorithm.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
                ? algorithm : "an unknown algorithm"
            throw Self.invalid(
                "the ID token is signed with \(named); provider '\(provider)''s key is \(keyAlgorithm), the only algorithm taken with it"
            )
        }
        let claims: IDTokenClaims
        do {
            claims = try await collection.verify(token, as: IDTokenClaims.self, expectedAudience: setting.audience)
        } catch let error as JWTError
            where error.errorType == .claimVerificationFailure && error.failedClaim is AudienceClaim
        {
            throw GuestModeError(
                .idTokenAudienceMismatch,
                "the ID token is not for this app: its audience is not '\(setting.audience)'")
        } catch {
            throw Self.invalid("the ID token's signature does not verify with provider '\(provider)''s key")
        }
        guard claims.iss.value == setting.issuer else {
            throw GuestModeError(
                .idTokenIssuerMismatch,
                "the ID token was not issued by '\(setting.issuer)', provider '\(provider)''s issuer")
        }
        guard claims.exp.value.addingTimeInterval(Self.leeway) > now else {
            throw GuestModeError(
                .idTokenExpired,
                "the ID token expired at \(Timestamp.format(claims.exp.value)); sign in with the provider again for a fresh one"
            )
        }
        if let nonce, claims.nonce != nonce {
            throw GuestModeError(
                .idTokenNonceMismatch,
                "the ID token's nonce is not the one this request gives: it was issued for another sign-in")
        }
        guard !claims.sub.value.isEmpty else { throw Self.invalid("the ID token's subject is empty") }
        return VerifiedIdentity(subject: claims.sub.value, email: claims.email)
    }

    private static func invalid(_ message: String) -> GuestModeError {
        GuestModeError(.idTokenInvalid, message)
    }
}

/// One provider's signing keys: read from a file once, or fetched from a
/// URL and kept for `lifetime`, fetched again sooner when a token names a
/// key the set does not hold (the provider rotated its keys), at most once a
/// minute.
actor ProviderKeys {
    nonisolated let setting: IdentityProviderSetting
    private let transport: HTTPTransport
    private var collection = JWTKeyCollection()
    /// Each key's algorithm by its `kid`.
    private var algorithms: [String: String] = [:]
    private var fetchedAt: ContinuousClock.Instant?
    private static let lifetime = Duration.seconds(3600)
    private static let refetchInterval = Duration.seconds(60)

    init(setting: IdentityProviderSetting, transport: HTTPTransport) async throws {
        self.setting = setting
        self.transport = transport
        if case let .file(path) = setting.keySet {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw GuestModeError(
                    .invalidJWKS, "cannot read the JWKS file '\(path)' of provider '\(setting.provider)'")
            }
            (collection, algorithms) = try await Self.load(
                data, what: "the JWKS file '\(path)' of provider '\(setting.provider)'")
        }
    }

    /// The key collection and the algorithm of the key `kid` names (the one
    /// key when the token names none and the set holds one), or nil for no such key.
    func keys(for kid: String?) async throws -> (JWTKeyCollection, String?) {
        if case let .url(url) = setting.keySet {
            let age = fetchedAt.map { ContinuousClock.now - $0 }
            let unknown = kid.map { algorithms[$0] == nil } ?? false
            if age == nil || age! > Self.lifetime || (unknown && age! > Self.refetchInterval) {
                try await fetch(url)
            }
        }
        if let kid { return (collection, algorithms[kid]) }
        return (collection, algorithms.count == 1 ? algorithms.values.first : nil)
    }

    private func fetch(_ url: RemoteURL) async throws {
        let what = "the JWKS URL of provider '\(setting.provider)' (\(url))"
        let answer = try await transport.send("GET", to: url, headers: [("Accept", "application/json")])
        guard answer.isSuccess, !answer.isBodyCut else {
            throw GuestModeError(
                .destinationUnavailable,
                "\(what) answered \(answer.isBodyCut ? "more than a key set holds" : "HTTP \(answer.status)"); ID tokens of that provider cannot be checked now, try again later"
            )
        }
        do {
            (collection, algorithms) = try await Self.load(Data(answer.body), what: what)
        } catch let error as GuestModeError {
            throw GuestModeError(.destinationUnavailable, "\(error.message); try again later")
        }
        fetchedAt = .now
    }

    /// The RS256 and ES256 (P-256) signing keys of a JWKS document, with
    /// their algorithms: a key's `alg` when it has one, else its type's.
    /// Keys of other algorithms, for encryption, or without a `kid` are left out.
    private static func load(_ data: Data, what: String) async throws -> (JWTKeyCollection, [String: String]) {
        guard let jwks = try? JSONDecoder().decode(JWKS.self, from: data) else {
            throw GuestModeError(.invalidJWKS, "\(what) is not a JSON Web Key Set ({\"keys\": [...]})")
        }
        let notForSigning = keysNotForSigning(data)
        let usable: [JWK] = jwks.keys.compactMap { jwk in
            guard let kid = jwk.keyIdentifier?.string, !notForSigning.contains(kid) else { return nil }
            var key = jwk
            switch (jwk.keyType, jwk.algorithm) {
            case (.rsa, .rs256?), (.rsa, nil): key.algorithm = .rs256
            case (.ecdsa, .es256?) where jwk.curve == .ecdsa(.p256): key.algorithm = .es256
            case (.ecdsa, nil) where jwk.curve == .ecdsa(.p256): key.algorithm = .es256
            default: return nil
            }
            return key
        }
        guard !usable.isEmpty else {
            throw GuestModeError(.invalidJWKS, "\(what) holds no RS256 or ES256 signing key with a kid")
        }
        let collection = JWTKeyCollection()
        var algorithms: [String: String] = [:]
        for key in usable {
            guard let kid = key.keyIdentifier?.string, let algorithm = key.algorithm else { continue }
            do {
                try await collection.add(jwk: key)
            } catch {
                throw GuestModeError(
                    .invalidJWKS, "\(what) holds a key '\(kid)' that is not a valid \(algorithm.rawValue) key")
            }
            algorithms[kid] = algorithm.rawValue
        }
        return (collection, algorithms)
    }

    /// The kids of keys their set says are not for verifying signatures
    /// (RFC 7517: `use` other than `sig`, or `key_ops` without `verify`).
    /// jwt-kit's `JWK` does not read either member, so they are read here.
    private static func keysNotForSigning(_ data: Data) -> Set<String> {
        guard let document = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let keys = document["keys"] as? [[String: Any]]
        else { return [] }
        var kids: Set<String> = []
        for key in keys {
            guard let kid = key["kid"] as? String else { continue }
            let use = key["use"]
            let operations = key["key_ops"]
            let isForSigning =
                (use == nil || use as? String == "sig")
                && (operations == nil || (operations as? [String])?.contains("verify") == true)
            if !isForSigning { kids.insert(kid) }
        }
        return kids
    }
}
