import Foundation

/// One row of a user's event log as `user events` shows it: tracked
/// actions and the system events guestmode appends itself (meter warnings,
/// `account_upgrade_started/succeeded/failed` with their provider and
/// failure code, unlinks, prompt outcomes).
public struct LoggedEvent: Codable, Sendable, Equatable {
    /// The event's id, increasing in the order events were stored.
    public var id: Int64
    /// The user the event belongs to.
    public var userID: String
    /// The action, such as `recipe_viewed`.
    public var action: String
    /// When it happened.
    public var at: Date
    /// How many times it happened at once.
    public var count: Int
    /// The key the event was tracked with, if any.
    public var idempotencyKey: String?
    /// The event's properties.
    public var properties: [String: EventProperty]

    package init(
        id: Int64, userID: String, action: String, at: Date, count: Int, idempotencyKey: String?,
        properties: [String: EventProperty]
    ) {
        self.id = id
        self.userID = userID
        self.action = action
        self.at = at
        self.count = count
        self.idempotencyKey = idempotencyKey
        self.properties = properties
    }

    /// Properties as the store keeps them (a JSON object, or nothing), numbers
    /// as they were written. Text that is not such an object, of strings and
    /// numbers, reads as no properties rather than failing the whole listing.
    package static func decodeProperties(_ text: String?) -> [String: EventProperty] {
        guard let text, case .object(let members)? = try? StrictJSON.parse(text) else { return [:] }
        var properties: [String: EventProperty] = [:]
        for (name, value) in members {
            switch value {
            case .string(let text): properties[name] = .string(text)
            case .number(let text): properties[name] = .number(text)
            default: return [:]
            }
        }
        return properties
    }
}

/// Which events `GuestMode.events(user:matching:)` returns.
public struct EventQuery: Sendable, Equatable {
    /// Only this action.
    public var action: String?
    /// Only events at or after this time.
    public var since: Date?
    /// Only the latest this many (still listed oldest first).
    public var limit: Int?

    /// Every event, or only one action's, from a time on, up to a number of events.
    public init(action: String? = nil, since: Date? = nil, limit: Int? = nil) {
        self.action = action
        self.since = since
        self.limit = limit
    }

    /// The largest `limit` accepted, of events and of records alike.
    public static let largestLimit = 1_000_000

    /// Refuses a listing's limit outside 1 to `largestLimit` (`invalid_limit`); nil is no limit.
    static func check(limit: Int?) throws {
        guard let limit, !(1...largestLimit).contains(limit) else { return }
        throw GuestModeError(.invalidLimit, "the limit must be between 1 and \(largestLimit), not \(limit)")
    }
}

extension GuestMode {
    /// The user's event log, oldest first, filtered by `query`.
    ///
    /// ```swift
    /// let recent = try engine.events(user: guest.id, matching: EventQuery(action: "recipe_viewed", limit: 10))
    /// ```
    public func events(user userID: String, matching query: EventQuery) throws -> [LoggedEvent] {
        try TextRule.check(userID, what: "the user id")
        try EventQuery.check(limit: query.limit)
        return try store.read { transaction in
            _ = try transaction.requireUser(userID)
            return try transaction.events(of: userID, action: query.action, since: query.since, limit: query.limit)
        }
    }
}

extension EventProperty {
    /// The value as written: the text of a string, the digits of a number.
    public var text: String {
        switch self {
        case .string(let text), .number(let text): text
        }
    }
}
