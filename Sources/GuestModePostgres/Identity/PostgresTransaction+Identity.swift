import Foundation
import GuestModeKit

extension PostgresTransaction {
    func identityOwner(provider: String, subject: String) throws -> String? {
        try connection.execute(
            "SELECT user_id FROM identities WHERE provider = $1 AND subject = $2",
            [PostgresValue(provider), PostgresValue(subject)]
        ).first?.string("user_id")
    }

    func identities(of userID: String) throws -> [Identity] {
        try store.identities(of: userID, connection)
    }

    func identityOwners(_ keys: [IdentityKey]) throws -> [IdentityKey: String] {
        guard !keys.isEmpty else { return [:] }
        var owners: [IdentityKey: String] = [:]
        for row in try connection.execute(
            """
            SELECT i.provider, i.subject, i.user_id
            FROM identities i JOIN unnest($1::text[], $2::text[]) AS k (provider, subject)
              ON i.provider = k.provider AND i.subject = k.subject
            """,
            [PostgresValue.textArray(keys.map(\.provider)), PostgresValue.textArray(keys.map(\.subject))])
        {
            owners[IdentityKey(provider: try row.string("provider"), subject: try row.string("subject"))] =
                try row.string("user_id")
        }
        return owners
    }

    func identities(ofUsers userIDs: [String]) throws -> [String: [Identity]] {
        guard !userIDs.isEmpty else { return [:] }
        var identities: [String: [Identity]] = [:]
        for row in try connection.execute(
            "SELECT * FROM identities WHERE user_id = ANY($1::text[]) ORDER BY user_id, linked_at, provider",
            [PostgresValue.textArray(userIDs)])
        {
            identities[try row.string("user_id"), default: []].append(try store.identity(from: row))
        }
        return identities
    }

    /// The primary key settles a race as `insertIdentity(_:of:)`'s does, for each row.
    func insertIdentities(_ identities: [(identity: Identity, userID: String)]) throws -> [IdentityKey] {
        guard !identities.isEmpty else { return [] }
        let inserted = try connection.execute(
            """
            INSERT INTO identities (provider, subject, user_id, email, linked_at)
            SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[])
            ON CONFLICT (provider, subject) DO NOTHING
            RETURNING provider, subject
            """,
            [
                PostgresValue.textArray(identities.map(\.identity.provider)),
                PostgresValue.textArray(identities.map(\.identity.subject)),
                PostgresValue.textArray(identities.map(\.userID)),
                PostgresValue.textArray(identities.map(\.identity.email)),
                PostgresValue.textArray(identities.map { Timestamp.format($0.identity.linkedAt) }),
            ])
        let bound = Set(
            try inserted.map { IdentityKey(provider: try $0.string("provider"), subject: try $0.string("subject")) })
        return identities.map(\.identity.key).filter { !bound.contains($0) }
    }

    /// The primary key settles a race: this insert waits for a transaction
    /// that inserted the same identity and, if that one commits, inserts
    /// nothing.
    func insertIdentity(_ identity: Identity, of userID: String) throws -> Bool {
        try connection.execute(
            """
            INSERT INTO identities (provider, subject, user_id, email, linked_at) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (provider, subject) DO NOTHING
            """,
            [
                PostgresValue(identity.provider), PostgresValue(identity.subject), PostgresValue(userID),
                identity.email.map { PostgresValue($0) }, PostgresValue(identity.linkedAt),
            ]
        ).changes > 0
    }

    func deleteIdentity(of userID: String, provider: String) throws -> Bool {
        try connection.execute(
            "DELETE FROM identities WHERE user_id = $1 AND provider = $2",
            [PostgresValue(userID), PostgresValue(provider)]
        ).changes > 0
    }

    func setState(of userID: String, to state: UserState, linkedAt: Date?) throws {
        try connection.execute(
            "UPDATE users SET state = $1, linked_at = $2 WHERE id = $3",
            [PostgresValue(state.rawValue), linkedAt.map { PostgresValue($0) }, PostgresValue(userID)])
    }

    func deleteCredentials(of userID: String) throws -> Bool {
        try connection.execute("DELETE FROM credentials WHERE user_id = $1", [PostgresValue(userID)]).changes > 0
    }

    func upgradeLockTime(of userID: String) throws -> Date? {
        try connection.execute("SELECT started_at FROM upgrade_locks WHERE user_id = $1", [PostgresValue(userID)])
            .first?.date("started_at")
    }

    func takeUpgradeLock(of userID: String, provider: String, at time: Date) throws {
        try connection.execute(
            """
            INSERT INTO upgrade_locks (user_id, provider, started_at) VALUES ($1, $2, $3)
            ON CONFLICT (user_id) DO UPDATE SET provider = excluded.provider, started_at = excluded.started_at
            """,
            [PostgresValue(userID), PostgresValue(provider), PostgresValue(time)])
    }

    func releaseUpgradeLock(of userID: String) throws {
        try connection.execute("DELETE FROM upgrade_locks WHERE user_id = $1", [PostgresValue(userID)])
    }
}
