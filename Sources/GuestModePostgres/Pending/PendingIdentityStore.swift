import Foundation
import GuestModeKit

// Pending: replaced by PostgresStore+IdentityStore.swift when the area is ported; never shipped.
extension PostgresStore: IdentityStore {
    public func beginLink(_ request: LinkRequest, staleLocksBefore: Date, now: Date) throws -> LinkBeginning {
        throw PostgresStore.pending("IdentityStore")
    }

    public func completeLink(_ request: LinkRequest, profile: Profile, now: Date) throws -> LinkResult {
        throw PostgresStore.pending("IdentityStore")
    }

    public func abandonLink(user userID: String, provider: String, failureCode: String, now: Date) throws {
        throw PostgresStore.pending("IdentityStore")
    }

    public func unlink(user userID: String, provider: String, profile: Profile, now: Date) throws -> User {
        throw PostgresStore.pending("IdentityStore")
    }
}
