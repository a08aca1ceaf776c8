import Foundation
import GuestModeKit

// Pending: replaced by PostgresStore+UserStore.swift when the area is ported; never shipped.
extension PostgresStore: UserStore {
    public func createUser(_ user: User, credentials: StoredCredentials?) throws {
        throw PostgresStore.pending("UserStore")
    }

    public func user(id: String) throws -> User {
        throw PostgresStore.pending("UserStore")
    }

    public func users(state: UserState?, lastSeenBefore: Date?) throws -> [UserSummary] {
        throw PostgresStore.pending("UserStore")
    }

    public func userOverview(id: String) throws -> UserOverview {
        throw PostgresStore.pending("UserStore")
    }

    public func deleteUser(id: String) throws {
        throw PostgresStore.pending("UserStore")
    }

    public func purgeUsers(under policy: PurgePolicy, isDryRun: Bool) throws -> PurgeSelection {
        throw PostgresStore.pending("UserStore")
    }

    public func anonymousCredentials(username: String) throws -> StoredCredentials? {
        throw PostgresStore.pending("UserStore")
    }

    public func recordAnonymousSignIn(username: String, verifiedHash: String, upgradedHash: String?, now: Date) throws -> User? {
        throw PostgresStore.pending("UserStore")
    }
}
