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
