import Foundation
internal import GRDB
import GuestModeKit

extension SQLiteStore {
    /// The profile a store is bound to, read without writing a byte to the
    /// store, for commands such as `replay` that only borrow its profile.
    package static func boundProfile(readingOnly path: String) throws -> (text: String, origin: String)? {
        guard FileManager.default.fileExists(atPath: path) else {
            throw GuestModeError(
                .storeNotFound,
                "no store at '\(path)'")
        }
        try StoreFile.refuseUnknownSchema(path: path)
        do {
            let queue = try DatabaseQueue(path: path, configuration: AppDatabase.configuration(readOnly: true))
            defer { try? queue.close() }
            return try queue.read { db in
                let rows = try Row.fetchAll(
                    db, sql: "SELECT key, value FROM meta WHERE key IN ('profile_text', 'profile_origin')")
                var values: [String: String] = [:]
                for row in rows { values[try row.decode(forColumn: "key")] = try row.decode(forColumn: "value") }
                return values["profile_text"].map { ($0, values["profile_origin"] ?? "") }
            }
        } catch let error as DatabaseError {
            throw StoreFile.translate(error, path: path)
        }
    }
}
