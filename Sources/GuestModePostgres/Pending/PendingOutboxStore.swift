import Foundation
import GuestModeKit

// Pending: replaced by PostgresStore+OutboxStore.swift when the area is ported; never shipped.
extension PostgresStore: OutboxStore {
    public func outboxEntries() throws -> [OutboxEntry] {
        throw PostgresStore.pending("OutboxStore")
    }

    public func recordPushSuccess(userID: String, queuedAt: String) throws -> OutboxPushOutcome {
        throw PostgresStore.pending("OutboxStore")
    }

    public func recordPushFailure(userID: String, attempts: Int, error: String, nextAttemptAt: Date) throws {
        throw PostgresStore.pending("OutboxStore")
    }

    public func dropOutboxEntry(userID: String, queuedAt: String) throws -> Bool {
        throw PostgresStore.pending("OutboxStore")
    }
}
