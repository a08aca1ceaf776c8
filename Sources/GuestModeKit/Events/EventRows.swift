import Foundation

/// The event and counter rows of one transaction (see `StoreTransaction`).
public protocol EventRows {
    /// Appends one event row; `properties` is the stored JSON text.
    func appendEvent(user userID: String, action: String, at time: Date, count: Int, properties: String) throws

    /// Adds `count` to the user's counter of `action`, creating it at
    /// `count`. A total that would pass `Bounds.maximumCounterTotal`, or a
    /// stored total that is not a count, throws `counter_overflow` and
    /// changes nothing.
    func addToCounter(user userID: String, action: String, count: Int) throws

    /// The user's counters, by action.
    func counters(of userID: String) throws -> [String: Int]
}

extension StoreTransaction {
    /// Records what guestmode itself did (an upgrade, a warning, a prompt
    /// outcome) as an event that counts like any other; never a token.
    func appendSystemEvent(user userID: String, action: String, properties: [String: String], at time: Date) throws {
        try appendEvent(
            user: userID, action: action, at: time, count: 1, properties: EventLog.encodeProperties(properties))
        try addToCounter(user: userID, action: action, count: 1)
    }
}
