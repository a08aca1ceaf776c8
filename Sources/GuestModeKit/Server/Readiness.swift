import Foundation

extension GuestMode {
    /// The store's schema as this build sees it: answering at all shows the
    /// store is reachable, and no pending migration that it is current.
    package func schemaStatus() throws -> SchemaStatus {
        try store.schemaStatus()
    }
}
