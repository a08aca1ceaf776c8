import Foundation

/// Everything the engine needs from a backend: one protocol per area, each
/// method one use case in one transaction. Backends (SQLite, PostgreSQL)
/// conform and pass the same conformance suite.
package protocol GuestStore:
    StoreAdministration, TransactionalStore,
    BackupRowStore,
    StoreTableStore
{}
