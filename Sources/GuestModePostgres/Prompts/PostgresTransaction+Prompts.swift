import Foundation
import GuestModeKit

extension PostgresTransaction {
    /// In byte order of the stored times (`COLLATE "C"`), the order SQLite
    /// compares text in, whatever the database's collation.
    func promptHistory(of userID: String) throws -> [PromptHistoryEntry] {
        try connection.execute(
            "SELECT context, outcome, at FROM prompt_outcomes WHERE user_id = $1 ORDER BY at COLLATE \"C\", id",
            [PostgresValue(userID)]
        ).map { row in
            PromptHistoryEntry(
                context: try row.string("context"), outcome: try row.decode("outcome", as: PromptOutcome.self),
                at: try row.date("at"))
        }
    }

    func appendPromptOutcome(_ entry: PromptHistoryEntry, of userID: String) throws {
        try connection.execute(
            "INSERT INTO prompt_outcomes (user_id, context, outcome, at) VALUES ($1, $2, $3, $4)",
            [
                PostgresValue(userID), PostgresValue(entry.context), PostgresValue(entry.outcome.rawValue),
                PostgresValue(entry.at),
            ])
    }

    func setPromptState(_ state: PromptState, of userID: String) throws {
        try connection.execute(
            "UPDATE users SET prompt_state = $1 WHERE id = $2", [PostgresValue(state.rawValue), PostgresValue(userID)])
    }
}
