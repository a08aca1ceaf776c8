import Foundation
internal import GRDB
import GuestModeKit

// Cached statements: a replay runs these once per event.
extension SQLiteTransaction {
    func promptHistory(of userID: String) throws -> [PromptHistoryEntry] {
        try Row.fetchAll(
            db.cachedStatement(
                sql: "SELECT context, outcome, at FROM prompt_outcomes WHERE user_id = ? ORDER BY at, id"),
            arguments: [userID]
        ).map { row in
            PromptHistoryEntry(
                context: try row.decode(forColumn: "context"),
                outcome: try row.decode("outcome", as: PromptOutcome.self), at: try row.time("at"))
        }
    }

    func appendPromptOutcome(_ entry: PromptHistoryEntry, of userID: String) throws {
        try db.cachedStatement(sql: "INSERT INTO prompt_outcomes (user_id, context, outcome, at) VALUES (?, ?, ?, ?)")
            .execute(arguments: [userID, entry.context, entry.outcome.rawValue, Timestamp.format(entry.at)])
    }

    func setPromptState(_ state: PromptState, of userID: String) throws {
        try db.cachedStatement(sql: "UPDATE users SET prompt_state = ? WHERE id = ?")
            .execute(arguments: [state.rawValue, userID])
    }
}
