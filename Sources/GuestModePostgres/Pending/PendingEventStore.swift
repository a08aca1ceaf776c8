import Foundation
import GuestModeKit

// Pending: replaced by PostgresStore+EventStore.swift when the area is ported; never shipped.
extension PostgresStore: EventStore {
    public func trackEvent(_ event: TrackedEvent, profile: Profile, now: Date) throws -> TrackResult {
        throw PostgresStore.pending("EventStore")
    }

    public func applyEvents(_ events: [TrackedEvent], creatingUsers: Bool, profile: Profile, now: Date) throws -> EventBatchResult {
        throw PostgresStore.pending("EventStore")
    }

    public func counters(of userID: String) throws -> [String: Int] {
        throw PostgresStore.pending("EventStore")
    }

    public func containsUser(_ userID: String) throws -> Bool {
        throw PostgresStore.pending("EventStore")
    }
}
