import Foundation
import GRDB

extension SQLiteStore: MigrationJournalStore {
}
