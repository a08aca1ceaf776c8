import Foundation
import GRDB

extension SQLiteStore: RecordStore {
}
