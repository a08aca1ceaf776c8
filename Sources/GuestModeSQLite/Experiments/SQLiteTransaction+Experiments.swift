import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteTransaction {
    func assignment(of userID: String, experiment: String) throws -> StoredAssignment? {
        guard
            let row = try Row.fetchOne(
                db.statement(
                    "SELECT variant, assigned_at FROM experiment_assignments WHERE user_id = ? AND experiment = ?"),
                arguments: [userID, experiment])
        else { return nil }
        return StoredAssignment(
            variant: try row.decode(forColumn: "variant"), assignedAt: try row.time("assigned_at"), isNew: false)
    }

    func addAssignment(of userID: String, experiment: String, variant: String, at time: Date) throws -> Bool {
        try db.statement(
            """
            INSERT INTO experiment_assignments (user_id, experiment, variant, assigned_at) VALUES (?, ?, ?, ?)
            ON CONFLICT (user_id, experiment) DO NOTHING
            """
        ).execute(arguments: [userID, experiment, variant, Timestamp.format(time)])
        return db.changesCount > 0
    }

    func upsertAssignment(of userID: String, experiment: String, variant: String, at time: Date) throws {
        try db.execute(
            sql: """
                INSERT INTO experiment_assignments (user_id, experiment, variant, assigned_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (user_id, experiment)
                DO UPDATE SET variant = excluded.variant, assigned_at = excluded.assigned_at
                """,
            arguments: [userID, experiment, variant, Timestamp.format(time)])
    }
}
