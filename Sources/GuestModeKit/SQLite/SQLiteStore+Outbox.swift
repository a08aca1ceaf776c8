import Foundation
import GRDB

extension SQLiteStore: OutboxStore {
}
