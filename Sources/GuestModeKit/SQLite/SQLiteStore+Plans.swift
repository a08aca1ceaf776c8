import Foundation
import GRDB

extension SQLiteStore: PlanStore {
}
