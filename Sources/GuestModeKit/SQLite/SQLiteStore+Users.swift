import Foundation
import GRDB

extension SQLiteStore: UserStore {
}
