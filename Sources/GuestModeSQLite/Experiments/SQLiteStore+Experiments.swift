import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteStore: ExperimentStore {
    public func storedAssignment(userID: String, experiment: String) throws -> StoredAssignment? {
        try read { db in try SQLiteStore.storedAssignment(db, userID: userID, experiment: experiment) }
    }

    public func storeAssignment(
        userID: String, experiment: String, variant: String, at: Date
    ) throws -> StoredAssignment {
        try write { db in
            try SQLiteStore.storeAssignment(db, userID: userID, experiment: experiment, variant: variant, at: at)
        }
    }

    public func replaceAssignment(
        userID: String, experiment: String, variant: String, at: Date
    ) throws
        -> StoredAssignment
    {
        try write { db in
            try db.execute(
                sql: """
                    INSERT INTO experiment_assignments (user_id, experiment, variant, assigned_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (user_id, experiment)
                    DO UPDATE SET variant = excluded.variant, assigned_at = excluded.assigned_at
                    """,
                arguments: [userID, experiment, variant, Timestamp.format(at)])
            guard var stored = try SQLiteStore.storedAssignment(db, userID: userID, experiment: experiment) else {
                throw GuestModeError(
                    .internalFailure, code: .assignmentLost,
                    "the assignment of \(userID) to \(experiment) was not stored")
            }
            stored.isNew = true
            return stored
        }
    }

    public func userExists(_ userID: String) throws -> Bool {
        try read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM users WHERE id = ?)", arguments: [userID]) ?? false
        }
    }

    static func storeAssignment(
        _ db: Database, userID: String, experiment: String, variant: String, at: Date
    ) throws
        -> StoredAssignment
    {
        try db.execute(
            sql: """
                INSERT INTO experiment_assignments (user_id, experiment, variant, assigned_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (user_id, experiment) DO NOTHING
                """,
            arguments: [userID, experiment, variant, Timestamp.format(at)])
        let inserted = db.changesCount > 0
        guard var stored = try storedAssignment(db, userID: userID, experiment: experiment) else {
            throw GuestModeError(
                .internalFailure, code: .assignmentLost, "the assignment of \(userID) to \(experiment) was not stored")
        }
        stored.isNew = inserted
        return stored
    }

    static func storedAssignment(_ db: Database, userID: String, experiment: String) throws -> StoredAssignment? {
        guard
            let row = try Row.fetchOne(
                db, sql: "SELECT variant, assigned_at FROM experiment_assignments WHERE user_id = ? AND experiment = ?",
                arguments: [userID, experiment])
        else { return nil }
        return StoredAssignment(
            variant: try row.decode(forColumn: "variant"),
            assignedAt: try row.time("assigned_at"), isNew: false)
    }
}
