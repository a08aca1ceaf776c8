import Foundation
import GRDB

extension SQLiteStore: TransferStore {
}
