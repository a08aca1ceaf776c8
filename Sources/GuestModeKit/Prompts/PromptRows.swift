import Foundation

/// The prompt rows of one transaction (see `StoreTransaction`).
public protocol PromptRows {
    /// The user's prompt outcomes, oldest first (by time, then insertion).
    func promptHistory(of userID: String) throws -> [PromptHistoryEntry]

    /// Appends one prompt outcome of the user.
    func appendPromptOutcome(_ entry: PromptHistoryEntry, of userID: String) throws

    /// Stores the user's prompt state.
    func setPromptState(_ state: PromptState, of userID: String) throws
}
