import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteTransaction {
    func assignment(of userID: String, to experiment: String) throws -> StoredAssignment? {
        try SQLiteStore.storedAssignment(db, userID: userID, experiment: experiment)
    }

    func insertAssignment(of userID: String, to experiment: String, variant: String, at time: Date) throws -> Bool {
        try db.execute(
            sql: """
                INSERT INTO experiment_assignments (user_id, experiment, variant, assigned_at) VALUES (?, ?, ?, ?)
                ON CONFLICT (user_id, experiment) DO NOTHING
                """,
            arguments: [userID, experiment, variant, Timestamp.format(time)])
        return db.changesCount > 0
    }
}
