import Foundation
import GRDB

extension SQLiteStore: ReportStore {
}
