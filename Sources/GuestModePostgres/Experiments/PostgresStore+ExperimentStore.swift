import Foundation
import GuestModeKit

/// Assignments are sticky by the (user_id, experiment) primary key: two
/// machines assigning the same user at once both end up reading the one
/// row that won, so no user lock is needed.
extension PostgresStore: ExperimentStore {
    public func storedAssignment(userID: String, experiment: String) throws -> StoredAssignment? {
        try read { connection in
            try PostgresStore.storedAssignment(connection, userID: userID, experiment: experiment)
        }
    }

    public func storeAssignment(
        userID: String, experiment: String, variant: String, at: Date
    ) throws
        -> StoredAssignment
    {
        try write { connection in
            try PostgresStore.storeAssignment(
                connection, userID: userID, experiment: experiment, variant: variant, at: at)
        }
    }

    public func replaceAssignment(
        userID: String, experiment: String, variant: String, at: Date
    ) throws
        -> StoredAssignment
    {
        try write { connection in
            try connection.execute(
                """
                INSERT INTO experiment_assignments (user_id, experiment, variant, assigned_at) VALUES ($1, $2, $3, $4)
                ON CONFLICT (user_id, experiment)
                DO UPDATE SET variant = excluded.variant, assigned_at = excluded.assigned_at
                """,
                [PostgresValue(userID), PostgresValue(experiment), PostgresValue(variant), PostgresValue(at)])
            guard var stored = try PostgresStore.storedAssignment(connection, userID: userID, experiment: experiment)
            else { throw PostgresStore.assignmentLost(userID: userID, experiment: experiment) }
            stored.isNew = true
            return stored
        }
    }

    public func userExists(_ userID: String) throws -> Bool {
        try read { connection in
            try connection.execute(
                "SELECT EXISTS (SELECT 1 FROM users WHERE id = $1) AS present", [PostgresValue(userID)]
            ).first?.bool("present") ?? false
        }
    }

    /// Stores the assignment unless one exists, inside the caller's
    /// transaction. A concurrent first assignment makes the insert wait for
    /// it and then do nothing; the read that follows (a new snapshot at READ
    /// COMMITTED) returns the winner's row, so both callers agree.
    static func storeAssignment(
        _ connection: PostgresConnection, userID: String, experiment: String, variant: String, at: Date
    ) throws -> StoredAssignment {
        let inserted =
            try connection.execute(
                """
                INSERT INTO experiment_assignments (user_id, experiment, variant, assigned_at) VALUES ($1, $2, $3, $4)
                ON CONFLICT (user_id, experiment) DO NOTHING
                """,
                [PostgresValue(userID), PostgresValue(experiment), PostgresValue(variant), PostgresValue(at)]
            ).changes > 0
        guard var stored = try storedAssignment(connection, userID: userID, experiment: experiment) else {
            throw assignmentLost(userID: userID, experiment: experiment)
        }
        stored.isNew = inserted
        return stored
    }

    static func storedAssignment(
        _ connection: PostgresConnection, userID: String, experiment: String
    ) throws
        -> StoredAssignment?
    {
        try connection.execute(
            "SELECT variant, assigned_at FROM experiment_assignments WHERE user_id = $1 AND experiment = $2",
            [PostgresValue(userID), PostgresValue(experiment)]
        ).first.map { row in
            StoredAssignment(variant: try row.string("variant"), assignedAt: try row.date("assigned_at"), isNew: false)
        }
    }

    private static func assignmentLost(userID: String, experiment: String) -> GuestModeError {
        GuestModeError(
            .internalFailure, code: .assignmentLost, "the assignment of \(userID) to \(experiment) was not stored")
    }
}
