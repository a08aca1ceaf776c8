import Foundation
import GuestModeKit

extension PostgresTransaction {
    func assignment(of userID: String, to experiment: String) throws -> StoredAssignment? {
        try PostgresStore.storedAssignment(connection, userID: userID, experiment: experiment)
    }

    func insertAssignment(of userID: String, to experiment: String, variant: String, at time: Date) throws -> Bool {
        try connection.execute(
            """
            INSERT INTO experiment_assignments (user_id, experiment, variant, assigned_at) VALUES ($1, $2, $3, $4)
            ON CONFLICT (user_id, experiment) DO NOTHING
            """,
            [PostgresValue(userID), PostgresValue(experiment), PostgresValue(variant), PostgresValue(time)]
        ).changes > 0
    }
}
