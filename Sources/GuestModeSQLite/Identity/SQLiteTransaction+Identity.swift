import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteTransaction {
    func identityOwner(provider: String, subject: String) throws -> String? {
        try String.fetchOne(
            db.statement("SELECT user_id FROM identities WHERE provider = ? AND subject = ?"),
            arguments: [provider, subject])
    }

    func identities(of userID: String) throws -> [Identity] {
        try store.identities(of: userID, db)
    }

    func insertIdentity(_ identity: Identity, of userID: String) throws -> Bool {
        try db.execute(
            sql: """
                INSERT INTO identities (provider, subject, user_id, email, linked_at) VALUES (?, ?, ?, ?, ?)
                ON CONFLICT(provider, subject) DO NOTHING
                """,
            arguments: [
                identity.provider, identity.subject, userID, identity.email, Timestamp.format(identity.linkedAt),
            ])
        return db.changesCount > 0
    }

    func deleteIdentity(of userID: String, provider: String) throws -> Bool {
        try db.execute(
            sql: "DELETE FROM identities WHERE user_id = ? AND provider = ?", arguments: [userID, provider])
        return db.changesCount > 0
    }

    func setState(of userID: String, to state: UserState, linkedAt: Date?) throws {
        try db.execute(
            sql: "UPDATE users SET state = ?, linked_at = ? WHERE id = ?",
            arguments: [state.rawValue, linkedAt.map(Timestamp.format), userID])
    }

    func deleteCredentials(of userID: String) throws -> Bool {
        try db.execute(sql: "DELETE FROM credentials WHERE user_id = ?", arguments: [userID])
        return db.changesCount > 0
    }

    func upgradeLockTime(of userID: String) throws -> Date? {
        try StoredTime.fetchOne(
            db.statement("SELECT started_at FROM upgrade_locks WHERE user_id = ?"), arguments: [userID]
        )?.date
    }

    func takeUpgradeLock(of userID: String, provider: String, at time: Date) throws {
        try db.execute(
            sql: """
                INSERT INTO upgrade_locks (user_id, provider, started_at) VALUES (?, ?, ?)
                ON CONFLICT(user_id) DO UPDATE SET provider = excluded.provider, started_at = excluded.started_at
                """,
            arguments: [userID, provider, Timestamp.format(time)])
    }

    func releaseUpgradeLock(of userID: String) throws {
        try db.execute(sql: "DELETE FROM upgrade_locks WHERE user_id = ?", arguments: [userID])
    }
}
