import Foundation
import GuestModeKit

extension PostgresTransaction {
    func insertServerKey(_ key: ServerKey, secretHash: String) throws {
        try connection.execute(
            "INSERT INTO server_keys (name, scope, secret_hash, created_at) VALUES ($1, $2, $3, $4)",
            [
                PostgresValue(key.name), PostgresValue(key.scope.rawValue), PostgresValue(secretHash),
                PostgresValue(key.createdAt),
            ])
        if let revokedAt = key.revokedAt { try markServerKeyRevoked(named: key.name, at: revokedAt) }
    }

    func serverKey(named name: String) throws -> ServerKey? {
        try connection.execute("SELECT * FROM server_keys WHERE name = $1", [PostgresValue(name)]).first.map(serverKey)
    }

    func serverKey(secretHash: String) throws -> ServerKey? {
        try connection.execute("SELECT * FROM server_keys WHERE secret_hash = $1", [PostgresValue(secretHash)]).first
            .map(serverKey)
    }

    func serverKeys() throws -> [ServerKey] {
        try connection.execute("SELECT * FROM server_keys ORDER BY name COLLATE \"C\"").map(serverKey)
    }

    func markServerKeyRevoked(named name: String, at time: Date) throws {
        try connection.execute(
            "UPDATE server_keys SET revoked_at = $1 WHERE name = $2", [PostgresValue(time), PostgresValue(name)])
    }

    /// Readers go on; another transaction adding or retiring a key waits
    /// for this one to end, so two servers starting on a store with no key
    /// make one between them.
    func lockSigningKeys() throws {
        try connection.execute("LOCK TABLE signing_keys IN EXCLUSIVE MODE")
    }

    func insertSigningKey(_ key: StoredSigningKey) throws {
        try connection.execute(
            """
            INSERT INTO signing_keys (kid, algorithm, public_key, sealed_private_key, sealed_by, created_at)
            VALUES ($1, $2, $3, $4, $5, $6)
            """,
            [
                PostgresValue(key.kid), PostgresValue(key.algorithm), PostgresValue(key.publicKey),
                PostgresValue(key.sealedPrivateKey), PostgresValue(key.sealedBy), PostgresValue(key.createdAt),
            ])
        if let retiredAt = key.retiredAt { try markSigningKeyRetired(kid: key.kid, at: retiredAt) }
    }

    func signingKeys() throws -> [StoredSigningKey] {
        try connection.execute("SELECT * FROM signing_keys ORDER BY id").map { row in
            StoredSigningKey(
                kid: try row.string("kid"), algorithm: try row.string("algorithm"),
                publicKey: try row.string("public_key"), sealedPrivateKey: try row.string("sealed_private_key"),
                sealedBy: try row.string("sealed_by"), createdAt: try row.date("created_at"),
                retiredAt: try row.optionalDate("retired_at"))
        }
    }

    func markSigningKeyRetired(kid: String, at time: Date) throws {
        try connection.execute(
            "UPDATE signing_keys SET retired_at = $1 WHERE kid = $2", [PostgresValue(time), PostgresValue(kid)])
    }

    func insertSessionFamily(_ family: String, user userID: String, at time: Date) throws {
        try connection.execute(
            "INSERT INTO session_families (id, user_id, created_at) VALUES ($1, $2, $3)",
            [PostgresValue(family), PostgresValue(userID), PostgresValue(time)])
    }

    func insertRefreshToken(hash: String, family: String, at time: Date) throws {
        try connection.execute(
            "INSERT INTO refresh_tokens (token_hash, family_id, issued_at) VALUES ($1, $2, $3)",
            [PostgresValue(hash), PostgresValue(family), PostgresValue(time)])
    }

    func refreshToken(hash: String) throws -> StoredRefreshToken? {
        try connection.execute(
            """
            SELECT t.family_id, t.used_at, f.user_id, f.revoked_at
            FROM refresh_tokens t JOIN session_families f ON f.id = t.family_id
            WHERE t.token_hash = $1
            """,
            [PostgresValue(hash)]
        ).first.map { row in
            StoredRefreshToken(
                family: try row.string("family_id"), userID: try row.string("user_id"),
                usedAt: try row.optionalDate("used_at"), familyRevokedAt: try row.optionalDate("revoked_at"))
        }
    }

    /// Two refreshes racing with one token: the second UPDATE waits for the
    /// first's row lock, then finds `used_at` set and changes nothing.
    func markRefreshTokenUsed(hash: String, at time: Date) throws -> Bool {
        try connection.execute(
            "UPDATE refresh_tokens SET used_at = $1 WHERE token_hash = $2 AND used_at IS NULL",
            [PostgresValue(time), PostgresValue(hash)]
        ).changes > 0
    }

    func revokeSessionFamily(_ family: String, at time: Date) throws {
        try connection.execute(
            "UPDATE session_families SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL",
            [PostgresValue(time), PostgresValue(family)])
    }

    func revokeSessionFamilies(of userID: String, at time: Date) throws -> Int {
        try connection.execute(
            "UPDATE session_families SET revoked_at = $1 WHERE user_id = $2 AND revoked_at IS NULL",
            [PostgresValue(time), PostgresValue(userID)]
        ).changes
    }

    func sessionFamilies(of userID: String) throws -> [SessionFamily] {
        // Times are ISO 8601 text, so max() under "C" is the latest; ids tie-break byte by byte.
        try connection.execute(
            """
            SELECT f.id, f.user_id, f.created_at, f.revoked_at,
                (SELECT max(t.used_at COLLATE "C") FROM refresh_tokens t WHERE t.family_id = f.id) AS last_used_at,
                (SELECT count(t.used_at) FROM refresh_tokens t WHERE t.family_id = f.id) AS refreshes
            FROM session_families f WHERE f.user_id = $1 ORDER BY f.created_at COLLATE "C", f.id COLLATE "C"
            """,
            [PostgresValue(userID)]
        ).map { row in
            SessionFamily(
                id: try row.string("id"), userID: try row.string("user_id"), createdAt: try row.date("created_at"),
                lastUsedAt: try row.optionalDate("last_used_at"), refreshes: try row.int("refreshes"),
                revokedAt: try row.optionalDate("revoked_at"))
        }
    }

    func keptResponse(principal: String, key: String) throws -> KeptResponse? {
        try connection.execute(
            "SELECT * FROM kept_responses WHERE principal = $1 AND key = $2",
            [PostgresValue(principal), PostgresValue(key)]
        ).first.map { row in
            KeptResponse(
                principal: try row.string("principal"), key: try row.string("key"),
                requestHash: try row.string("request_hash"), status: try row.int("status"),
                body: try row.string("body"),
                createdAt: try row.date("created_at"))
        }
    }

    func insertKeptResponse(_ response: KeptResponse) throws -> Bool {
        try connection.execute(
            """
            INSERT INTO kept_responses (principal, key, request_hash, status, body, created_at)
            VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (principal, key) DO NOTHING
            """,
            [
                PostgresValue(response.principal), PostgresValue(response.key), PostgresValue(response.requestHash),
                PostgresValue(response.status), PostgresValue(response.body), PostgresValue(response.createdAt),
            ]
        ).changes > 0
    }

    func settleKeptResponse(principal: String, key: String, status: Int, body: String) throws {
        try connection.execute(
            "UPDATE kept_responses SET status = $1, body = $2 WHERE principal = $3 AND key = $4",
            [PostgresValue(status), PostgresValue(body), PostgresValue(principal), PostgresValue(key)])
    }

    func updateSignInBucket(address: String, _ update: (SignInBucket?) throws -> SignInBucket) throws {
        // The row is locked from its read to its write; a first sign-in from an address inserts it, and one
        // that lost that race to another server's transaction locks the row that one made and goes on from it.
        if try lockedSignInBucket(address) == nil {
            let first = try update(nil)
            let inserted =
                try connection.execute(
                    """
                    INSERT INTO sign_in_buckets (address, tokens, updated_at) VALUES ($1, $2, $3)
                    ON CONFLICT (address) DO NOTHING
                    """,
                    [PostgresValue(address), PostgresValue(String(first.tokens)), PostgresValue(first.updatedAt)]
                ).changes > 0
            if inserted { return }
        }
        let next = try update(try lockedSignInBucket(address))
        try connection.execute(
            "UPDATE sign_in_buckets SET tokens = $2, updated_at = $3 WHERE address = $1",
            [PostgresValue(address), PostgresValue(String(next.tokens)), PostgresValue(next.updatedAt)])
    }

    func signInBucket(address: String) throws -> SignInBucket? {
        try connection.execute(
            "SELECT tokens, updated_at FROM sign_in_buckets WHERE address = $1", [PostgresValue(address)]
        ).first.map { row in SignInBucket(tokens: try row.double("tokens"), updatedAt: try row.date("updated_at")) }
    }

    private func lockedSignInBucket(_ address: String) throws -> SignInBucket? {
        try connection.execute(
            "SELECT tokens, updated_at FROM sign_in_buckets WHERE address = $1 FOR UPDATE", [PostgresValue(address)]
        ).first.map { row in SignInBucket(tokens: try row.double("tokens"), updatedAt: try row.date("updated_at")) }
    }

    func deleteSignInBuckets(updatedBefore time: Date) throws {
        try connection.execute(
            #"DELETE FROM sign_in_buckets WHERE updated_at COLLATE "C" < $1"#, [PostgresValue(time)])
    }

    private func serverKey(_ row: PostgresRow) throws -> ServerKey {
        ServerKey(
            name: try row.string("name"), scope: try row.decode("scope", as: ServerScope.self),
            createdAt: try row.date("created_at"), revokedAt: try row.optionalDate("revoked_at"))
    }
}
