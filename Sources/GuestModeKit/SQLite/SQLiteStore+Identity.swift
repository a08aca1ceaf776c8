import Foundation
import GRDB

extension SQLiteStore: IdentityStore {
}
