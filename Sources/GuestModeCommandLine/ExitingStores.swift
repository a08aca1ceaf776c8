import GuestModeKit
import GuestModePostgres
import GuestModeSQLite
import Synchronization

/// The stores a command opened, closed when the process exits instead of freed when the command
/// drops them.
///
/// A command line exits a moment after its command returns. Freeing a SQLite store there costs a
/// short command a tenth of its start-up for nothing: GRDB unregisters its queue from
/// `NotificationCenter`, and disposing of its dispatch queue starts a worker thread only for the
/// process to end. So `GlobalOptions.openEngine` keeps each store here, and `CommandLineMain` closes
/// their connections just before `exit(3)`, as freeing them would have (the last SQLite connection
/// folds the WAL back and removes it; a PostgreSQL session ends with its terminate message). Compilers
/// leave their memory to the exit for the same reason (clang's `-disable-free`).
///
/// ```swift
/// let store = ExitingStores.keep(try location.open())
/// // … the command runs …
/// ExitingStores.closeAll()
/// exit(0)
/// ```
package enum ExitingStores {
    /// Every store kept, and how many of them are closed. The list is never emptied: a static lives
    /// until the exit, so nothing in it is ever freed.
    private static let kept = Mutex<(stores: [any GuestStore], closed: Int)>(([], 0))

    /// Keeps `store` until `closeAll()`; returns it.
    package static func keep(_ store: any GuestStore) -> any GuestStore {
        kept.withLock { $0.stores.append(store) }
        return store
    }

    /// Closes the connections of every store kept since the last call. Closing is what freeing did,
    /// so a failure is dropped as freeing dropped it: the command's outcome is already reported.
    package static func closeAll() {
        let open = kept.withLock { state in
            defer { state.closed = state.stores.count }
            return state.stores[state.closed...]
        }
        for store in open {
            switch store {
            case let sqlite as SQLiteStore: try? sqlite.closeConnections()
            case let postgres as PostgresStore: postgres.close()
            default: break
            }
        }
    }
}
