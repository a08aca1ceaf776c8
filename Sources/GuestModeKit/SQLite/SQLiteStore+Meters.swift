import Foundation
import GRDB

extension SQLiteStore: MeterStore {
}
