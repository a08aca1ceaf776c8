import Foundation
import GRDB

extension SQLiteStore: BackupRowStore {
}
