import Foundation
import GuestModeKit

/// Assignments are sticky by the (user_id, experiment) primary key.
extension PostgresTransaction {
    func assignment(of userID: String, experiment: String) throws -> StoredAssignment? {
        try connection.execute(
            "SELECT variant, assigned_at FROM experiment_assignments WHERE user_id = $1 AND experiment = $2",
            [PostgresValue(userID), PostgresValue(experiment)]
        ).first.map { row in
            StoredAssignment(variant: try row.string("variant"), assignedAt: try row.date("assigned_at"), isNew: false)
        }
    }

    /// A concurrent first assignment makes the insert wait for it and then
    /// do nothing; a read after it (a new snapshot at READ COMMITTED) sees
    /// the winner's row.
    func addAssignment(of userID: String, experiment: String, variant: String, at time: Date) throws -> Bool {
        try connection.execute(
            """
            INSERT INTO experiment_assignments (user_id, experiment, variant, assigned_at) VALUES ($1, $2, $3, $4)
            ON CONFLICT (user_id, experiment) DO NOTHING
            """,
            [PostgresValue(userID), PostgresValue(experiment), PostgresValue(variant), PostgresValue(time)]
        ).changes > 0
    }

    func upsertAssignment(of userID: String, experiment: String, variant: String, at time: Date) throws {
        try connection.execute(
            """
            INSERT INTO experiment_assignments (user_id, experiment, variant, assigned_at) VALUES ($1, $2, $3, $4)
            ON CONFLICT (user_id, experiment)
            DO UPDATE SET variant = excluded.variant, assigned_at = excluded.assigned_at
            """,
            [PostgresValue(userID), PostgresValue(experiment), PostgresValue(variant), PostgresValue(time)])
    }
}
