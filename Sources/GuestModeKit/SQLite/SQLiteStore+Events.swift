import Foundation
import GRDB

extension SQLiteStore: EventStore {
}
