import Foundation

@testable import GuestModeKit

/// Users and queued backups as other areas' suites plant and read them:
/// each helper runs the engine's own step or one primitive in one
/// transaction. What these steps decide is tested through the engine in
/// `UserStoreTests` and `OutboxStoreTests`.
extension TransactionalStore {
    /// Creates `user` as the engine does, with its id and times as given.
    func createUser(_ user: User, credentials: StoredCredentials?) throws {
        try write { transaction in try transaction.createUser(user, credentials: credentials) }
    }

    func user(id: String) throws -> User {
        try read { transaction in try transaction.requireUser(id) }
    }

    func userOverview(id: String) throws -> UserOverview {
        try read { transaction in try transaction.overview(of: id) }
    }

    func users(state: UserState?, lastSeenBefore: Date?) throws -> [UserSummary] {
        try read { transaction in try transaction.userSummaries(state: state, lastSeenBefore: lastSeenBefore) }
    }

    func anonymousCredentials(username: String) throws -> StoredCredentials? {
        try read { transaction in try transaction.credentials(username: username) }
    }

    func deleteUser(id: String) throws {
        try write { transaction in
            _ = try transaction.requireUser(id, locking: true)
            try transaction.deleteUser(id)
        }
    }

    func outboxEntries() throws -> [OutboxEntry] {
        try read { transaction in try transaction.outboxEntries() }
    }

    func recordPushSuccess(userID: String, queuedAt: Date) throws -> OutboxPushOutcome {
        try write { transaction in try transaction.settlePush(of: userID, queuedAt: queuedAt) }
    }
}
