import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteTransaction {
    func insertServerKey(_ key: ServerKey, secretHash: String) throws {
        try db.execute(
            sql: "INSERT INTO server_keys (name, scope, secret_hash, created_at, revoked_at) VALUES (?, ?, ?, ?, ?)",
            arguments: [
                key.name, key.scope.rawValue, secretHash, Timestamp.format(key.createdAt),
                key.revokedAt.map(Timestamp.format),
            ])
    }

    func serverKey(named name: String) throws -> ServerKey? {
        try readOne(db.statement("SELECT * FROM server_keys WHERE name = ?"), arguments: [name], serverKey)
    }

    func serverKey(secretHash: String) throws -> ServerKey? {
        try remembered("serverKey", secretHash, cost: { $0.map { 128 + $0.name.utf8.count } ?? 0 }) {
            try readOne(
                db.statement("SELECT * FROM server_keys WHERE secret_hash = ?"), arguments: [secretHash],
                serverKey)
        }
    }

    func serverKeys() throws -> [ServerKey] {
        try Row.fetchAll(db.statement("SELECT * FROM server_keys ORDER BY name")).map(serverKey)
    }

    func markServerKeyRevoked(named name: String, at time: Date) throws {
        try db.execute(
            sql: "UPDATE server_keys SET revoked_at = ? WHERE name = ?", arguments: [Timestamp.format(time), name])
    }

    /// The one writer connection already serializes every write.
    func lockSigningKeys() throws {}

    func insertSigningKey(_ key: StoredSigningKey) throws {
        try db.execute(
            sql: """
                INSERT INTO signing_keys (kid, algorithm, public_key, sealed_private_key, sealed_by, created_at, retired_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
            arguments: [
                key.kid, key.algorithm, key.publicKey, key.sealedPrivateKey, key.sealedBy,
                Timestamp.format(key.createdAt), key.retiredAt.map(Timestamp.format),
            ])
    }

    func signingKeys() throws -> [StoredSigningKey] {
        try Row.fetchAll(db.statement("SELECT * FROM signing_keys ORDER BY id")).map { row in
            StoredSigningKey(
                kid: try row.decode(forColumn: "kid"), algorithm: try row.decode(forColumn: "algorithm"),
                publicKey: try row.decode(forColumn: "public_key"),
                sealedPrivateKey: try row.decode(forColumn: "sealed_private_key"),
                sealedBy: try row.decode(forColumn: "sealed_by"), createdAt: try row.time("created_at"),
                retiredAt: try row.optionalTime("retired_at"))
        }
    }

    func markSigningKeyRetired(kid: String, at time: Date) throws {
        try db.execute(
            sql: "UPDATE signing_keys SET retired_at = ? WHERE kid = ?", arguments: [Timestamp.format(time), kid])
    }

    func insertSessionFamily(_ family: String, user userID: String, at time: Date) throws {
        try db.execute(
            sql: "INSERT INTO session_families (id, user_id, created_at) VALUES (?, ?, ?)",
            arguments: [family, userID, Timestamp.format(time)])
    }

    func insertRefreshToken(hash: String, family: String, at time: Date) throws {
        try db.execute(
            sql: "INSERT INTO refresh_tokens (token_hash, family_id, issued_at) VALUES (?, ?, ?)",
            arguments: [hash, family, Timestamp.format(time)])
    }

    func refreshToken(hash: String) throws -> StoredRefreshToken? {
        try Row.fetchOne(
            db,
            sql: """
                SELECT t.family_id, t.used_at, f.user_id, f.revoked_at
                FROM refresh_tokens t JOIN session_families f ON f.id = t.family_id
                WHERE t.token_hash = ?
                """,
            arguments: [hash]
        ).map { row in
            StoredRefreshToken(
                family: try row.decode(forColumn: "family_id"), userID: try row.decode(forColumn: "user_id"),
                usedAt: try row.optionalTime("used_at"), familyRevokedAt: try row.optionalTime("revoked_at"))
        }
    }

    func markRefreshTokenUsed(hash: String, at time: Date) throws -> Bool {
        try db.execute(
            sql: "UPDATE refresh_tokens SET used_at = ? WHERE token_hash = ? AND used_at IS NULL",
            arguments: [Timestamp.format(time), hash])
        return db.changesCount > 0
    }

    func revokeSessionFamily(_ family: String, at time: Date) throws {
        try db.execute(
            sql: "UPDATE session_families SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
            arguments: [Timestamp.format(time), family])
    }

    func revokeSessionFamilies(of userID: String, at time: Date) throws -> Int {
        try db.execute(
            sql: "UPDATE session_families SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL",
            arguments: [Timestamp.format(time), userID])
        return db.changesCount
    }

    func sessionFamilies(of userID: String) throws -> [SessionFamily] {
        try Row.fetchAll(
            db,
            sql: """
                SELECT f.id, f.user_id, f.created_at, f.revoked_at,
                    (SELECT MAX(t.used_at) FROM refresh_tokens t WHERE t.family_id = f.id) AS last_used_at,
                    (SELECT COUNT(t.used_at) FROM refresh_tokens t WHERE t.family_id = f.id) AS refreshes
                FROM session_families f WHERE f.user_id = ? ORDER BY f.created_at, f.id
                """,
            arguments: [userID]
        ).map { row in
            SessionFamily(
                id: try row.decode(forColumn: "id"), userID: try row.decode(forColumn: "user_id"),
                createdAt: try row.time("created_at"), lastUsedAt: try row.optionalTime("last_used_at"),
                refreshes: try row.decode(forColumn: "refreshes"), revokedAt: try row.optionalTime("revoked_at"))
        }
    }

    func keptResponse(principal: String, key: String) throws -> KeptResponse? {
        try Row.fetchOne(
            db.statement("SELECT * FROM kept_responses WHERE principal = ? AND key = ?"),
            arguments: [principal, key]
        ).map { row in
            KeptResponse(
                principal: try row.decode(forColumn: "principal"), key: try row.decode(forColumn: "key"),
                requestHash: try row.decode(forColumn: "request_hash"), status: try row.decode(forColumn: "status"),
                body: try row.decode(forColumn: "body"), createdAt: try row.time("created_at"))
        }
    }

    func insertKeptResponse(_ response: KeptResponse) throws -> Bool {
        try db.statement(
            """
            INSERT INTO kept_responses (principal, key, request_hash, status, body, created_at)
            VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (principal, key) DO NOTHING
            """
        ).execute(arguments: [
            response.principal, response.key, response.requestHash, response.status, response.body,
            Timestamp.format(response.createdAt),
        ])
        return db.changesCount > 0
    }

    func settleKeptResponse(principal: String, key: String, status: Int, body: String) throws {
        try db.statement("UPDATE kept_responses SET status = ?, body = ? WHERE principal = ? AND key = ?")
            .execute(arguments: [status, body, principal, key])
    }

    func updateSignInBucket(address: String, _ update: (SignInBucket?) throws -> SignInBucket) throws {
        // The one writer connection serializes every write: nothing else changes the row meanwhile.
        let next = try update(try signInBucket(address: address))
        try db.statement(
            """
            INSERT INTO sign_in_buckets (address, tokens, updated_at) VALUES (?, ?, ?)
            ON CONFLICT (address) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at
            """
        ).execute(arguments: [address, next.tokens, Timestamp.format(next.updatedAt)])
    }

    func signInBucket(address: String) throws -> SignInBucket? {
        try Row.fetchOne(
            db.statement("SELECT tokens, updated_at FROM sign_in_buckets WHERE address = ?"),
            arguments: [address]
        ).map { row in
            SignInBucket(tokens: try row.decode(forColumn: "tokens"), updatedAt: try row.time("updated_at"))
        }
    }

    func deleteSignInBuckets(updatedBefore time: Date) throws {
        try db.statement("DELETE FROM sign_in_buckets WHERE updated_at < ?")
            .execute(arguments: [Timestamp.format(time)])
    }

    private func serverKey(_ row: any StoredRow) throws -> ServerKey {
        ServerKey(
            name: try row.decode(forColumn: "name"), scope: try row.decode("scope", as: ServerScope.self),
            createdAt: try row.time("created_at"), revokedAt: try row.optionalTime("revoked_at"))
    }
}
