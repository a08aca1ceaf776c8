import Foundation
import GuestModeKit

// Pending: replaced by PostgresStore+PromptStore.swift when the area is ported; never shipped.
extension PostgresStore: PromptStore {
    public func promptFacts(userID: String) throws -> PromptFacts? {
        throw PostgresStore.pending("PromptStore")
    }

    public func recordPromptOutcome(_ entry: PromptHistoryEntry, userID: String) throws -> PromptState? {
        throw PostgresStore.pending("PromptStore")
    }

    public func recordPromptOutcomes(_ records: [PromptRecord]) throws {
        throw PostgresStore.pending("PromptStore")
    }
}
